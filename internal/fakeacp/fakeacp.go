// Package fakeacp is a scripted ACP agent (the agent side of
// github.com/coder/acp-go-sdk) for the tests of harness/acp: it keeps its
// sessions as files in a directory (so a session outlives the process, as
// a real agent's does), supports session/resume, streams a scripted turn
// (text, tool calls that ask for permission, a tool that runs until it is
// cancelled, a crash), and honours session/cancel.
package fakeacp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/mcp"
)

// Step is one thing a scripted turn does.
type Step struct {
	// Text is streamed as an agent message chunk.
	Text string `json:"text,omitempty"`
	// Tool is a tool call.
	Tool *Tool `json:"tool,omitempty"`
	// Crash ends the process with exit status 3.
	Crash bool `json:"crash,omitempty"`
	// PauseMS keeps the agent silent this many milliseconds (a stall),
	// or until the turn is cancelled.
	PauseMS int `json:"pauseMs,omitempty"`
}

// Tool is a scripted tool call.
type Tool struct {
	ID    string         `json:"id"`
	Title string         `json:"title"`
	Kind  acp.ToolKind   `json:"kind"`
	Input map[string]any `json:"input"`
	// Permission asks the client before running.
	Permission bool `json:"permission,omitempty"`
	// Touch, when set, is a file the tool creates in the session's cwd
	// (its side effect).
	Touch string `json:"touch,omitempty"`
	// Block keeps the tool running until the turn is cancelled.
	Block bool `json:"block,omitempty"`
	// MCP, when set, is the tool of the client's MCP servers (given in
	// session/new or session/resume) this call runs, with Input as its
	// arguments; its result is the call's result.
	MCP string `json:"mcp,omitempty"`
}

// Config is the agent's script: Turns[i] is the i-th prompt of a session
// (the last one repeats).
type Config struct {
	Dir   string   `json:"dir"`
	Turns [][]Step `json:"turns"`
	// NoHTTPMCP leaves mcpCapabilities.http out of initialize: the agent
	// takes stdio MCP servers only, as every ACP agent must.
	NoHTTPMCP bool `json:"noHttpMcp,omitempty"`
}

// Serve runs the agent on in/out until the client goes away.
func Serve(cfg Config, in io.Reader, out io.Writer) {
	a := &agent{cfg: cfg, cancels: map[acp.SessionId]context.CancelFunc{}, mcp: map[acp.SessionId][]acp.McpServer{},
		stdio: map[acp.SessionId]*mcp.Manager{}}
	conn := acp.NewAgentSideConnection(a, out, in)
	a.conn = conn
	<-conn.Done()
}

type agent struct {
	cfg  Config
	conn *acp.AgentSideConnection

	mu      sync.Mutex
	cancels map[acp.SessionId]context.CancelFunc
	mcp     map[acp.SessionId][]acp.McpServer // the client's servers, per live session
	stdio   map[acp.SessionId]*mcp.Manager    // the stdio ones started, per session
}

type sessionFile struct {
	Cwd   string `json:"cwd"`
	Turns int    `json:"turns"`
}

func (a *agent) path(id acp.SessionId) string { return filepath.Join(a.cfg.Dir, string(id)+".json") }

func (a *agent) load(id acp.SessionId) (*sessionFile, error) {
	b, err := os.ReadFile(a.path(id))
	if err != nil {
		return nil, err
	}
	var s sessionFile
	return &s, json.Unmarshal(b, &s)
}

func (a *agent) save(id acp.SessionId, s *sessionFile) error {
	b, _ := json.Marshal(s)
	return os.WriteFile(a.path(id), b, 0o600)
}

func (a *agent) Initialize(context.Context, acp.InitializeRequest) (acp.InitializeResponse, error) {
	cfg := a.cfg
	return acp.InitializeResponse{ProtocolVersion: acp.ProtocolVersionNumber, AuthMethods: []acp.AuthMethod{},
		AgentInfo: &acp.Implementation{Name: "fakeacp", Version: "0.1.0"},
		AgentCapabilities: acp.AgentCapabilities{SessionCapabilities: acp.SessionCapabilities{Resume: &acp.SessionResumeCapabilities{}},
			McpCapabilities: acp.McpCapabilities{Http: !cfg.NoHTTPMCP}}}, nil
}

