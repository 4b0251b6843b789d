package runner_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/compact"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/tool"
)

var update = flag.Bool("update", false, "rewrite golden files (and the run in docs/protocol.md)")

const (
	goldenPath = "testdata/run.golden.jsonl"
	docsPath   = "../docs/protocol.md"
	// The run in docs/protocol.md sits between these lines.
	docsBegin = "<!-- golden run: runner/testdata/run.golden.jsonl -->\n```jsonl\n"
	docsEnd   = "```\n<!-- end of golden run -->"
)

// goldenRun is a whole run on the scripted model: the history is over the
// context budget (compaction with a summary before the first call), the
// first call is refused as overloaded (a retry after a backoff), the second
// calls a tool, the third answers.
func goldenRun(t *testing.T) []byte {
	t.Helper()
	now := func() int64 { return 1_700_000_000_000 }
	m := faux.New(
		faux.Refuse(llm.ReasonOverloaded, 529, "overloaded"),
		faux.Call("Checking <a> & <b>.", "echo", map[string]string{"text": "x > f && y"}),
		faux.Say("Done: x > f && y."),
	)
	m.Now = now
	echo := &tool.Func{ToolName: "echo", ToolDescription: "Echoes text.",
		Parameters: []byte(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
		Run: func(_ context.Context, c tool.Call, _ func(tool.Partial)) (tool.Result, error) {
			return tool.TextResult(string(c.Args)), nil
		}}
	tools, err := tool.NewRegistry(echo)
	if err != nil {
		t.Fatal(err)
	}
	var history []llm.Message
	for i := range 10 {
		u := llm.UserText(strings.Repeat("an earlier question ", 200))
		u.Timestamp = int64(i)
		a := llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text(strings.Repeat("an earlier answer ", 220))}, StopReason: llm.StopReasonStop, Timestamp: int64(i)}
		history = append(history, u, a)
	}
	summariser := faux.New(faux.Say("## Goal\nEcho a text."))
	summariser.Now = now
	summariser.Repeat = true
	info := m.ModelInfo()
	info.ContextWindow = 16000
	r, err := runner.New(runner.Config{Clock: instantClock{}, Now: now,
		Compaction: &runner.CompactionSpec{Summarizer: &compact.Summarizer{Model: summariser}, ReserveTokens: 500}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h, err := r.Start(t.Context(), runner.Request{Prompt: "echo it", History: history, Model: m, Info: info, Tools: tools,
		Retry: &runner.RetryPolicy{Jitter: func() float64 { return 0 }}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for ev, err := range h.Events() {
		if err != nil {
			t.Fatal(err)
		}
		line, err := llm.MarshalJSON(ev)
		if err != nil {
			t.Fatalf("encode %s: %v", ev.Type, err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	// The run id is new on every run.
	return regexp.MustCompile(`"runId":"run-[0-9a-f-]+"`).ReplaceAll(buf.Bytes(), []byte(`"runId":"run-1"`))
}

// The whole run's stream of protocol v2 lines is pinned, here and in
// docs/protocol.md.
func TestGoldenRun(t *testing.T) {
	got := goldenRun(t)
	docs, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	i, j := bytes.Index(docs, []byte(docsBegin)), bytes.Index(docs, []byte(docsEnd))
	if *update {
		if err := os.WriteFile(goldenPath, got, 0o644); err != nil {
			t.Fatal(err)
		}
		if i >= 0 && j > i {
			docs = append(append(append([]byte{}, docs[:i+len(docsBegin)]...), got...), docs[j:]...)
			if err := os.WriteFile(docsPath, docs, 0o644); err != nil {
				t.Fatal(err)
			}
			i, j = bytes.Index(docs, []byte(docsBegin)), bytes.Index(docs, []byte(docsEnd))
		}
	}
	want, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for k := range min(len(g), len(w)) {
			if g[k] != w[k] {
				t.Fatalf("the run differs from %s at line %d:\n got %s\nwant %s\n(run with -update if the change is intended)", goldenPath, k+1, g[k], w[k])
			}
		}
		t.Fatalf("the run has %d lines, golden %d (run with -update if intended)", len(g), len(w))
	}
	if i < 0 || j < i || !bytes.Equal(docs[i+len(docsBegin):j], want) {
		t.Errorf("docs/protocol.md does not show %s between its golden-run markers (run with -update)", goldenPath)
	}
	for _, typ := range []string{"run_start", "attempt_start", "auto_compaction_end", "retry", "tool_execution_end", "run_end"} {
		if !bytes.Contains(got, []byte(`"type":"`+typ+`"`)) {
			t.Errorf("the golden run has no %s", typ)
		}
	}
}
