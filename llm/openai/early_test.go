package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentloop/agentloop/llm"
)

// A tool call's block ends as soon as its arguments are one whole object,
// while the model keeps the message open: the server sends the call, then
// holds the tail back until the client has seen toolcall_end. Without the
// early end the client would wait for the tail and the idle timeout would
// fail the stream. Checked with the arguments split at every boundary.
func TestToolCallEndsBeforeTail(t *testing.T) {
	args := `{"command": "sleep 1 && echo \"}\"", "timeout": 5}`
	tail := chunkJSON(map[string]any{"content": "Running it now; "}, nil) +
		chunkJSON(map[string]any{"content": "meanwhile, more words."}, nil) +
		chunkJSON(map[string]any{}, "tool_calls") + "data: [DONE]\n\n"
	run := func(t *testing.T, head []string) {
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "text/event-stream")
			for _, c := range head {
				io.WriteString(w, c)
			}
			w.(http.Flusher).Flush()
			select {
			case <-release:
				io.WriteString(w, tail)
			case <-r.Context().Done():
			}
		}))
		defer srv.Close()
		var types []llm.EventType
		var msg *llm.Message
		var block *llm.Content
		// The idle timeout only turns a missing early end into a failure
		// instead of a hang; a passing run never waits for it.
		for ev, err := range newModel(srv, 5*time.Second).Stream(context.Background(), simpleRequest()) {
			if err != nil {
				t.Fatal(err)
			}
			types = append(types, ev.Type)
			switch ev.Type {
			case llm.EventToolCallEnd:
				block = ev.Block
				close(release)
			case llm.EventDone, llm.EventError:
				msg = ev.Message
				if ev.Err != nil {
					t.Fatalf("stream failed (toolcall_end did not come before the tail?): %v", ev.Err)
				}
			}
		}
		got := typesString(types)
		if !strings.HasSuffix(got, "toolcall_end text_start text_delta text_delta text_end done") {
			t.Fatalf("events %s", got)
		}
		if block == nil || block.ID != "call_1" || block.Name != "bash" || string(block.Arguments) != args {
			t.Fatalf("toolcall_end block %+v", block)
		}
		if msg.StopReason != llm.StopReasonToolUse || len(msg.ToolCalls()) != 1 || string(msg.ToolCalls()[0].Arguments) != args {
			t.Fatalf("final message %+v", msg)
		}
	}
	for i := 0; i <= len(args); i++ {
		if i < len(args) && !utf8.RuneStart(args[i]) {
			continue
		}
		head := []string{argsDelta(0, "call_1", "bash", args[:i]), argsDelta(0, "", "", args[i:])}
		t.Run(fmt.Sprint("split at ", i), func(t *testing.T) { run(t, head) })
	}
	t.Run("one byte per chunk", func(t *testing.T) {
		head := []string{argsDelta(0, "call_1", "bash", "")}
		for i := range len(args) {
			head = append(head, argsDelta(0, "", "", args[i:i+1]))
		}
		run(t, head)
	})
}

// What may follow a call whose block ended early, and what may not.
func TestToolCallAfterEarlyEnd(t *testing.T) {
	finish := chunkJSON(map[string]any{}, "tool_calls") + "data: [DONE]\n\n"
	nameOnly := chunkJSON(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"name": "bash"}}}}, nil)
	tests := []struct {
		name  string
		body  string
		types string
		args  string // the call's final arguments
		err   string // words of the stream's error, if it fails
	}{
		{"whitespace and repeats are ignored",
			argsDelta(0, "call_1", "bash", `{"a":1}`) + argsDelta(0, "", "", " \n") + argsDelta(0, "call_1", "bash", "") + finish,
			"start toolcall_start toolcall_delta toolcall_end done", `{"a":1}`, ""},
		{"the whole arguments repeated in the last chunk are ignored",
			argsDelta(0, "call_1", "bash", `{"a":`) + argsDelta(0, "", "", `1}`) +
				chunkJSON(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": "call_1", "function": map[string]any{"name": "bash", "arguments": `{"a":1}`}}}}, "tool_calls") +
				"data: [DONE]\n\n",
			"start toolcall_start toolcall_delta toolcall_delta toolcall_end done", `{"a":1}`, ""},
		{"more arguments after the end fail the stream",
			argsDelta(0, "call_1", "bash", `{"a":1}`) + argsDelta(0, "", "", `{"b":2}`) + finish,
			"start toolcall_start toolcall_delta toolcall_end error", `{"a":1}`, `more arguments arrived for tool call "call_1"`},
		{"a closing brace and more in one fragment waits for the normal end",
			argsDelta(0, "call_1", "bash", `{"a":1}{"b":2}`) + finish,
			"start toolcall_start toolcall_delta toolcall_end done", `"{\"a\":1}{\"b\":2}"`, ""},
		{"balanced but invalid waits for the normal end",
			argsDelta(0, "call_1", "bash", `{"a" 1}`) + argsDelta(0, "", "", " ") + finish,
			"start toolcall_start toolcall_delta toolcall_delta toolcall_end done", `"{\"a\" 1} "`, ""},
		{"the name arriving after the arguments ends the block",
			argsDelta(0, "call_1", "", `{"a":1}`) + nameOnly + argsDelta(0, "", "", " ") + finish,
			"start toolcall_start toolcall_delta toolcall_end done", `{"a":1}`, ""},
		{"a new id on the same index after an early end is a new call",
			argsDelta(0, "call_1", "bash", `{"a":1}`) + argsDelta(0, "call_2", "bash", `{"b":2}`) + finish,
			"start toolcall_start toolcall_delta toolcall_end toolcall_start toolcall_delta toolcall_end done", `{"a":1}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, 200, nil, tt.body, nil)
			r := collect(t, newModel(srv, 0), context.Background(), simpleRequest())
			if got := typesString(r.Types); got != tt.types {
				t.Errorf("events\n got %s\nwant %s", got, tt.types)
			}
			if tt.err == "" && r.Err != nil {
				t.Fatalf("error %v", r.Err)
			}
			if tt.err != "" && (r.Err == nil || !strings.Contains(r.Err.Error(), tt.err)) {
				t.Fatalf("error %v, want one saying %q", r.Err, tt.err)
			}
			calls := r.Msg.ToolCalls()
			if len(calls) == 0 || string(calls[0].Arguments) != tt.args || calls[0].Name != "bash" {
				t.Fatalf("calls %+v", calls)
			}
			if !json.Valid(calls[0].Arguments) {
				t.Fatalf("arguments %q", calls[0].Arguments)
			}
		})
	}
}
