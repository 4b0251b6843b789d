package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/session"
)

// End-to-end tests of tool-call pairing with the built CLI against a small
// Chat Completions server that checks pairing as OpenAI does.

// step is one scripted answer: a tool call, or text when name is "".
type step struct{ id, name, args, text string }

// item is one piece of a request's history as the test server reads it,
// whatever the wire: a tool call, a tool result or anything else.
type item struct {
	kind     string // "call", "result" or "other"
	id, text string // a call's or result's id; a result's text
	msg      int    // the index of the message (or input item) it came in
}

// wireServer speaks Chat Completions (/v1/chat/completions), Anthropic
// Messages (/v1/messages) and the Responses API (/v1/responses): script(n)
// is its n-th answer (from 1). It refuses a history as each provider does:
// a call not answered right after its message (all three), an id used
// twice in one request (Anthropic, Responses). It keeps every request.
type wireServer struct {
	mu       sync.Mutex
	requests [][]item
	refused  []string
	script   func(n int) step
}

func (s *wireServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var items []item
	var err error
	switch r.URL.Path {
	case "/v1/chat/completions":
		items, err = chatItems(body)
	case "/v1/messages":
		items, err = anthropicItems(body)
	case "/v1/responses":
		items, err = responsesItems(body)
	default:
		http.NotFound(w, r)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	unique := r.URL.Path != "/v1/chat/completions"
	s.mu.Lock()
	s.requests = append(s.requests, items)
	n := len(s.requests)
	msg := refusal(items, unique)
	if msg != "" {
		s.refused = append(s.refused, msg)
	}
	s.mu.Unlock()
	if msg != "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		if r.URL.Path == "/v1/messages" {
			fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":%q}}`, msg)
		} else {
			fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error","param":"messages","code":null}}`, msg)
		}
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	st := s.script(n)
	switch r.URL.Path {
	case "/v1/chat/completions":
		writeChat(w, st)
	case "/v1/messages":
		writeAnthropic(w, st)
	default:
		writeResponses(w, st)
	}
}

// refusal returns the provider's complaint about a history, or "": every
// call must be answered before the next message that is not a result,
// and with unique set, no call id may come twice.
func refusal(items []item, unique bool) string {
	seen := map[string]bool{}
	for i, it := range items {
		if it.kind != "call" {
			continue
		}
		if unique && seen[it.id] {
			return "tool call ids must be unique: " + it.id + " is used twice"
		}
		seen[it.id] = true
		if _, ok := answer(items, i); !ok {
			return "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. " +
				"The following tool_call_ids did not have response messages: " + it.id
		}
	}
	return ""
}

// answer returns the result that answers the call items[i]: one with its
// id among the items of its message's span.
func answer(items []item, i int) (item, bool) {
	for j := i + 1; j < len(items) && items[j].msg == items[i].msg; j++ {
		if items[j].kind == "result" && items[j].id == items[i].id {
			return items[j], true
		}
	}
	return item{}, false
}

func chatItems(body []byte) ([]item, error) {
	var req struct {
		Messages []struct {
			Role       string `json:"role"`
			Content    any    `json:"content"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	err := json.Unmarshal(body, &req)
	var out []item
	last := -1 // the last assistant message: tool messages answer it
	for i, m := range req.Messages {
		if m.Role == "assistant" {
			last = i
		}
		switch {
		case m.Role == "tool":
			out = append(out, item{kind: "result", id: m.ToolCallID, text: fmt.Sprint(m.Content), msg: last})
		case len(m.ToolCalls) > 0:
			for _, c := range m.ToolCalls {
				out = append(out, item{kind: "call", id: c.ID, msg: i})
			}
		default:
			out = append(out, item{kind: "other", msg: i})
		}
	}
	return out, err
}

func anthropicItems(body []byte) ([]item, error) {
	var req struct {
		Messages []struct {
			Content []struct {
				Type      string `json:"type"`
				ID        string `json:"id"`
				ToolUseID string `json:"tool_use_id"`
				Content   []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"content"`
		} `json:"messages"`
	}
	err := json.Unmarshal(body, &req)
	var out []item
	for i, m := range req.Messages {
		for _, b := range m.Content {
			switch b.Type {
			case "tool_use":
				out = append(out, item{kind: "call", id: b.ID, msg: i})
			case "tool_result":
				text := ""
				for _, c := range b.Content {
					text += c.Text
				}
				// A user turn of results answers the turn before it.
				out = append(out, item{kind: "result", id: b.ToolUseID, text: text, msg: i - 1})
			default:
				out = append(out, item{kind: "other", msg: i})
			}
		}
	}
	return out, err
}

