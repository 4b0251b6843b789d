package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/tool"
)

var update = flag.Bool("update", false, "rewrite golden files")

// loop20 is a 20-round tool loop on faux: each round the model says a few
// words and calls the step tool, which reports progress and answers; then
// it answers.
func loop20(tb testing.TB) (*faux.Model, *tool.Registry) {
	steps := make([]faux.Step, 0, 21)
	for i := 1; i <= 20; i++ {
		steps = append(steps, faux.Reply(faux.Text(fmt.Sprintf("Round %d: running the next step of the plan.", i)),
			faux.ToolCall("step", map[string]any{"n": i, "note": "keep going"})))
	}
	steps = append(steps, faux.Say("All 20 steps are done."))
	m := faux.New(steps...)
	m.Now = func() int64 { return 1_700_000_000_000 }
	st := &tool.Func{ToolName: "step", ToolDescription: "Runs one step of the plan.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"},"note":{"type":"string"}},"required":["n"]}`),
		Run: func(_ context.Context, c tool.Call, update func(tool.Partial)) (tool.Result, error) {
			update(tool.Partial{Content: []llm.Content{llm.Text("working")}})
			return tool.TextResult("step " + string(c.Args) + " done"), nil
		}}
	return m, registry(tb, st)
}

func TestGoldenLoop20(t *testing.T) {
	m, tools := loop20(t)
	a := New(Config{Model: m, Tools: tools, SystemPrompt: "You are a test.", Now: func() int64 { return 1_700_000_000_001 }})
	var buf bytes.Buffer
	for ev, err := range a.Run(context.Background(), llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text("run the plan")}, Timestamp: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		line, err := json.Marshal(ev)
		if err != nil {
			t.Fatalf("encode %s: %v", ev.Type, err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	const path = "testdata/loop20.golden.jsonl"
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		got := strings.Split(buf.String(), "\n")
		exp := strings.Split(string(want), "\n")
		for i := range min(len(got), len(exp)) {
			if got[i] != exp[i] {
				t.Fatalf("event log differs from %s at line %d:\n got %s\nwant %s\n(run with -update if the change is intended)", path, i+1, got[i], exp[i])
			}
		}
		t.Fatalf("event log has %d lines, golden %d (run with -update if intended)", len(got), len(exp))
	}
	if m.Calls() != 21 {
		t.Errorf("model calls %d", m.Calls())
	}
	checkPairing(t, a.Messages())
}

func TestEventJSON(t *testing.T) {
	m, tools := loop20(t)
	a := New(Config{Model: m, Tools: tools})
	var lines [][]byte
	for ev := range a.Run(context.Background(), llm.UserText("go")) {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, b)
	}
	for _, l := range lines {
		var v map[string]json.RawMessage
		if err := json.Unmarshal(l, &v); err != nil {
			t.Fatal(err)
		}
		if string(v["v"]) != "1" {
			t.Errorf("line without v:1: %s", l)
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
	// Extension events carry their payload in data.
	b, _ := json.Marshal(Event{Type: "retry", Data: json.RawMessage(`{"attempt":2}`), Err: &llm.ProviderError{Reason: llm.ReasonRateLimit, Message: "429"}})
	if want := `{"v":1,"type":"retry","error":": rate_limit: 429","failure":"rate_limit","data":{"attempt":2}}`; string(b) != want {
		t.Errorf("extension event:\n got %s\nwant %s", b, want)
	}
}
