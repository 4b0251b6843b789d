package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// testServerEnv makes the test binary act as an MCP server instead of
// running tests: "stdio" serves on stdin/stdout, "mute" never answers,
// "crash" writes to stderr and exits at once.
const testServerEnv = "AGENTLOOP_MCP_TEST_SERVER"

func TestMain(m *testing.M) {
	switch os.Getenv(testServerEnv) {
	case "":
		goleak.VerifyTestMain(m)
	case "stdio":
		if err := newTestServer(true, nil).Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "test server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	case "mute":
		// Reads requests and never answers, not even initialize.
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	case "crash":
		fmt.Fprintln(os.Stderr, "fatal: MCP_TEST_TOKEN is not set")
		os.Exit(2)
	}
}

// onePixelPNG is a 1x1 PNG.
var onePixelPNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")

type echoIn struct {
	Text string `json:"text" jsonschema:"what to echo"`
}

type addIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

type addOut struct {
	Sum int `json:"sum"`
}

// newTestServer is the server the tests talk to, in process over HTTP or
// as this binary over stdio. canExit adds a tool that ends the process.
// Closing release ends calls of the hang tool that the server never heard
// were cancelled (a client that closes at once may not get to say so), so
// an in-process server can shut down.
func newTestServer(canExit bool, release <-chan struct{}) *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echo the text back."},
		func(ctx context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo: " + in.Text}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "add", Description: "Add two integers.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *sdk.CallToolRequest, in addIn) (*sdk.CallToolResult, addOut, error) {
			return nil, addOut{Sum: in.A + in.B}, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "hang", Description: "Never answer."},
		func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			select {
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			case <-release:
				return nil, nil, errors.New("released")
			}
		})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Fail."},
		func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			return nil, nil, errors.New("the disk is on fire")
		})
	sdk.AddTool(s, &sdk.Tool{Name: "image", Description: "Return an image."},
		func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.ImageContent{Data: onePixelPNG, MIMEType: "image/png"}}}, nil, nil
		})
	if canExit {
		sdk.AddTool(s, &sdk.Tool{Name: "exit", Description: "End the server process."},
			func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
				os.Exit(3)
				return nil, nil, nil
			})
	}
	return s
}

// httpTestServer serves newTestServer over streamable HTTP. When token is
// set, requests without "Authorization: Bearer <token>" are refused.
func httpTestServer(t *testing.T, token string) *httptest.Server {
	t.Helper()
	release := make(chan struct{})
	srv := newTestServer(false, release)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	t.Cleanup(func() { close(release) }) // runs before ts.Close
	return ts
}

// stdioServer is the configuration that runs this test binary as a stdio
// server in the given mode. A -race binary otherwise sleeps a second at
// exit.
func stdioServer(mode string) ServerConfig {
	return ServerConfig{Command: os.Args[0], Args: []string{"-test.run=^$"}, Env: serverEnv(mode)}
}

func serverEnv(mode string) map[string]string {
	return map[string]string{testServerEnv: mode, "GORACE": "atexit_sleep_ms=0"}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// sseTestServer serves newTestServer over the older SSE transport.
func sseTestServer(t *testing.T) *httptest.Server {
	t.Helper()
	release := make(chan struct{})
	srv := newTestServer(false, release)
	ts := httptest.NewServer(sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	t.Cleanup(func() { close(release) })
	return ts
}
