package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentloop/agentloop/compact"
	"github.com/agentloop/agentloop/hook"
	"github.com/agentloop/agentloop/internal/mcptest"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/openai"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/mcp"
)

// chatStep is one scripted Chat Completions answer: a tool call, or text
// when name is "".
type chatStep struct{ id, name, args, text string }

// chatServer is a Chat Completions endpoint that answers script(n) to its
// n-th request (from 1) and keeps every request body.
type chatServer struct {
	mu     sync.Mutex
	bodies [][]byte
	script func(n int) chatStep
}

func (s *chatServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.bodies = append(s.bodies, body)
	n := len(s.bodies)
	s.mu.Unlock()
	st := s.script(n)
	delta := map[string]any{"role": "assistant", "content": st.text}
	finish := "stop"
	if st.name != "" {
		delta = map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"index": 0, "id": st.id, "type": "function",
			"function": map[string]any{"name": st.name, "arguments": st.args}}}}
		finish = "tool_calls"
	}
	first, _ := json.Marshal(map[string]any{"id": "c", "object": "chat.completion.chunk", "choices": []any{map[string]any{"index": 0, "delta": delta}}})
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "data: %s\n\n", first)
	fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":%q}]}\n\n", finish)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func (s *chatServer) body(i int) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bodies[i]
}