func responsesItems(body []byte) ([]item, error) {
	var req struct {
		Input []struct {
			Type   string `json:"type"`
			CallID string `json:"call_id"`
			Output string `json:"output"`
		} `json:"input"`
	}
	err := json.Unmarshal(body, &req)
	var out []item
	turn, inCalls := 0, false // consecutive function_call items are one turn
	for i, in := range req.Input {
		switch in.Type {
		case "function_call":
			if !inCalls {
				turn++
			}
			inCalls = true
			out = append(out, item{kind: "call", id: in.CallID, msg: turn})
		case "function_call_output":
			inCalls = false
			out = append(out, item{kind: "result", id: in.CallID, text: in.Output, msg: turn})
		default:
			inCalls = false
			out = append(out, item{kind: "other", msg: -1 - i})
		}
	}
	return out, err
}

func writeChat(w io.Writer, st step) {
	delta := map[string]any{"role": "assistant", "content": st.text}
	finish := "stop"
	if st.name != "" {
		delta = map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"index": 0, "id": st.id, "type": "function",
			"function": map[string]any{"name": st.name, "arguments": st.args}}}}
		finish = "tool_calls"
	}
	first, _ := json.Marshal(map[string]any{"id": "c", "object": "chat.completion.chunk",
		"choices": []any{map[string]any{"index": 0, "delta": delta}}})
	fmt.Fprintf(w, "data: %s\n\n", first)
	fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":%q}]}\n\n", finish)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func writeEvents(w io.Writer, events ...any) {
	for _, e := range events {
		b, _ := json.Marshal(e)
		var typ struct{ Type string }
		_ = json.Unmarshal(b, &typ)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ.Type, b)
	}
}

func writeAnthropic(w io.Writer, st step) {
	block := map[string]any{"type": "text", "text": ""}
	delta := map[string]any{"type": "text_delta", "text": st.text}
	stop := "end_turn"
	if st.name != "" {
		block = map[string]any{"type": "tool_use", "id": st.id, "name": st.name, "input": map[string]any{}}
		delta = map[string]any{"type": "input_json_delta", "partial_json": st.args}
		stop = "tool_use"
	}
	writeEvents(w,
		map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
			"content": []any{}, "stop_reason": nil, "usage": map[string]any{"input_tokens": 10, "output_tokens": 1}}},
		map[string]any{"type": "content_block_start", "index": 0, "content_block": block},
		map[string]any{"type": "content_block_delta", "index": 0, "delta": delta},
		map[string]any{"type": "content_block_stop", "index": 0},
		map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop}, "usage": map[string]any{"output_tokens": 5}},
		map[string]any{"type": "message_stop"})
}