func (a *agent) NewSession(_ context.Context, p acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	entries, _ := os.ReadDir(a.cfg.Dir)
	id := acp.SessionId("fake-" + strconv.Itoa(len(entries)+1))
	if err := a.save(id, &sessionFile{Cwd: p.Cwd}); err != nil {
		return acp.NewSessionResponse{}, err
	}
	a.setMCP(id, p.McpServers)
	return acp.NewSessionResponse{SessionId: id}, nil
}

func (a *agent) ResumeSession(_ context.Context, p acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	if _, err := a.load(p.SessionId); err != nil {
		return acp.ResumeSessionResponse{}, &acp.RequestError{Code: -32002, Message: "Resource not found", Data: map[string]any{"sessionId": p.SessionId}}
	}
	a.setMCP(p.SessionId, p.McpServers)
	return acp.ResumeSessionResponse{}, nil
}

func (a *agent) setMCP(id acp.SessionId, servers []acp.McpServer) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.mcp[id] = servers
}

// callMCP runs the tool name of the session's MCP servers with our own
// MCP client. HTTP servers are connected for the call; stdio servers are
// started on the session's first call and kept, as a real agent keeps
// them, until the process ends (never closed: what ends them is their
// stdin closing with us).
func (a *agent) callMCP(ctx context.Context, id acp.SessionId, name string, input map[string]any) (string, bool, error) {
	a.mu.Lock()
	servers := a.mcp[id]
	kept := a.stdio[id]
	a.mu.Unlock()
	cfg := mcp.Config{Servers: map[string]mcp.ServerConfig{}}
	stdio := false
	for _, s := range servers {
		switch {
		case s.Http != nil:
			h := s.Http
			headers := map[string]string{}
			for _, kv := range h.Headers {
				headers[kv.Name] = kv.Value
			}
			cfg.Servers[h.Name] = mcp.ServerConfig{Type: "http", URL: h.Url, Headers: headers}
		case s.Stdio != nil:
			env := map[string]string{}
			for _, kv := range s.Stdio.Env {
				env[kv.Name] = kv.Value
			}
			cfg.Servers[s.Stdio.Name] = mcp.ServerConfig{Type: "stdio", Command: s.Stdio.Command, Args: s.Stdio.Args, Env: env}
			stdio = true
		}
	}
	m := kept
	if m == nil {
		var err error
		if m, err = mcp.Start(ctx, cfg, &mcp.Options{Logger: slog.New(slog.DiscardHandler)}); err != nil {
			return "", false, err
		}
		if stdio {
			a.mu.Lock()
			a.stdio[id] = m
			a.mu.Unlock()
		} else {
			defer m.Close()
		}
	}
	for _, t := range m.Tools() {
		if rt, ok := t.(interface{ RemoteName() string }); ok && rt.RemoteName() == name {
			args, _ := json.Marshal(input)
			res, err := t.Execute(ctx, tool.Call{ID: "mcp-1", Name: t.Name(), Args: args}, func(tool.Partial) {})
			if err != nil {
				return err.Error(), true, nil
			}
			var b strings.Builder
			for _, c := range res.Content {
				b.WriteString(c.Text)
			}
			return b.String(), res.IsError, nil
		}
	}
	return "", false, fmt.Errorf("no MCP server of the client offers %q", name)
}

func (a *agent) Cancel(_ context.Context, p acp.CancelNotification) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if c := a.cancels[p.SessionId]; c != nil {
		c()
	}
	return nil
}

func (a *agent) update(ctx context.Context, id acp.SessionId, u acp.SessionUpdate) error {
	return a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: id, Update: u})
}

func (a *agent) Prompt(_ context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	s, err := a.load(p.SessionId)
	if err != nil {
		return acp.PromptResponse{}, &acp.RequestError{Code: -32002, Message: "Resource not found"}
	}
	ctx, cancel := context.WithCancel(context.Background())
	a.mu.Lock()
	a.cancels[p.SessionId] = cancel
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.cancels, p.SessionId)
		a.mu.Unlock()
		cancel()
	}()
	turn := min(s.Turns, len(a.cfg.Turns)-1)
	s.Turns++
	if err := a.save(p.SessionId, s); err != nil {
		return acp.PromptResponse{}, err
	}
	bg := context.Background()
	for _, st := range a.cfg.Turns[turn] {
		if ctx.Err() != nil {
			return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
		}
		switch {
		case st.Crash:
			os.Exit(3)
		case st.PauseMS > 0:
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(st.PauseMS) * time.Millisecond):
			}
		case st.Text != "":
			if err := a.update(bg, p.SessionId, acp.UpdateAgentMessageText(st.Text)); err != nil {
				return acp.PromptResponse{}, err
			}
		case st.Tool != nil:
			if stop, err := a.tool(ctx, p.SessionId, s, st.Tool); err != nil || stop {
				return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, err
			}
		}
	}
	return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// tool runs one scripted call; stop says the turn was cancelled.
