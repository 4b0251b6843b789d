package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/session"
)

// End-to-end tests of tool-call pairing with the built CLI against a small
// Chat Completions server that checks pairing as OpenAI does.

var (
	cliOnce sync.Once
	cliBin  string
	cliErr  error
)

// builtCLI builds ./cmd/agentloop once per test binary and returns its path.
func builtCLI(t *testing.T) string {
	t.Helper()
	cliOnce.Do(func() {
		dir, err := os.MkdirTemp("", "agentloop-cli-")
		if err != nil {
			cliErr = err
			return
		}
		cliBin = filepath.Join(dir, "agentloop")
		out, err := exec.Command("go", "build", "-o", cliBin, ".").CombinedOutput()
		if err != nil {
			cliErr = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	if cliErr != nil {
		t.Fatal(cliErr)
	}
	return cliBin
}

// chatMessage is what the test server reads of a request's messages.
type chatMessage struct {
	Role       string `json:"role"`
	Content    any    `json:"content"`
	ToolCallID string `json:"tool_call_id"`
	ToolCalls  []struct {
		ID string `json:"id"`
	} `json:"tool_calls"`
}

// chatServer is a Chat Completions server: reply(n) gives the SSE data
// lines of the n-th answer (from 1). Like OpenAI it answers 400 when an
// assistant message with tool_calls is not followed by a tool message for
// each of its ids. It keeps every request's messages.
type chatServer struct {
	mu       sync.Mutex
	requests [][]chatMessage
	refused  []string
	reply    func(n int) []string
}

func (s *chatServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Messages []chatMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req.Messages)
	n := len(s.requests)
	s.mu.Unlock()
	if msg := unpairedCalls(req.Messages); msg != "" {
		s.mu.Lock()
		s.refused = append(s.refused, msg)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error","param":"messages","code":null}}`, msg)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, d := range s.reply(n) {
		fmt.Fprintf(w, "data: %s\n\n", d)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// unpairedCalls returns OpenAI's error text for the first assistant
// message whose calls are not all answered right after it, or "".
func unpairedCalls(msgs []chatMessage) string {
	for i, m := range msgs {
		if m.Role != "assistant" || len(m.ToolCalls) == 0 {
			continue
		}
		answered := map[string]bool{}
		for j := i + 1; j < len(msgs) && msgs[j].Role == "tool"; j++ {
			answered[msgs[j].ToolCallID] = true
		}
		var missing []string
		for _, c := range m.ToolCalls {
			if !answered[c.ID] {
				missing = append(missing, c.ID)
			}
		}
		if len(missing) > 0 {
			return "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. " +
				"The following tool_call_ids did not have response messages: " + strings.Join(missing, ", ")
		}
	}
	return ""
}

func chatToolCall(id, name, args string) []string {
	call := map[string]any{"index": 0, "id": id, "type": "function", "function": map[string]any{"name": name, "arguments": args}}
	first, _ := json.Marshal(map[string]any{"id": "c", "object": "chat.completion.chunk",
		"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "tool_calls": []any{call}}}}})
	return []string{string(first), `{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`}
}

func chatText(text string) []string {
	d, _ := json.Marshal(map[string]any{"id": "c", "object": "chat.completion.chunk",
		"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": text}}}})
	return []string{string(d), `{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`}
}

// runBuilt runs the built CLI against the server with home as
// AGENTLOOP_HOME and returns its exit code, stdout and stderr.
func runBuilt(t *testing.T, home, url string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(builtCLI(t), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "AGENTLOOP_HOME=" + home, "OPENAI_API_KEY=sk-test"}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	return code, out.String(), errb.String()
}

func modelArgs(url string) []string {
	return []string{"--model", "openai/test-model", "--base-url", url + "/v1"}
}

// Issue 16.3: Kimi K2 on Groq sends the id functions.weather:0 in every
// turn. Both calls ran; the third request must carry both pairs, each
// result right after its own call.
func TestE2ERepeatedToolCallIDs(t *testing.T) {
	srv := &chatServer{reply: func(n int) []string {
		if n <= 2 {
			return chatToolCall("functions.weather:0", "ls", `{"path":"."}`)
		}
		return chatText("done")
	}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	home, ws := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "paris.txt"), []byte("sunny"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runBuilt(t, home, ts.URL, append([]string{"run", "--cwd", ws, "--no-session"}, append(modelArgs(ts.URL), "weather?")...)...)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.requests) != 3 || len(srv.refused) > 0 {
		t.Fatalf("%d requests, refused %q\n%s", len(srv.requests), srv.refused, errs)
	}
	third := srv.requests[2]
	var pairs int
	seen := map[string]bool{}
	for i, m := range third {
		for _, c := range m.ToolCalls {
			if seen[c.ID] {
				t.Errorf("id %q sent twice in one request", c.ID)
			}
			seen[c.ID] = true
			if i+1 < len(third) && third[i+1].Role == "tool" && third[i+1].ToolCallID == c.ID &&
				strings.Contains(fmt.Sprint(third[i+1].Content), "paris.txt") {
				pairs++
			}
		}
	}
	if pairs != 2 {
		b, _ := json.Marshal(third)
		t.Errorf("the third request carries %d call/result pairs, want 2:\n%s", pairs, b)
	}
}

// abortedSession stores a session as a second Ctrl-C leaves it: the
// assistant message was cut off (stopReason aborted) after it asked for a
// bash call, and no result was written.
func abortedSession(t *testing.T, home, ws string) string {
	t.Helper()
	_, path := storeMessages(t, home, ws, []llm.Message{
		llm.UserText("run the tests"),
		{Role: llm.RoleAssistant, Provider: "openai", Model: "test-model", API: string(llm.APIOpenAICompletions),
			Content:    []llm.Content{llm.Text("Running them."), llm.ToolCall("call_abc", "bash", json.RawMessage(`{"command":"sleep 30"}`))},
			StopReason: llm.StopReasonAborted, ErrorMessage: "Request was aborted"},
	})
	return path
}

// Issue 17.3: continuing such a session (with -c, or --session and its
// file) is accepted by a server that refuses unpaired calls, and sessions
// repair writes the missing result into the file.
func TestE2EAbortedTurnPaired(t *testing.T) {
	for _, how := range []string{"continue", "session"} {
		t.Run(how, func(t *testing.T) {
			srv := &chatServer{reply: func(int) []string { return chatText("ok") }}
			ts := httptest.NewServer(srv)
			defer ts.Close()
			home, ws := t.TempDir(), t.TempDir()
			path := abortedSession(t, home, ws)
			args := []string{"run", "--cwd", ws}
			if how == "continue" {
				args = append(args, "-c")
			} else {
				args = append(args, "--session", path)
			}
			code, _, errs := runBuilt(t, home, ts.URL, append(args, append(modelArgs(ts.URL), "again")...)...)
			srv.mu.Lock()
			defer srv.mu.Unlock()
			if code != 0 || len(srv.refused) > 0 {
				t.Fatalf("exit %d, refused %q\n%s", code, srv.refused, errs)
			}
			req := srv.requests[len(srv.requests)-1]
			found := false
			for i, m := range req {
				if len(m.ToolCalls) == 1 && i+1 < len(req) && req[i+1].Role == "tool" && req[i+1].ToolCallID == m.ToolCalls[0].ID {
					found = true
				}
			}
			if !found {
				b, _ := json.Marshal(req)
				t.Errorf("the aborted call was not sent with a result:\n%s", b)
			}
		})
	}
}

func TestE2ERepairAbortedTurn(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	path := abortedSession(t, home, ws)
	code, out, errs := runBuilt(t, home, "", "sessions", "repair", path)
	if code != 0 || !strings.Contains(out, "1 tool calls without a result given an error result (call_abc)") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	tr, err := session.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	msgs := tr.Context("").Messages
	if len(msgs) != 3 || msgs[2].Role != llm.RoleToolResult || msgs[2].ToolCallID != "call_abc" || !msgs[2].IsError {
		t.Errorf("after repair: %+v", msgs)
	}
	code, out, _ = runBuilt(t, home, "", "sessions", "repair", path)
	if code != 0 || !strings.Contains(out, "nothing to repair") {
		t.Errorf("second repair: exit %d, %s", code, out)
	}
}