// wireTools reads the tool definitions a Chat Completions request carried.
func wireTools(t testing.TB, body []byte) []llm.ToolSpec {
	t.Helper()
	var req struct {
		Tools []struct {
			Function struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("request body: %v", err)
	}
	var out []llm.ToolSpec
	for _, tl := range req.Tools {
		out = append(out, llm.ToolSpec{Name: tl.Function.Name, Description: tl.Function.Description, Parameters: tl.Function.Parameters})
	}
	return out
}

func names(specs []llm.ToolSpec) []string {
	var out []string
	for _, s := range specs {
		out = append(out, s.Name)
	}
	return out
}

// genServer is the MCP configuration of the generated-tools server, this
// test binary started as a real subprocess (TestMain serves it).
func genServer(n int) *mcp.Source {
	return &mcp.Source{Config: mcp.Config{Servers: map[string]mcp.ServerConfig{
		"gen": {Command: os.Args[0], Env: map[string]string{mcptest.Env: fmt.Sprint(n)}},
	}}}
}

// builtinTools stand for the built-in tools: own tools stay direct.
func builtinTools(t *testing.T) *tool.Registry {
	t.Helper()
	reg, err := tool.NewRegistry(
		&tool.Func{ToolName: "read", ToolDescription: "Read a file of the workspace.", Concurrent: true,
			Run: func(context.Context, tool.Call, func(tool.Partial)) (tool.Result, error) {
				return tool.TextResult("text"), nil
			}},
		&tool.Func{ToolName: "bash", ToolDescription: "Run a shell command.",
			Run: func(context.Context, tool.Call, func(tool.Partial)) (tool.Result, error) {
				return tool.TextResult("ok"), nil
			}})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// Issue 28: 300 tools from an MCP server (a real subprocess) on a
// 32K-token model. The first request carries the built-in tools and
// tool_search only, under 3,000 tokens of definitions (the project's
// estimate, compact.ToolsTokens, on the body the wire sent); the scripted
// model searches, finds and calls a tool, which is asked about (ask mode),
// hooked by real shell scripts and paired like a direct call; the server
// removes the tool mid-run (list_changed) and a call of it gets a clear
// error; a resumed session offers again what it had found.
func TestToolSearchMCPCatalog(t *testing.T) {
	const invoice = "mcp__gen__create_invoice"
	srv := &chatServer{script: func(n int) chatStep {
		switch n {
		case 1:
			return chatStep{id: "call_1", name: tool.SearchToolName, args: `{"query":"create invoice"}`}
		case 2:
			return chatStep{id: "call_2", name: invoice, args: `{"project":"acme","title":"March"}`}
		case 3:
			return chatStep{id: "call_3", name: "mcp__gen__remove_tool", args: `{"name":"create_invoice"}`}
		case 4:
			return chatStep{id: "call_4", name: invoice, args: `{"project":"acme","title":"April"}`}
		}
		return chatStep{text: "done"}
	}}
	ts := httptest.NewServer(srv)
	defer ts.Close()

	home, ws := t.TempDir(), t.TempDir()
	hookLog := filepath.Join(t.TempDir(), "hooks.log")
	entry := func(event string) []any {
		return []any{map[string]any{"matcher": "mcp__gen__.*", "hooks": []any{map[string]any{"type": "command",
			"command": `{ printf '` + event + ` '; cat; echo; } >> ` + hookLog}}}}
	}
	settings, _ := json.Marshal(map[string]any{"hooks": map[string]any{"PreToolUse": entry("pre"), "PostToolUse": entry("post")}})
	if err := os.MkdirAll(filepath.Join(ws, ".agentloop"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".agentloop", "settings.json"), settings, 0o644); err != nil {
		t.Fatal(err)
	}

	info := llm.ModelInfo{Provider: "openai", ID: "small", API: llm.APIOpenAICompletions, ContextWindow: 32_000, MaxTokens: 4096}
	model := openai.New(openai.Config{Info: info, APIKey: "sk-test", BaseURL: ts.URL + "/v1"})
	store := session.NewJSONLStore(filepath.Join(home, "sessions"))
	rn, err := New(Config{Store: store, ToolSources: []tool.Source{genServer(300)},
		Hooks: &hook.LoadOptions{Home: home, Workspace: ws, Trust: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer rn.Close()

	var asked []string
	ask, _ := tool.ApprovalPolicyFor(tool.ApprovalModeAsk)
	approval := &tool.Approval{Policy: ask, Ask: func(_ context.Context, call tool.Call, _ string) (tool.Answer, error) {
		asked = append(asked, call.Name+" "+call.ID)
		return tool.AnswerYes, nil
	}}
	var ready string
	res, err := rn.Run(context.Background(), Request{Prompt: "bill acme for March", Model: model, Info: info,
		Tools: builtinTools(t), Approval: approval, Session: SessionSpec{Cwd: ws},
		OnEvent: func(ev Event) {
			if ev.Type == EventToolsReady {
				ready = ev.Notice.Message
			}
		}})
	if err != nil || !res.OK() {
		t.Fatalf("run: %v %+v", err, res)
	}
	if len(srv.bodies) != 5 {
		t.Fatalf("%d requests, want 5", len(srv.bodies))
	}
	t.Logf("tools_ready: %s", ready)

	first := wireTools(t, srv.body(0))
	tokens := compact.ToolsTokens(first)
	t.Logf("first request: %d tools, %d tokens of definitions", len(first), tokens)
	if tokens >= 3000 {
		t.Errorf("the first request carries %d tokens of tool definitions, want under 3,000", tokens)
	}
	if got := names(first); !slices.Equal(got, []string{"read", "bash", tool.SearchToolName}) {
		t.Errorf("first request offers %v, want the built-in tools and tool_search", got)
	}
	if !strings.Contains(ready, "302 more through tool_search") {
		t.Errorf("tools_ready says %q", ready)
	}

	second := srv.body(1)
	if got := names(wireTools(t, second)); !slices.Contains(got, invoice) || len(got) != 3+tool.DefaultSearchResults {
		t.Errorf("after the search the request offers %v: want %s among the %d found", got, invoice, tool.DefaultSearchResults)
	}
	if !strings.Contains(string(second), invoice+": Create a new invoice in the billing system.") {
		t.Errorf("the search result the model read lacks the tool and its description:\n%s", second)
	}
	// Ask mode: the found tools were asked about like any other (the
	// removed one too: its call goes the same way and fails in the tool),
	// the search (read-only) was not.
	if want := []string{invoice + " call_2", "mcp__gen__remove_tool call_3", invoice + " call_4"}; !slices.Equal(asked, want) {
		t.Errorf("asked about %v, want %v", asked, want)
	}
	log, _ := os.ReadFile(hookLog)
	for _, want := range []string{`pre {`, `post {`, `"tool_name":"` + invoice + `"`, `"tool_use_id":"call_2"`} {
		if !strings.Contains(string(log), want) {
			t.Errorf("hook log lacks %s:\n%s", want, log)
		}
	}
	if strings.Contains(string(log), `"tool_name":"tool_search"`) {
		t.Errorf("the mcp__gen__ hooks fired for tool_search:\n%s", log)
	}
	// The server removed the tool: the next request no longer offers it,
	// and a call of it is answered by a clear error.
	if got := names(wireTools(t, srv.body(3))); slices.Contains(got, invoice) {
		t.Errorf("the removed tool is still offered: %v", got)
	}
	if !strings.Contains(string(srv.body(4)), "removed the tool "+invoice+" during this run") {
		t.Errorf("the call of the removed tool was not told so:\n%s", srv.body(4))
	}

	// The transcript records the search and the call, each paired.
	tr, err := store.Load(context.Background(), res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	msgs := tr.Context("").Messages
	calls, results := map[string]string{}, map[string]int{}
	for _, m := range msgs {
		for _, c := range m.Content {
			if c.Type == llm.ContentToolCall {
				calls[c.ID] = c.Name
			}
		}
		if m.Role == llm.RoleToolResult {
			results[m.ToolCallID]++
		}
	}
	if calls["call_1"] != tool.SearchToolName || calls["call_2"] != invoice || len(calls) != 4 {
		t.Errorf("calls in the transcript: %v", calls)
	}
	for id := range calls {
		if results[id] != 1 {
			t.Errorf("call %s has %d results", id, results[id])
		}
	}

	// Resumed: the tools found before are offered again from the start
	// (the server is a new process, so the removed tool is back).
	srv.mu.Lock()
	srv.bodies = nil
	srv.script = func(int) chatStep { return chatStep{text: "again"} }
	srv.mu.Unlock()
	res2, err := rn.Run(context.Background(), Request{Prompt: "and April", Model: model, Info: info,
		Tools: builtinTools(t), Session: SessionSpec{Cwd: ws, ID: res.SessionID}})
	if err != nil || !res2.OK() {
		t.Fatalf("resumed run: %v %+v", err, res2)
	}
	if got := names(wireTools(t, srv.body(0))); !slices.Contains(got, invoice) || !slices.Contains(got, "mcp__gen__remove_tool") {
		t.Errorf("the resumed run offers %v, want the tools found before", got)
	}
}

// With tool search off, the same server's definitions go out whole: the
// measure the catalog is compared with.
func TestToolSearchOff(t *testing.T) {
	srv := &chatServer{script: func(int) chatStep { return chatStep{text: "ok"} }}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	info := llm.ModelInfo{Provider: "openai", ID: "big", API: llm.APIOpenAICompletions, ContextWindow: 1_000_000, MaxTokens: 4096}
	model := openai.New(openai.Config{Info: info, APIKey: "sk-test", BaseURL: ts.URL + "/v1"})
	for _, tc := range []struct {
		mode ToolSearchMode
		want int
	}{{ToolSearchOff, 2 + 22}, {ToolSearchAuto, 2 + 22}, {ToolSearchOn, 2 + 1}} {
		srv.mu.Lock()
		srv.bodies = nil
		srv.mu.Unlock()
		rn := testRunner(&Config{ToolSources: []tool.Source{genServer(20)}})
		res, err := rn.Run(context.Background(), Request{Prompt: "hi", Model: model, Info: info, Tools: builtinTools(t),
			ToolSearch: &ToolSearch{Mode: tc.mode}})
		rn.Close()
		if err != nil || !res.OK() {
			t.Fatalf("%s: %v %+v", tc.mode, err, res)
		}
		if got := wireTools(t, srv.body(0)); len(got) != tc.want {
			t.Errorf("%s: %d tools offered, want %d", tc.mode, len(got), tc.want)
		}
	}
}

// A tool an MCP server adds mid-run (list_changed) joins the run: with tool
// search on, a search finds it and the next request offers it; with it off,
// the next request offers it at once. The run's policy still decides: a
// denied tool the server adds is never offered.
func TestToolSearchServerAddsTools(t *testing.T) {
	for _, mode := range []ToolSearchMode{ToolSearchOn, ToolSearchOff} {
		t.Run(string(mode), func(t *testing.T) {
			srv := &chatServer{script: func(n int) chatStep {
				switch n {
				case 1:
					return chatStep{id: "call_1", name: "mcp__gen__add_tool", args: `{"name":"brand_new"}`}
				case 2:
					return chatStep{id: "call_2", name: "mcp__gen__add_tool", args: `{"name":"forbidden"}`}
				case 3:
					if mode == ToolSearchOn {
						return chatStep{id: "call_3", name: tool.SearchToolName, args: `{"query":"brand_new forbidden"}`}
					}
				}
				if n <= 4 {
					return chatStep{id: "call_4", name: "mcp__gen__brand_new", args: `{"project":"p"}`}
				}
				return chatStep{text: "done"}
			}}
			ts := httptest.NewServer(srv)
			defer ts.Close()
			info := llm.ModelInfo{Provider: "openai", ID: "m", API: llm.APIOpenAICompletions, ContextWindow: 1_000_000, MaxTokens: 4096}
			model := openai.New(openai.Config{Info: info, APIKey: "sk-test", BaseURL: ts.URL + "/v1"})
			rn := testRunner(&Config{ToolSources: []tool.Source{genServer(10)}})
			defer rn.Close()
			policy := &tool.Policy{Tools: []string{"read", "bash", "mcp__gen__*"}, Deny: []string{"mcp__gen__forbidden"}}
			res, err := rn.Run(context.Background(), Request{Prompt: "go", Model: model, Info: info, Tools: builtinTools(t),
				ToolPolicy: policy, ToolSearch: &ToolSearch{Mode: mode}})
			if err != nil || !res.OK() {
				t.Fatalf("run: %v %+v", err, res)
			}
			last := len(srv.bodies) - 1
			offered := names(wireTools(t, srv.body(last-1))) // the request that called brand_new
			if !slices.Contains(offered, "mcp__gen__brand_new") || slices.Contains(offered, "mcp__gen__forbidden") {
				t.Errorf("offered %v: want the added tool, not the denied one", offered)
			}
			if !strings.Contains(string(srv.body(last)), "mcp__gen__brand_new ran with") && !strings.Contains(string(srv.body(last)), "brand_new ran with") {
				t.Errorf("the added tool did not run:\n%s", srv.body(last))
			}
			if mode == ToolSearchOn && strings.Contains(string(srv.body(3)), "mcp__gen__forbidden:") {
				t.Errorf("the search found the denied tool:\n%s", srv.body(3))
			}
			for _, w := range res.Warnings {
				t.Errorf("warning: %s", w)
			}
		})
	}
}

// Loop detection counts the calls of a found tool like any other: the
// same call over and over is warned about, then blocked.
func TestToolSearchLoopGuard(t *testing.T) {
	const issue = "mcp__gen__get_issue"
	srv := &chatServer{script: func(n int) chatStep {
		switch {
		case n == 1:
			return chatStep{id: "call_0", name: tool.SearchToolName, args: `{"query":"get issue"}`}
		case n <= 22:
			return chatStep{id: fmt.Sprintf("call_%d", n), name: issue, args: `{"project":"p","id":"7"}`}
		}
		return chatStep{text: "done"}
	}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	info := llm.ModelInfo{Provider: "openai", ID: "m", API: llm.APIOpenAICompletions, ContextWindow: 32_000, MaxTokens: 4096}
	model := openai.New(openai.Config{Info: info, APIKey: "sk-test", BaseURL: ts.URL + "/v1"})
	rn := testRunner(&Config{ToolSources: []tool.Source{genServer(300)}})
	defer rn.Close()
	kinds := map[string]int{}
	res, err := rn.Run(context.Background(), Request{Prompt: "wait for issue 7", Model: model, Info: info, Tools: builtinTools(t),
		OnEvent: func(ev Event) {
			if ev.Type == EventLoopDetected && ev.Loop != nil && ev.Loop.Tool == issue {
				kinds[string(ev.Loop.Kind)]++
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if kinds["warning"] == 0 || kinds["block"] == 0 {
		t.Errorf("loop detection of the found tool: %v (run %s)", kinds, res.Reason)
	}
	if !strings.Contains(string(srv.body(len(srv.bodies)-1)), "blocked") {
		t.Errorf("the model was not told a call was blocked")
	}
}

// With tool search off, 300 MCP tools on a 32K model are about 50,000
// tokens of definitions in every request: more than the whole window, so
// no compaction can make room. The run is refused before any request,
// saying what to do, instead of sending it. In auto mode the same tools
// go behind tool_search and the run works.
func TestToolSearchOffToolsOverflowWindow(t *testing.T) {
	srv := &chatServer{script: func(int) chatStep { return chatStep{text: "ok"} }}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	info := llm.ModelInfo{Provider: "openai", ID: "small", API: llm.APIOpenAICompletions, ContextWindow: 32_768, MaxTokens: 4096}
	model := openai.New(openai.Config{Info: info, APIKey: "sk-test", BaseURL: ts.URL + "/v1"})
	run := func(mode ToolSearchMode, n int) (Result, error) {
		srv.mu.Lock()
		srv.bodies = nil
		srv.mu.Unlock()
		rn := testRunner(&Config{ToolSources: []tool.Source{genServer(n)}})
		defer rn.Close()
		return rn.Run(context.Background(), Request{Prompt: "hi", Model: model, Info: info, Tools: builtinTools(t),
			ToolSearch: &ToolSearch{Mode: mode}})
	}

	res, err := run(ToolSearchOff, 300)
	var te *ToolsOverflowError
	if !errors.As(err, &te) || res.OK() || res.Reason != string(llm.ReasonContextOverflow) {
		t.Fatalf("off: want a ToolsOverflowError and reason context_overflow, got %v %+v", err, res)
	}
	if te.Tools != 304 || te.Window != 32_768 || te.Tokens < 32_768 || te.Catalog {
		t.Errorf("off: error %+v", te)
	}
	if !strings.Contains(res.Message, "--tool-search on") || !strings.Contains(res.Message, "fewer tools") {
		t.Errorf("off: message does not say what to do: %s", res.Message)
	}
	srv.mu.Lock()
	sent := len(srv.bodies)
	srv.mu.Unlock()
	if sent != 0 {
		t.Fatalf("off: %d requests were sent to the model; want none", sent)
	}

	res, err = run(ToolSearchAuto, 300)
	if err != nil || !res.OK() {
		t.Fatalf("auto: %v %+v", err, res)
	}
	if got := wireTools(t, srv.body(0)); len(got) != 3 {
		t.Errorf("auto: %d tools offered, want 3 (read, bash, tool_search)", len(got))
	}

	// 100 tools (about 17,800 tokens) fit the window but not what the
	// prompt may use of it (the rest is the reply's): the run goes, and
	// the person is told why every call is over budget and what to do.
	res, err = run(ToolSearchOff, 100)
	if err != nil || !res.OK() {
		t.Fatalf("off, 100 tools: %v %+v", err, res)
	}
	warned := false
	for _, w := range res.Warnings {
		warned = warned || strings.Contains(w, "definitions of 104 tools") && strings.Contains(w, "--tool-search on")
	}
	if !warned {
		t.Errorf("off, 100 tools: no warning about the tool definitions: %q", res.Warnings)
	}
}

// 150 small tools fit a 1M window, but OpenAI refuses a request with more
// than 128. With tool search off the run is refused before any request,
// saying so and what to do; auto puts them behind tool_search. Anthropic
// documents no such limit, so there the same run is sent.
func TestToolSearchOffTooManyToolsForTheWire(t *testing.T) {
	srv := &chatServer{script: func(int) chatStep { return chatStep{text: "ok"} }}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	run := func(api llm.API, mode ToolSearchMode) (Result, error) {
		srv.mu.Lock()
		srv.bodies = nil
		srv.mu.Unlock()
		info := llm.ModelInfo{Provider: "openai", ID: "big", API: api, ContextWindow: 1_000_000, MaxTokens: 4096}
		model := openai.New(openai.Config{Info: info, APIKey: "sk-test", BaseURL: ts.URL + "/v1"})
		rn := testRunner(&Config{ToolSources: []tool.Source{genServer(150)}})
		defer rn.Close()
		return rn.Run(context.Background(), Request{Prompt: "hi", Model: model, Info: info, Tools: builtinTools(t),
			ToolSearch: &ToolSearch{Mode: mode}})
	}
	sent := func() int {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return len(srv.bodies)
	}

	res, err := run(llm.APIOpenAICompletions, ToolSearchOff)
	var te *ToolsOverflowError
	if !errors.As(err, &te) || res.OK() || res.Reason != string(llm.ReasonFormat) {
		t.Fatalf("openai, off: want a ToolsOverflowError and reason format, got %v %+v", err, res)
	}
	if te.Tools != 154 || te.Limit != 128 {
		t.Errorf("openai, off: error %+v", te)
	}
	if !strings.Contains(res.Message, "154 tools, more than the 128") || !strings.Contains(res.Message, "--tool-search on") {
		t.Errorf("openai, off: message does not say what is wrong and what to do: %s", res.Message)
	}
	if n := sent(); n != 0 {
		t.Fatalf("openai, off: %d requests were sent; want none", n)
	}

	if res, err = run(llm.APIOpenAICompletions, ToolSearchAuto); err != nil || !res.OK() {
		t.Fatalf("openai, auto: %v %+v", err, res)
	}
	if got := wireTools(t, srv.body(0)); len(got) != 3 {
		t.Errorf("openai, auto: %d tools offered, want 3 (read, bash, tool_search)", len(got))
	}

	if res, err = run(llm.APIAnthropicMessages, ToolSearchOff); err != nil || !res.OK() {
		t.Fatalf("anthropic, off: %v %+v", err, res)
	}
	if n := sent(); n != 1 {
		t.Fatalf("anthropic, off: %d requests sent, want 1", n)
	}
}

// requestCompactor records the tools each model call's budget was told.
type requestCompactor struct {
	mu    sync.Mutex
	tools [][]string
}

func (c *requestCompactor) SetRequest(_ string, tools []llm.ToolSpec) {
	var names []string
	for _, sp := range tools {
		names = append(names, sp.Name)
	}
	c.mu.Lock()
	c.tools = append(c.tools, names)
	c.mu.Unlock()
}

func (c *requestCompactor) TransformContext(_ context.Context, msgs []llm.Message) ([]llm.Message, error) {
	return msgs, nil
}

func (c *requestCompactor) PersistToolResult(_ context.Context, _ tool.Call, res tool.Result) tool.Result {
	return res
}

func (c *requestCompactor) Recover(_ context.Context, msgs []llm.Message) ([]llm.Message, error) {
	return msgs, nil
}

// The context budget counts the tools each request offers: after a search
// found bash, the next call's budget includes bash's definition, not only
// the first request's tools.
func TestToolSearchBudgetCountsFoundTools(t *testing.T) {
	srv := &chatServer{script: func(n int) chatStep {
		if n == 1 {
			return chatStep{id: "call_1", name: tool.SearchToolName, args: `{"query":"shell command"}`}
		}
		return chatStep{text: "done"}
	}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	info := llm.ModelInfo{Provider: "openai", ID: "m", API: llm.APIOpenAICompletions, ContextWindow: 200_000, MaxTokens: 4096}
	model := openai.New(openai.Config{Info: info, APIKey: "sk-test", BaseURL: ts.URL + "/v1"})
	rc := &requestCompactor{}
	rn := testRunner(&Config{Compaction: &CompactionSpec{Compactor: rc}})
	defer rn.Close()
	res, err := rn.Run(context.Background(), Request{Prompt: "go", Model: model, Info: info, Tools: builtinTools(t),
		ToolSearch: &ToolSearch{Mode: ToolSearchOn, Direct: func(n string) bool { return n == "read" }}})
	if err != nil || !res.OK() {
		t.Fatalf("run: %v %+v", err, res)
	}
	if got := wireTools(t, srv.body(1)); !slices.ContainsFunc(got, func(sp llm.ToolSpec) bool { return sp.Name == "bash" }) {
		t.Fatalf("the request after the search does not offer bash: %v", got)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.tools) != 2 || slices.Contains(rc.tools[0], "bash") || !slices.Contains(rc.tools[1], "bash") {
		t.Errorf("the budget was told the tools %q; want two calls, bash counted in the second", rc.tools)
	}
}

// A tool an MCP server adds mid-run whose name a provider refuses
// (mcp__gen__brand.new: OpenAI and Anthropic take ^[a-zA-Z0-9_-]{1,64}$)
// is offered under a wire-safe name, and the model's call of that name
// runs it, as for the tools the run started with. The run's other names
// were all safe, so it started without a name map.
func TestToolSearchAddedToolWireName(t *testing.T) {
	srv := &chatServer{script: func(n int) chatStep {
		switch n {
		case 1:
			return chatStep{id: "call_1", name: "mcp__gen__add_tool", args: `{"name":"brand.new"}`}
		case 2:
			return chatStep{id: "call_2", name: "mcp__gen__brand_new", args: `{"project":"p"}`}
		}
		return chatStep{text: "done"}
	}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	info := llm.ModelInfo{Provider: "openai", ID: "m", API: llm.APIOpenAICompletions, ContextWindow: 1_000_000, MaxTokens: 4096}
	model := openai.New(openai.Config{Info: info, APIKey: "sk-test", BaseURL: ts.URL + "/v1"})
	rn := testRunner(&Config{ToolSources: []tool.Source{genServer(10)}})
	defer rn.Close()
	res, err := rn.Run(context.Background(), Request{Prompt: "go", Model: model, Info: info, Tools: builtinTools(t),
		ToolSearch: &ToolSearch{Mode: ToolSearchOff}})
	if err != nil || !res.OK() {
		t.Fatalf("run: %v %+v", err, res)
	}
	srv.mu.Lock()
	n := len(srv.bodies)
	srv.mu.Unlock()
	if n != 3 {
		t.Fatalf("%d requests, want 3", n)
	}
	offered := names(wireTools(t, srv.body(1)))
	for _, name := range offered {
		if !tool.IsWireSafe(name) {
			t.Errorf("the request after add_tool offers %q, which providers refuse", name)
		}
	}
	if !slices.Contains(offered, "mcp__gen__brand_new") {
		t.Errorf("the added tool is not offered: %v", offered)
	}
	if !strings.Contains(string(srv.body(2)), "brand.new ran with") {
		t.Errorf("the call of the added tool's wire name did not run it:\n%s", srv.body(2))
	}
}

// A catalogued tool the model calls by its exact name, without a search,
// runs (through the registry, as any call) and is offered from the next
// request on, as docs/tool-search.md says.
func TestToolSearchExactNameCallOffers(t *testing.T) {
	srv := &chatServer{script: func(n int) chatStep {
		if n == 1 {
			return chatStep{id: "call_1", name: "bash", args: `{}`}
		}
		return chatStep{text: "done"}
	}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	info := llm.ModelInfo{Provider: "openai", ID: "m", API: llm.APIOpenAICompletions, ContextWindow: 200_000, MaxTokens: 4096}
	model := openai.New(openai.Config{Info: info, APIKey: "sk-test", BaseURL: ts.URL + "/v1"})
	rn := testRunner(nil)
	defer rn.Close()
	res, err := rn.Run(context.Background(), Request{Prompt: "go", Model: model, Info: info, Tools: builtinTools(t),
		ToolSearch: &ToolSearch{Mode: ToolSearchOn, Direct: func(n string) bool { return n == "read" }}})
	if err != nil || !res.OK() {
		t.Fatalf("run: %v %+v", err, res)
	}
	if first := names(wireTools(t, srv.body(0))); slices.Contains(first, "bash") {
		t.Fatalf("the first request offers bash, which is catalogued: %v", first)
	}
	if second := names(wireTools(t, srv.body(1))); !slices.Contains(second, "bash") {
		t.Errorf("after the model called bash by name the request offers %v, want bash", second)
	}
	if body := string(srv.body(1)); strings.Contains(body, "not found") {
		t.Errorf("the call by exact name did not run:\n%s", body)
	}
}

// A resumed session offers again the tools its history found, but only
// those the policy of this run allows: a tool denied since is neither
// re-offered nor found.
func TestToolSearchResumeHonoursPolicy(t *testing.T) {
	srv := &chatServer{script: func(n int) chatStep {
		if n == 1 {
			return chatStep{id: "call_1", name: tool.SearchToolName, args: `{"query":"shell command"}`}
		}
		if n == 3 {
			return chatStep{id: "call_2", name: tool.SearchToolName, args: `{"query":"shell command"}`}
		}
		return chatStep{text: "done"}
	}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	info := llm.ModelInfo{Provider: "openai", ID: "m", API: llm.APIOpenAICompletions, ContextWindow: 200_000, MaxTokens: 4096}
	model := openai.New(openai.Config{Info: info, APIKey: "sk-test", BaseURL: ts.URL + "/v1"})
	store := session.NewJSONLStore(t.TempDir())
	rn, err := New(Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	defer rn.Close()
	search := &ToolSearch{Mode: ToolSearchOn, Direct: func(n string) bool { return n == "read" }}
	ws := t.TempDir()
	res, err := rn.Run(context.Background(), Request{Prompt: "go", Model: model, Info: info, Tools: builtinTools(t),
		ToolSearch: search, Session: SessionSpec{Cwd: ws}})
	if err != nil || !res.OK() {
		t.Fatalf("first run: %v %+v", err, res)
	}
	if got := names(wireTools(t, srv.body(1))); !slices.Contains(got, "bash") {
		t.Fatalf("the search did not offer bash: %v", got)
	}
	res, err = rn.Run(context.Background(), Request{Prompt: "again", Model: model, Info: info, Tools: builtinTools(t),
		ToolSearch: search, ToolPolicy: &tool.Policy{Deny: []string{"bash"}}, Session: SessionSpec{Cwd: ws, ID: res.SessionID}})
	if err != nil || !res.OK() {
		t.Fatalf("resumed run: %v %+v", err, res)
	}
	if got := names(wireTools(t, srv.body(2))); slices.Contains(got, "bash") {
		t.Errorf("the resumed run offers the denied bash again: %v", got)
	}
	// Nothing is left behind the search (bash was the only catalogued
	// tool), so the run has no tool_search and the model is told so.
	if body := string(srv.body(3)); !strings.Contains(body, `Tool \"tool_search\" not found`) {
		t.Errorf("the search after resume finds the denied bash:\n%s", body)
	}
}
