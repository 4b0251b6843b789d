package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const treeHeader = `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}` + "\n"

func treeLine(id, parent, role, text string) string {
	p := "null"
	if parent != "" {
		p = `"` + parent + `"`
	}
	return `{"type":"message","id":"` + id + `","parentId":` + p + `,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"` + role +
		`","content":[{"type":"text","text":"` + text + `"}],"timestamp":1}}` + "\n"
}

func writeTree(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, []byte(treeHeader+strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func contextTexts(tr *Transcript) []string {
	var out []string
	for _, m := range tr.Context("").Messages {
		for _, c := range m.Content {
			out = append(out, string(m.Role)+":"+c.Text)
		}
	}
	return out
}

// Issue 17.8: a self-referencing parent, a cycle of parents and a repeated
// entry id each change the context; loading says so, naming the problem,
// and sessions repair makes the file a tree again.
func TestTreeProblemsWarnedAndRepaired(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		warn  string
		want  []string // the context after repair
	}{{
		name: "self parent",
		lines: []string{treeLine("u1", "", "user", "one"), treeLine("a1", "u1", "assistant", "two"),
			treeLine("u2", "u2", "user", "three")},
		warn: "entry u2 names itself as its parent",
		want: []string{"user:one", "assistant:two", "user:three"},
	}, {
		name: "cycle",
		lines: []string{treeLine("u1", "a1", "user", "one"), treeLine("a1", "u1", "assistant", "two"),
			treeLine("u2", "a1", "user", "three")},
		warn: "form a cycle of parents",
		want: []string{"user:one", "assistant:two", "user:three"},
	}, {
		name: "duplicate ids",
		lines: []string{treeLine("u1", "", "user", "one"), treeLine("a1", "u1", "assistant", "two"),
			treeLine("u1", "a1", "user", "three"), treeLine("a2", "u1", "assistant", "four")},
		warn: "entry id u1 is used by 2 entries",
		want: []string{"user:one", "assistant:two", "user:three", "assistant:four"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeTree(t, tt.lines...)
			tr, err := LoadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if w := strings.Join(tr.Warnings, "\n"); !strings.Contains(w, tt.warn) || !strings.Contains(w, "sessions repair") {
				t.Errorf("warnings %q, want one naming %q and the repair", tr.Warnings, tt.warn)
			}
			rep, err := RepairFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Changed() || rep.Backup == "" {
				t.Fatalf("repair changed nothing: %+v", rep)
			}
			tr, err = LoadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(tr.Warnings) != 0 {
				t.Errorf("warnings after repair: %q", tr.Warnings)
			}
			if got := contextTexts(tr); strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("context after repair %q, want %q", got, tt.want)
			}
			if rep, err := RepairFile(path); err != nil || rep.Changed() {
				t.Errorf("second repair: %+v, %v", rep, err)
			}
		})
	}
}

// A cycle no longer repeats entries in the context before repair.
func TestPathStopsAtCycle(t *testing.T) {
	path := writeTree(t, treeLine("u1", "a1", "user", "one"), treeLine("a1", "u1", "assistant", "two"))
	tr, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.Path(tr.Leaf); len(got) != 2 {
		t.Errorf("path of %d entries through a 2-cycle", len(got))
	}
}

// Issue 17.3: an aborted assistant entry with tool calls and no results (a
// second Ctrl-C) gets synthetic error results in the file, after the
// assistant entry and before what followed it.
func TestRepairFileAddsMissingResults(t *testing.T) {
	aborted := `{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"assistant",` +
		`"content":[{"type":"toolCall","id":"call_1","name":"bash","arguments":{"command":"sleep 30"}},` +
		`{"type":"toolCall","id":"call_2","name":"ls","arguments":{"path":"."}}],"stopReason":"aborted","timestamp":1}}` + "\n"
	answered := `{"type":"message","id":"r2","parentId":"a1","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"toolResult",` +
		`"toolCallId":"call_2","toolName":"ls","content":[{"type":"text","text":"ok"}],"timestamp":1}}` + "\n"
	path := writeTree(t, treeLine("u1", "", "user", "go"), aborted, answered, treeLine("u2", "r2", "user", "again"))
	rep, err := RepairFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.AddedResults) != 1 || rep.AddedResults[0] != "call_1" {
		t.Fatalf("repair %+v, want one result added for call_1", rep)
	}
	tr, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	msgs := tr.Context("").Messages
	if err := CheckPairing(msgs); err != nil {
		t.Fatal(err)
	}
	var shape []string
	for _, m := range msgs {
		shape = append(shape, string(m.Role)+":"+m.ToolCallID)
	}
	if got := strings.Join(shape, " "); got != "user: assistant: toolResult:call_1 toolResult:call_2 user:" {
		t.Errorf("context %s", got)
	}
	if r := msgs[2]; !r.IsError || r.Content[0].Text != SyntheticResultText || r.ToolName != "bash" {
		t.Errorf("synthetic result %+v", r)
	}
	if rep, err := RepairFile(path); err != nil || rep.Changed() {
		t.Errorf("second repair: %+v, %v", rep, err)
	}
}
