// Package toolserver serves a run's tools to an external engine over MCP
// (streamable HTTP on loopback, behind a per-attempt bearer token) for the
// length of one attempt: Claude Code gets it as --mcp-config, ACP agents
// that accept HTTP MCP servers get it in session/new.
package toolserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// Name is the MCP server name the run's tools are offered under.
const Name = "agentloop"

// Gate decides whether one call may run; reason is the refusal the engine
// sees. nil runs every call (the engine asked our approval before it).
// done, when the gate returns one for a call it let through, receives that
// call's result once the tool ran: the gate's own pairing of the call's
// start and end (the engine's id for the call is not on the MCP wire).
type Gate func(ctx context.Context, c tool.Call) (ok bool, reason string, done func(ctx context.Context, res tool.Result))

// Server is one attempt's MCP server.
type Server struct {
	// URL is the MCP endpoint; Token the bearer token it wants.
	URL, Token string

	srv  *http.Server
	done chan struct{}
}

// Serve offers reg's tools; it returns nil when there is none to offer.
func Serve(reg *tool.Registry, gate Gate) (*Server, error) {
	if reg == nil || len(reg.Names()) == 0 {
		return nil, nil
	}
	s := sdk.NewServer(&sdk.Implementation{Name: Name, Version: "0"}, nil)
	n := 0
	for _, spec := range reg.Specs() {
		if addTool(s, reg, spec, gate) {
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
	t := &Server{URL: "http://" + ln.Addr().String() + "/mcp", Token: token, done: make(chan struct{})}
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
	return t, nil
}

// addTool offers one tool; a schema MCP refuses leaves the tool out.
func addTool(s *sdk.Server, reg *tool.Registry, spec llm.ToolSpec, gate Gate) (ok bool) {
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
			var done func(context.Context, tool.Result)
			if gate != nil {
				var ok bool
				var reason string
				if ok, reason, done = gate(ctx, tool.Call{Name: name, Args: args}); !ok {
					return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: reason}}}, nil
				}
			}
			res := reg.Execute(ctx, llm.ToolCall("", name, args), nil)
			if done != nil {
				done(ctx, res)
			}
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

// Close stops the server; nil is a no-op.
func (t *Server) Close() {
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
