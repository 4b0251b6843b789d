package acp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentloop/agentloop/harness/internal/toolserver"
)

// The environment of the bridge process (Config.Bridge): where the
// attempt's tool server is and the bearer token it wants. They travel in
// the stdio server entry's env, never its argv, which any user of the
// machine can read in ps.
const (
	EnvBridgeURL   = "AGENTLOOP_MCP_BRIDGE_URL"
	EnvBridgeToken = "AGENTLOOP_MCP_BRIDGE_TOKEN"
)

// ServeBridge is the body of the bridge process: an MCP server on in/out
// (the agent's stdio) that offers the tools of the attempt's loopback
// tool server at url and forwards each call there, where the gate (our
// approval and hooks) judges and runs it. It returns when in ends (the
// agent closed its side or went away) or ctx is done. A program that
// embeds harness/acp and sets Config.Bridge to itself calls it from that
// command with the two variables above.
func ServeBridge(ctx context.Context, url, token string, in io.ReadCloser, out io.WriteCloser) error {
	if url == "" || token == "" {
		return fmt.Errorf("the MCP bridge needs %s and %s (it is started by agentloop for an ACP agent)", EnvBridgeURL, EnvBridgeToken)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: toolserver.Name + "-bridge", Version: "0"}, nil)
	// No standalone SSE stream: the tool list does not change within an
	// attempt, and an open stream would hold up the tool server's shutdown.
	cs, err := client.Connect(ctx, &mcpsdk.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: bearer{token: token, next: http.DefaultTransport}}}, nil)
	if err != nil {
		return fmt.Errorf("connect to the run's tools at %s: %w", url, err)
	}
	defer cs.Close()
	srv := mcpsdk.NewServer(&mcpsdk.Implementation{Name: toolserver.Name, Version: "0"}, nil)
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("list the run's tools: %w", err)
		}
		name := t.Name
		srv.AddTool(&mcpsdk.Tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema, Annotations: t.Annotations},
			func(ctx context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
				res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: name, Arguments: req.Params.Arguments})
				if err != nil {
					return &mcpsdk.CallToolResult{IsError: true, Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "agentloop: " + err.Error()}}}, nil
				}
				return res, nil
			})
	}
	err = srv.Run(ctx, &mcpsdk.IOTransport{Reader: in, Writer: out})
	if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// bearer adds the tool server's token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}