func writeResponses(w io.Writer, st step) {
	item := map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "annotations": []any{}, "text": st.text}}}
	if st.name != "" {
		item = map[string]any{"id": "fc_1", "type": "function_call", "status": "completed", "call_id": st.id, "name": st.name, "arguments": st.args}
	}
	writeEvents(w,
		map[string]any{"type": "response.created", "sequence_number": 0, "response": map[string]any{"id": "resp_1", "status": "in_progress", "output": []any{}}},
		map[string]any{"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": item},
		map[string]any{"type": "response.output_item.done", "sequence_number": 2, "output_index": 0, "item": item},
		map[string]any{"type": "response.completed", "sequence_number": 3, "response": map[string]any{"id": "resp_1", "status": "completed", "output": []any{},
			"usage": map[string]any{"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}})
}

// runPlain runs the built CLI with args, home as AGENTLOOP_HOME and a test
// OpenAI key, and returns its exit code, stdout and stderr.
func runPlain(t *testing.T, home string, args ...string) (int, string, string) {
	t.Helper()
	return execCLI(t, []string{"OPENAI_API_KEY=sk-test"}, home, args...)
}

func modelArgs(url string) []string {
	return []string{"--model", "openai/test-model", "--base-url", url + "/v1"}
}

// wireModels declares a provider per wire served by url in home's
// models.json, and returns the --model of each.
func wireModels(t *testing.T, home, url string) map[string][]string {
	t.Helper()
	models := []any{map[string]any{"id": "m"}}
	writeFile(t, filepath.Join(home, "models.json"), js(map[string]any{"providers": map[string]any{
		"wire-anthropic": map[string]any{"baseUrl": url, "api": "anthropic-messages", "apiKey": "sk-test", "models": models},
		"wire-responses": map[string]any{"baseUrl": url + "/v1", "api": "openai-responses", "apiKey": "sk-test", "models": models},
	}}))
	return map[string][]string{
		"chat completions": modelArgs(url),
		"anthropic":        {"--model", "wire-anthropic/m"},
		"responses":        {"--model", "wire-responses/m"},
	}
}

func js(v any) string { b, _ := json.Marshal(v); return string(b) }

// Issue 16.3: Kimi K2 on Groq sends the id functions.weather:0 in every
// turn. Both calls ran; the third request must carry both pairs, each
// result right after its own call, on every wire (Anthropic and the
// Responses API refuse an id used twice).
func TestE2ERepeatedToolCallIDs(t *testing.T) {
	srv := &wireServer{}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	home := t.TempDir()
	for name, model := range wireModels(t, home, ts.URL) {
		t.Run(name, func(t *testing.T) {
			srv.mu.Lock()
			srv.requests, srv.refused = nil, nil
			srv.script = func(n int) step {
				if n <= 2 {
					return step{id: "functions.weather:0", name: "ls", args: `{"path":"."}`}
				}
				return step{text: "done"}
			}
			srv.mu.Unlock()
			ws := t.TempDir()
			if err := os.WriteFile(filepath.Join(ws, "paris.txt"), []byte("sunny"), 0o600); err != nil {
				t.Fatal(err)
			}
			code, _, errs := runPlain(t, home, append([]string{"run", "--cwd", ws, "--no-session"}, append(model, "weather?")...)...)
			srv.mu.Lock()
			defer srv.mu.Unlock()
			if code != 0 || len(srv.requests) != 3 || len(srv.refused) > 0 {
				t.Fatalf("exit %d, %d requests, refused %q\n%s", code, len(srv.requests), srv.refused, errs)
			}
			third := srv.requests[2]
			pairs := 0
			for i, it := range third {
				if r, ok := answer(third, i); it.kind == "call" && ok && strings.Contains(r.text, "paris.txt") {
					pairs++
				}
			}
			if pairs != 2 {
				t.Errorf("the third request carries %d call/result pairs, want 2: %+v", pairs, third)
			}
		})
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
			srv := &wireServer{script: func(int) step { return step{text: "ok"} }}
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
			code, _, errs := runPlain(t, home, append(args, append(modelArgs(ts.URL), "again")...)...)
			srv.mu.Lock()
			defer srv.mu.Unlock()
			if code != 0 || len(srv.refused) > 0 {
				t.Fatalf("exit %d, refused %q\n%s", code, srv.refused, errs)
			}
			req := srv.requests[len(srv.requests)-1]
			found := false
			for i, it := range req {
				if _, ok := answer(req, i); it.kind == "call" && ok {
					found = true
				}
			}
			if !found {
				t.Errorf("the aborted call was not sent with a result: %+v", req)
			}
		})
	}
}

func TestE2ERepairAbortedTurn(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	path := abortedSession(t, home, ws)
	code, out, errs := runPlain(t, home, "sessions", "repair", path)
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
	code, out, _ = runPlain(t, home, "sessions", "repair", path)
	if code != 0 || !strings.Contains(out, "nothing to repair") {
		t.Errorf("second repair: exit %d, %s", code, out)
	}
}
