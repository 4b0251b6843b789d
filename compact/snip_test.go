package compact

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
)

func TestSnip(t *testing.T) {
	x := func(n int) llm.Message { return user(rep("x", n*4)) }
	turn := func(id string) []llm.Message {
		return []llm.Message{x(100), assistant("", call(id, "t", `{}`)), result(id, "t", rep("r", 400)), assistant(rep("a", 40))}
	}
	var long []llm.Message
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
		long = append(long, turn(id)...)
	}
	long = stamp(long...)
	tests := []struct {
		name        string
		msgs        []llm.Message
		head, tail  int
		wantRemoved int
		wantStamps  []int64
	}{
		{"too short to snip", stamp(x(10), assistant("hi")), 0, 0, 0, []int64{1, 2}},
		{"keeps first turn and last turn", long, 1, 1, 16, []int64{1, 2, 3, 4, 21, 22, 23, 24}},
		{"tail of two turns", long, 1, 250, 12, []int64{1, 2, 3, 4, 17, 18, 19, 20, 21, 22, 23, 24}},
		{"head and tail overlap", long, 500, 500, 0, stamps(long)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, removed := Snip(tt.msgs, tt.head, tt.tail)
			if removed != tt.wantRemoved || !slices.Equal(stamps(got), tt.wantStamps) {
				t.Fatalf("removed %d %v; want %d %v", removed, stamps(got), tt.wantRemoved, tt.wantStamps)
			}
			if msg := checkPairing(got); msg != "" {
				t.Error(msg)
			}
			if removed > 0 {
				note := got[4].Content[0].Text
				if !strings.Contains(note, "removed") || got[4].Role != llm.RoleUser {
					t.Errorf("no note at the cut: %q", note)
				}
				if len(tt.msgs[20].Content) != 1 {
					t.Error("input message modified")
				}
			}
		})
	}
}

func TestMicrocompact(t *testing.T) {
	big := rep("r", 5_000)
	msgs := []llm.Message{user("go"),
		assistant("", call("a", "read", `{}`)), result("a", "read", big),
		assistant("", call("b", "read", `{}`)), result("b", "read", "small"),
		assistant("", call("c", "read", `{}`)), result("c", "read", big),
		assistant("", call("d", "read", `{}`)), result("d", "read", big)}
	tests := []struct {
		name    string
		opts    MicrocompactOptions
		cleared []string
	}{
		{"keep the newest two", MicrocompactOptions{Keep: 2}, []string{"a"}},
		{"keep one", MicrocompactOptions{Keep: 1}, []string{"a", "c"}},
		{"small ones too when the bar is low", MicrocompactOptions{Keep: 1, MinChars: 1}, []string{"a", "b", "c"}},
		{"default keeps three", MicrocompactOptions{}, []string{"a"}},
		{"fewer results than keep", MicrocompactOptions{Keep: 10}, nil},
		{"token bound", MicrocompactOptions{Keep: 3, KeepTokens: 1_500}, []string{"a", "c"}},
		{"the newest is kept whatever its size", MicrocompactOptions{Keep: 3, KeepTokens: 1}, []string{"a", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, recs := Microcompact(msgs, tt.opts)
			var ids []string
			for _, r := range recs {
				ids = append(ids, r.ToolCallID)
				m := out[r.Index]
				if !strings.Contains(m.Text(), r.ToolCallID) || !strings.Contains(m.Text(), "cleared") {
					t.Errorf("tombstone %q does not name call %s", m.Text(), r.ToolCallID)
				}
				if r.Reason != "microcompact" || r.KeptChars != len(m.Text()) {
					t.Errorf("record %+v", r)
				}
			}
			if !slices.Equal(ids, tt.cleared) {
				t.Errorf("cleared %v, want %v", ids, tt.cleared)
			}
			if msg := checkPairing(out); msg != "" {
				t.Error(msg)
			}
			if msgs[2].Text() != big {
				t.Error("input modified")
			}
			again, more := Microcompact(out, tt.opts)
			if len(more) != 0 || len(again) != len(out) {
				t.Errorf("second pass cleared %d more", len(more))
			}
		})
	}
}
