package claudecode

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// toolsServer is the MCP server name the run's tools have in Claude Code:
// they appear there as mcp__agentloop__<tool>.
const toolsServer = "agentloop"

// toolPrefix is what Claude Code puts before a tool of toolsServer.
const toolPrefix = "mcp__" + toolsServer + "__"

// ownTool returns the run's name of a Claude Code tool name, and whether
// it is one of the run's tools.
func ownTool(name string) (string, bool) { return strings.CutPrefix(name, toolPrefix) }

// tools serves a run's tools to Claude Code over MCP (streamable HTTP on
// loopback, behind a per-attempt bearer token), for the length of one
// attempt. The calls were approved by the permission request that came
// before them (can_use_tool); the server only runs them.
type tools struct {
	srv    *http.Server
	done   chan struct{}
	config string // the --mcp-config JSON
}

func serveTools(reg *tool.Registry) (*tools, error) {
	if reg == nil || len(reg.Names()) == 0 {
		return nil, nil
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "agentloop", Version: "0"}, nil)
	n := 0
	for _, spec := range reg.Specs() {
		if addTool(s, reg, spec) {
			n++
		}
	}
	if n == 0 {
		return nil, nil
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	token := hex.EncodeToString(b[:])
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	t := &tools{done: make(chan struct{})}
	t.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})}
	go func() {
		defer close(t.done)
		_ = t.srv.Serve(ln)
	}()
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{toolsServer: map[string]any{
		"type": "http", "url": "http://" + ln.Addr().String() + "/mcp", "headers": map[string]string{"Authorization": "Bearer " + token}}}})
	t.config = string(cfg)
	return t, nil
}

// addTool offers one tool; a schema MCP refuses leaves the tool out.
func addTool(s *sdk.Server, reg *tool.Registry, spec llm.ToolSpec) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	schema := spec.Parameters
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	name := spec.Name
	s.AddTool(&sdk.Tool{Name: name, Description: spec.Description, InputSchema: schema},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			args := req.Params.Arguments
			if len(args) == 0 {
				args = json.RawMessage(`{}`)
			}
			res := reg.Execute(ctx, llm.ToolCall("", name, args), nil)
			out := &sdk.CallToolResult{IsError: res.IsError}
			for _, c := range res.Content {
				if c.Type == llm.ContentText {
					out.Content = append(out.Content, &sdk.TextContent{Text: c.Text})
				}
			}
			if out.Content == nil {
				out.Content = []sdk.Content{}
			}
			return out, nil
		})
	return true
}

// close stops the server.
func (t *tools) close() {
	if t == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := t.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		_ = t.srv.Close()
	}
	<-t.done
}

func (t *tools) args() []string {
	if t == nil {
		return nil
	}
	return []string{"--mcp-config", t.config}
}
