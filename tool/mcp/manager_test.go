package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentloop/agentloop/internal/proc"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

func quiet() *Options {
	return &Options{StartTimeout: 20 * time.Second, CallTimeout: 20 * time.Second, Logger: discardLogger()}
}

func call(name, args string) llm.Content {
	return llm.ToolCall("c1", name, json.RawMessage(args))
}

func TestStartBothTransportsAndFailures(t *testing.T) {
	t.Setenv("MCP_TEST_TOKEN", "tok")
	ts := httpTestServer(t, "tok")
	sse := sseTestServer(t)
	cfg := Config{Servers: map[string]ServerConfig{
		"old":     {Type: "sse", URL: sse.URL},
		"local":   stdioServer("stdio"),
		"remote":  {Type: "http", URL: ts.URL, Headers: map[string]string{"Authorization": "Bearer tok"}},
		"noauth":  {Type: "http", URL: ts.URL},
		"crashes": stdioServer("crash"),
		"missing": {Command: filepath.Join(t.TempDir(), "no-such-server")},
		"invalid": {Type: "stdio"},
	}}
	m, err := Start(context.Background(), cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()

	status := map[string]ServerStatus{}
	for _, s := range m.Status() {
		status[s.Name] = s
	}
	wantTools := []string{"mcp__local__add", "mcp__local__echo", "mcp__local__exit", "mcp__local__fail", "mcp__local__hang", "mcp__local__image"}
	for _, name := range []string{"local", "remote", "old"} {
		s := status[name]
		if s.State != StateReady || s.Err != nil {
			t.Errorf("%s: %s, %v; want ready", name, s.State, s.Err)
		}
	}
	if got := status["local"].Tools; !slices.Equal(got, wantTools) {
		t.Errorf("local tools %v, want %v", got, wantTools)
	}
	for name, want := range map[string]string{
		"crashes": "MCP_TEST_TOKEN is not set", // its stderr is in the error
		"missing": "no-such-server",
		"invalid": `needs a "command"`,
		"noauth":  "start",
	} {
		s := status[name]
		if s.State != StateFailed || s.Err == nil || !strings.Contains(s.Err.Error(), want) {
			t.Errorf("%s: %s, %v; want failed with %q", name, s.State, s.Err, want)
		}
		if len(s.Tools) != 0 {
			t.Errorf("%s: failed server has tools %v", name, s.Tools)
		}
	}

	// The tools go through the registry like any other: their schemas
	// compile and arguments are validated and coerced.
	reg, err := tool.NewRegistry(m.Tools()...)
	if err != nil {
		t.Fatal(err)
	}
	if reg.Len() != 16 {
		t.Errorf("%d tools, want 6 local + 5 remote + 5 old: %v", reg.Len(), reg.Names())
	}
	ctx := context.Background()
	for _, srv := range []string{"local", "remote", "old"} {
		p := "mcp__" + srv + "__"
		tests := []struct {
			name, args string
			want       string
			isError    bool
		}{
			{"echo", `{"text":"hi"}`, "echo: hi", false},
			{"add", `{"a":"2","b":3}`, `{"sum":5}`, false},
			{"fail", `{}`, "the disk is on fire", true},
		}
		for _, tt := range tests {
			res := reg.Execute(ctx, call(p+tt.name, tt.args), nil)
			if res.Text() != tt.want || res.IsError != tt.isError {
				t.Errorf("%s%s: %q (isError %v), want %q (isError %v)", p, tt.name, res.Text(), res.IsError, tt.want, tt.isError)
			}
		}
		res := reg.Execute(ctx, call(p+"image", `{}`), nil)
		if len(res.Content) != 1 || res.Content[0].Type != llm.ContentImage || res.Content[0].MimeType != "image/png" ||
			res.Content[0].Data != base64.StdEncoding.EncodeToString(onePixelPNG) {
			t.Errorf("%simage: %+v, want the PNG as an image block", p, res.Content)
		}
	}
}

func TestAnnotationsAreTrustedOnlyWhenAsked(t *testing.T) {
	ts := httpTestServer(t, "")
	cfg := Config{Servers: map[string]ServerConfig{"r": {URL: ts.URL}}}
	for _, trust := range []bool{false, true} {
		opts := quiet()
		opts.TrustAnnotations = trust
		m, err := Start(context.Background(), cfg, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range m.Tools() {
			tt := tl.(*Tool)
			want := trust && tt.RemoteName() == "add"
			if tt.ReadOnly() != want || tt.ConcurrencySafe(tool.Call{}) != want {
				t.Errorf("trust %v, %s: read-only %v, want %v", trust, tt.Name(), tt.ReadOnly(), want)
			}
		}
		m.Close()
	}
}

func TestCallTimeout(t *testing.T) {
	ts := httpTestServer(t, "")
	cfg := Config{Servers: map[string]ServerConfig{"local": stdioServer("stdio"), "remote": {URL: ts.URL}}}
	opts := quiet()
	opts.CallTimeout = 300 * time.Millisecond
	m, err := Start(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	reg, _ := tool.NewRegistry(m.Tools()...)
	for _, srv := range []string{"local", "remote"} {
		name := "mcp__" + srv + "__hang"
		start := time.Now()
		res := reg.Execute(context.Background(), call(name, `{}`), nil)
		if !res.IsError || !strings.Contains(res.Text(), "did not answer within 300ms") {
			t.Errorf("%s: %q, want a timeout error", name, res.Text())
		}
		if el := time.Since(start); el > 10*time.Second {
			t.Errorf("%s: took %v", name, el)
		}
		// The connection is still usable afterwards (asked without the
		// short call timeout, which a loaded machine might miss).
		for _, sv := range m.servers {
			if sv.name != srv {
				continue
			}
			res, err := sv.session.CallTool(context.Background(), &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "after"}})
			if err != nil || convertResult(res).Text() != "echo: after" {
				t.Errorf("%s after a timeout: %v, %v", srv, res, err)
			}
		}
	}
	// A cancelled run aborts the call rather than waiting for the timeout.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tl, _ := reg.Get("mcp__local__hang")
	if _, err := tl.Execute(ctx, tool.Call{Name: "mcp__local__hang", Args: json.RawMessage(`{}`)}, func(tool.Partial) {}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v, want context.Canceled", err)
	}
}

func TestServerThatDiesIsDropped(t *testing.T) {
	m, err := Start(context.Background(), Config{Servers: map[string]ServerConfig{"local": stdioServer("stdio")}}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	reg, _ := tool.NewRegistry(m.Tools()...)
	res := reg.Execute(context.Background(), call("mcp__local__exit", `{}`), nil)
	if !res.IsError {
		t.Errorf("exit call: %q, want an error result", res.Text())
	}
	<-m.servers[0].watched // the watcher has seen the connection end
	st := m.Status()[0]
	if st.State != StateExited || st.Err == nil {
		t.Errorf("status %s, %v; want exited", st.State, st.Err)
	}
	if n := len(m.Tools()); n != 0 {
		t.Errorf("%d tools still offered after the server died", n)
	}
	res = reg.Execute(context.Background(), call("mcp__local__echo", `{"text":"x"}`), nil)
	if !res.IsError || !strings.Contains(res.Text(), `MCP server "local" is not running`) {
		t.Errorf("call after death: %q", res.Text())
	}
}

func TestCloseStopsServersAndTheirChildren(t *testing.T) {
	// The server is started through a shell that also leaves a child in
	// the background: Close must end both.
	script := "sleep 300.9173 & exec " + os.Args[0] + " -test.run=^$"
	cfg := Config{Servers: map[string]ServerConfig{"sh": {Command: "bash", Args: []string{"-c", script}, Env: serverEnv("stdio")}}}
	m, err := Start(context.Background(), cfg, quiet())
	if err != nil {
		t.Fatal(err)
	}
	if st := m.Status()[0]; st.State != StateReady {
		t.Fatalf("status %s, %v", st.State, st.Err)
	}
	tag := m.servers[0].proc.Tag()
	if tagged, _ := proc.Alive(tag); len(tagged) != 2 {
		t.Fatalf("%d processes before Close, want the server and its sleeper", len(tagged))
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if st := m.Status()[0]; st.State != StateClosed {
		t.Errorf("status after Close: %s", st.State)
	}
	tagged, zombies := proc.Alive(tag)
	if len(tagged) != 0 || len(zombies) != 0 {
		t.Errorf("after Close: processes %v, zombie children %v", tagged, zombies)
	}
	m.Close() // idempotent
}

func TestStartCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Start(ctx, Config{Servers: map[string]ServerConfig{"local": stdioServer("stdio")}}, quiet()); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
}

func TestToolSchema(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"nil", nil, `{"type":"object"}`},
		{"draft-07 marker dropped", map[string]any{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
			"properties": map[string]any{"x": map[string]any{"type": "string"}}}, `{"properties":{"x":{"type":"string"}},"type":"object"}`},
		{"type added", map[string]any{"properties": map[string]any{}}, `{"properties":{},"type":"object"}`},
		{"uncompilable falls back", map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"$ref": "#/nowhere"}}}, `{"type":"object"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(toolSchema(tt.in)); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

// TestEverythingServer checks interoperation with the reference server
// from npm, when Node and the npm registry are reachable.
func TestEverythingServer(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: installs a package from npm")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed: skipping the @modelcontextprotocol/server-everything interop test")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: skipping the @modelcontextprotocol/server-everything interop test")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	install := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "@modelcontextprotocol/server-everything")
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		t.Skipf("cannot install @modelcontextprotocol/server-everything from npm (offline?): %v\n%s", err, out)
	}
	bin := filepath.Join(dir, "node_modules", ".bin", "mcp-server-everything")
	m, err := Start(context.Background(), Config{Servers: map[string]ServerConfig{"everything": {Command: bin, Args: []string{"stdio"}}}}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	st := m.Status()[0]
	if st.State != StateReady {
		t.Fatalf("server-everything: %s, %v", st.State, st.Err)
	}
	if !slices.Contains(st.Tools, "mcp__everything__echo") {
		t.Fatalf("tools %v lack mcp__everything__echo", st.Tools)
	}
	reg, err := tool.NewRegistry(m.Tools()...)
	if err != nil {
		t.Fatal(err)
	}
	res := reg.Execute(context.Background(), call("mcp__everything__echo", `{"message":"hello"}`), nil)
	if res.IsError || !strings.Contains(res.Text(), "hello") {
		t.Errorf("echo: %q (isError %v)", res.Text(), res.IsError)
	}
	if slices.Contains(st.Tools, "mcp__everything__get-sum") {
		res := reg.Execute(context.Background(), call("mcp__everything__get-sum", `{"a":2,"b":"3"}`), nil)
		if res.IsError || !strings.Contains(res.Text(), "5") {
			t.Errorf("get-sum: %q (isError %v)", res.Text(), res.IsError)
		}
	}
}

func TestCloseCancelsCallsInFlight(t *testing.T) {
	ts := httpTestServer(t, "")
	for _, cfg := range []ServerConfig{stdioServer("stdio"), {URL: ts.URL}} {
		t.Run(cfg.Transport(), func(t *testing.T) {
			m, err := Start(context.Background(), Config{Servers: map[string]ServerConfig{"s": cfg}}, quiet())
			if err != nil {
				t.Fatal(err)
			}
			reg, _ := tool.NewRegistry(m.Tools()...)
			hang, _ := reg.Get("mcp__s__hang")
			srv := m.servers[0]
			done := make(chan tool.Result, 1)
			go func() {
				res, _ := hang.Execute(context.Background(), tool.Call{Name: "mcp__s__hang", Args: json.RawMessage(`{}`)}, func(tool.Partial) {})
				done <- res
			}()
			// Wait until the call is in flight.
			for {
				srv.mu.Lock()
				n := len(srv.calls)
				srv.mu.Unlock()
				if n == 1 {
					break
				}
				runtime.Gosched()
			}
			start := time.Now()
			m.Close()
			if el := time.Since(start); el > 10*time.Second {
				t.Errorf("Close took %v: it waited for the hanging call", el)
			}
			res := <-done
			if !res.IsError || !strings.Contains(res.Text(), "was stopped while mcp__s__hang was running") {
				t.Errorf("call cut by Close: %q", res.Text())
			}
			if res := reg.Execute(context.Background(), call("mcp__s__echo", `{"text":"x"}`), nil); !res.IsError {
				t.Errorf("call after Close: %q, want an error result", res.Text())
			}
		})
	}
}

func TestStartTimeout(t *testing.T) {
	opts := quiet()
	opts.StartTimeout = 300 * time.Millisecond
	start := time.Now()
	m, err := Start(context.Background(), Config{Servers: map[string]ServerConfig{"mute": stdioServer("mute"), "ok": stdioServer("stdio")}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if el := time.Since(start); el > 15*time.Second {
		t.Errorf("Start took %v with a 300ms start timeout", el)
	}
	st := m.Status()
	if st[0].Name != "mute" || st[0].State != StateFailed || st[0].Err == nil || !strings.Contains(st[0].Err.Error(), "no answer within 300ms") {
		t.Errorf("mute server: %s, %v; want failed for want of an answer", st[0].State, st[0].Err)
	}
	if st[1].State != StateReady && !strings.Contains(fmt.Sprint(st[1].Err), "no answer") {
		t.Errorf("the other server: %s, %v", st[1].State, st[1].Err)
	}
	if tagged, zombies := proc.Alive(m.servers[0].proc.Tag()); len(tagged)+len(zombies) > 0 {
		t.Errorf("the mute server was left running: %v %v", tagged, zombies)
	}
}
