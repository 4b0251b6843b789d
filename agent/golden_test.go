package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/runner"
)

var update = flag.Bool("update", false, "rewrite golden files")

// encode runs seq to its end and writes its events as the protocol does
// (runner.Event is the one encoder), numbered from 1, each while it is
// valid.
func encode(tb testing.TB, seq func(func(agent.Event, error) bool)) []byte {
	var buf bytes.Buffer
	n := int64(0)
	for ev, err := range seq {
		if err != nil {
			tb.Fatal(err)
		}
		n++
		line, err := json.Marshal(runner.Event{Type: ev.Type, Seq: n, RunID: "loop20", Agent: &ev})
		if err != nil {
			tb.Fatalf("encode %s: %v", ev.Type, err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

func TestGoldenLoop20(t *testing.T) {
	m, tools := agent.Loop20(t)
	a := agent.New(agent.Config{Model: m, Tools: tools, SystemPrompt: "You are a test.", Now: func() int64 { return 1_700_000_000_001 }})
	got := encode(t, a.Run(context.Background(), llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text("run the plan")}, Timestamp: 1}))
	const path = "testdata/loop20.golden.jsonl"
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		g := strings.Split(string(got), "\n")
		w := strings.Split(string(want), "\n")
		for i := range min(len(g), len(w)) {
			if g[i] != w[i] {
				t.Fatalf("event log differs from %s at line %d:\n got %s\nwant %s\n(run with -update if the change is intended)", path, i+1, g[i], w[i])
			}
		}
		t.Fatalf("event log has %d lines, golden %d (run with -update if intended)", len(g), len(w))
	}
	if m.Calls() != 21 {
		t.Errorf("model calls %d", m.Calls())
	}
}

func TestEventJSON(t *testing.T) {
	m, tools := agent.Loop20(t)
	a := agent.New(agent.Config{Model: m, Tools: tools})
	for _, l := range bytes.Split(bytes.TrimSpace(encode(t, a.Run(context.Background(), llm.UserText("go")))), []byte("\n")) {
		var v map[string]json.RawMessage
		if err := json.Unmarshal(l, &v); err != nil {
			t.Fatal(err)
		}
		if string(v["v"]) != "2" {
			t.Errorf("line without v:2: %s", l)
		}
		switch typ := strings.Trim(string(v["type"]), `"`); typ {
		case "message_update":
			if _, ok := v["message"]; ok {
				t.Errorf("an update repeats the message: %s", l)
			}
			if _, ok := v["event"]; !ok {
				t.Errorf("an update without its event type: %s", l)
			}
		case "turn_end", "agent_end":
			if _, ok := v["message"]; ok {
				t.Errorf("%s repeats a message: %s", typ, l)
			}
		case "tool_execution_end":
			if _, ok := v["result"]; !ok {
				t.Errorf("tool end without result: %s", l)
			}
		}
	}
	// The stop chain's events carry their numbers beside the envelope.
	b, _ := json.Marshal(runner.Event{Type: agent.EventRetryReset, Seq: 3, RunID: "r", Agent: &agent.Event{Type: agent.EventRetryReset,
		Reason: agent.ContinueMaxTokens, MaxTokens: 64000, Err: &llm.ProviderError{Reason: llm.ReasonRateLimit, Message: "429"}}})
	if want := `{"v":2,"type":"retry_reset","seq":3,"runId":"r","reason":"max_tokens","maxTokens":64000,"error":": rate_limit: 429","failure":"rate_limit"}`; string(b) != want {
		t.Errorf("retry_reset:\n got %s\nwant %s", b, want)
	}
}