func (a *agent) tool(ctx context.Context, id acp.SessionId, s *sessionFile, t *Tool) (stop bool, err error) {
	bg := context.Background()
	fail := func(text string) error {
		return a.update(bg, id, acp.UpdateToolCall(acp.ToolCallId(t.ID), acp.WithUpdateStatus(acp.ToolCallStatusFailed),
			acp.WithUpdateContent([]acp.ToolCallContent{acp.ToolContent(acp.TextBlock(text))})))
	}
	if err := a.update(bg, id, acp.StartToolCall(acp.ToolCallId(t.ID), t.Title, acp.WithStartKind(t.Kind),
		acp.WithStartStatus(acp.ToolCallStatusPending), acp.WithStartRawInput(t.Input))); err != nil {
		return false, err
	}
	if t.Permission {
		kind := t.Kind
		resp, err := a.conn.RequestPermission(ctx, acp.RequestPermissionRequest{SessionId: id,
			ToolCall: acp.ToolCallUpdate{ToolCallId: acp.ToolCallId(t.ID), Title: &t.Title, Kind: &kind, RawInput: t.Input},
			Options: []acp.PermissionOption{
				{OptionId: "allow", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce},
				{OptionId: "reject", Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce},
			}})
		switch {
		case err != nil || resp.Outcome.Cancelled != nil:
			return true, fail("cancelled")
		case resp.Outcome.Selected == nil || resp.Outcome.Selected.OptionId != "allow":
			return false, fail("the user refused this call")
		}
	}
	if err := a.update(bg, id, acp.UpdateToolCall(acp.ToolCallId(t.ID), acp.WithUpdateStatus(acp.ToolCallStatusInProgress))); err != nil {
		return false, err
	}
	if t.MCP != "" {
		text, failed, err := a.callMCP(ctx, id, t.MCP, t.Input)
		switch {
		case err != nil:
			return false, fail(err.Error())
		case failed:
			return false, fail(text)
		}
		return false, a.update(bg, id, acp.UpdateToolCall(acp.ToolCallId(t.ID), acp.WithUpdateStatus(acp.ToolCallStatusCompleted),
			acp.WithUpdateContent([]acp.ToolCallContent{acp.ToolContent(acp.TextBlock(text))})))
	}
	if t.Touch != "" {
		if err := os.WriteFile(filepath.Join(s.Cwd, t.Touch), []byte("touched\n"), 0o600); err != nil {
			return false, fail(err.Error())
		}
	}
	if t.Block {
		<-ctx.Done()
		return true, fail("cancelled while running")
	}
	return false, a.update(bg, id, acp.UpdateToolCall(acp.ToolCallId(t.ID), acp.WithUpdateStatus(acp.ToolCallStatusCompleted),
		acp.WithUpdateContent([]acp.ToolCallContent{acp.ToolContent(acp.TextBlock(fmt.Sprintf("%s done", t.Title)))})))
}

func (a *agent) Authenticate(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, nil
}

func (a *agent) Logout(context.Context, acp.LogoutRequest) (acp.LogoutResponse, error) {
	return acp.LogoutResponse{}, nil
}

var errUnsupported = errors.New("fakeacp: not supported")

func (a *agent) CloseSession(context.Context, acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	return acp.CloseSessionResponse{}, errUnsupported
}

func (a *agent) ListSessions(context.Context, acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return acp.ListSessionsResponse{}, errUnsupported
}

func (a *agent) SetSessionConfigOption(context.Context, acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	return acp.SetSessionConfigOptionResponse{}, errUnsupported
}

func (a *agent) SetSessionMode(context.Context, acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	return acp.SetSessionModeResponse{}, errUnsupported
}
