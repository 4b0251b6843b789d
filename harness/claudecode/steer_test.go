package claudecode

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/harness"
	"github.com/agentloop/agentloop/llm"
)

// fakeEnv makes the test binary a scripted Claude Code (see TestMain).
const fakeEnv = "AGENTLOOP_FAKE_CLAUDE"

// fakeClaude speaks stream-json the way Claude Code 2.1.328 did against
// mockllm (see docs/harnesses.md): a user line written mid-turn is echoed
// back with isReplay where it is taken, in the running turn when a tool
// result is still to go to the model ("intool"), else in a turn of its own
// after the first one's result ("late").
func fakeClaude(scenario string) int {
	in := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	if !slices.Contains(os.Args[1:], "--replay-user-messages") {
		out.Encode(map[string]any{"type": "result", "subtype": "error_during_execution", "is_error": true,
			"errors": []string{"without --replay-user-messages nobody learns where a steer was taken"}})
		return 1
	}
	read := func() string {
		if !in.Scan() {
			return ""
		}
		var l struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		}
		json.Unmarshal(in.Bytes(), &l)
		return l.Message.Content
	}
	sid := "11111111-2222-3333-4444-555555555555"
	init := map[string]any{"type": "system", "subtype": "init", "session_id": sid, "claude_code_version": "9.9.9"}
	replay := func(uuid, text string) map[string]any {
		return map[string]any{"type": "user", "isReplay": true, "uuid": uuid, "session_id": sid, "parent_tool_use_id": nil,
			"message": map[string]any{"role": "user", "content": text}}
	}
	say := func(uuid, text string) map[string]any {
		return map[string]any{"type": "assistant", "uuid": uuid, "session_id": sid, "parent_tool_use_id": nil,
			"message": map[string]any{"role": "assistant", "content": []map[string]any{{"type": "text", "text": text}}}}
	}
	result := map[string]any{"type": "result", "subtype": "success", "session_id": sid, "result": "done",
		"usage": map[string]int{"input_tokens": 10, "output_tokens": 2}}
	prompt := read()
	out.Encode(init)
	out.Encode(replay("u-prompt", prompt))
	switch scenario {
	case "intool":
		out.Encode(map[string]any{"type": "assistant", "uuid": "u-call", "session_id": sid, "parent_tool_use_id": nil,
			"message": map[string]any{"role": "assistant", "content": []map[string]any{{"type": "tool_use", "id": "toolu_1", "name": "Bash",
				"input": map[string]string{"command": "sleep 2"}}}}})
		steer := read() // arrives while the tool "runs"
		out.Encode(map[string]any{"type": "user", "uuid": "u-res", "session_id": sid, "parent_tool_use_id": nil,
			"message": map[string]any{"role": "user", "content": []map[string]any{{"type": "tool_result", "tool_use_id": "toolu_1", "content": "slept"}}}})
		out.Encode(replay("u-steer", steer))
		out.Encode(say("u-answer", "slept, and "+steer))
		out.Encode(result)
	case "late":
		out.Encode(say("u-first", "first answer"))
		steer := read() // arrives while the answer streams: no tool result left to carry it
		out.Encode(result)
		out.Encode(init)
		out.Encode(replay("u-steer", steer))
		out.Encode(say("u-second", "second answer: "+steer))
		out.Encode(result)
	default:
		fmt.Fprintln(os.Stderr, "unknown scenario", scenario)
		return 2
	}
	for in.Scan() { // until stdin closes, as Claude Code waits for more
	}
	return 0
}

// steerAttempt runs an attempt on the fake, steering text in when trigger
// sees its event; it returns the result and the last delivery offered.
func steerAttempt(t *testing.T, scenario, text string, trigger func(agent.Event) bool) (*harness.Result, func(llm.Message) bool) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h := New(&Config{Command: exe, Env: append(os.Environ(), fakeEnv+"="+scenario)})
	var mu sync.Mutex
	var deliver, last func(llm.Message) bool
	steered := make(chan bool, 1)
	a := &harness.Attempt{SessionID: "s", RunID: "r1", Attempt: 1, Prompt: llm.UserText("take a nap"), Cwd: t.TempDir(),
		SetSteer: func(d func(llm.Message) bool) {
			mu.Lock()
			defer mu.Unlock()
			deliver = d
			if d != nil {
				last = d
			}
		},
		Emit: func(ev agent.Event) {
			if !trigger(ev) {
				return
			}
			mu.Lock()
			d := deliver
			mu.Unlock()
			// Steer comes from another goroutine, as Run.Steer does.
			go func() { steered <- d != nil && d(llm.UserText(text)) }()
		}}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := h.RunAttempt(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ok := <-steered:
		if !ok {
			t.Error("the steer was refused while the turn ran")
		}
	case <-time.After(5 * time.Second):
		t.Error("the trigger never fired")
	}
	return res, last
}

func itemsOf(res *harness.Result) (roles []string, ids []string) {
	for _, it := range res.Items {
		roles = append(roles, string(it.Message.Role)+":"+it.Message.Text())
		ids = append(ids, it.MirrorID)
	}
	return roles, ids
}

func TestSteerInTurn(t *testing.T) {
	res, last := steerAttempt(t, "intool", "also check the README", func(ev agent.Event) bool {
		return ev.Type == agent.EventToolExecutionStart
	})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	roles, ids := itemsOf(res)
	want := []string{"user:take a nap", "assistant:", "toolResult:slept", "user:also check the README", "assistant:slept, and also check the README"}
	if !slices.Equal(roles, want) {
		t.Errorf("items %q, want %q", roles, want)
	}
	if n := len(ids); n != 5 || !strings.HasSuffix(ids[3], "/steer-u-steer") {
		t.Errorf("mirror ids %q: want the steer under its stable id", ids)
	}
	if last == nil || last(llm.UserText("too late")) {
		t.Error("a steer after the turn's result was accepted")
	}
}

func TestSteerAfterLastToolIsAnsweredBeforeTheAttemptEnds(t *testing.T) {
	res, last := steerAttempt(t, "late", "and the docs", func(ev agent.Event) bool {
		return ev.Type == agent.EventMessageEnd && ev.Message != nil && ev.Message.Text() == "first answer"
	})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	roles, _ := itemsOf(res)
	want := []string{"user:take a nap", "assistant:first answer", "user:and the docs", "assistant:second answer: and the docs"}
	if !slices.Equal(roles, want) {
		t.Errorf("items %q, want %q: the attempt must not end at the first result while a steer is pending", roles, want)
	}
	if res.Text() != "second answer: and the docs" {
		t.Errorf("result text %q", res.Text())
	}
	if res.Usage.Input != 20 {
		t.Errorf("usage input %d, want both results' 20", res.Usage.Input)
	}
	if last(llm.UserText("too late")) {
		t.Error("a steer after the final result was accepted")
	}
}
