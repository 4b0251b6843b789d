package compact

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentloop/agentloop/llm"
)

func TestMaxToolResultChars(t *testing.T) {
	tests := []struct{ window, want int }{
		{0, 0},
		{16_000, 19_200},
		{32_000, 38_400},
		{33_333, 39_996},
		{33_334, 40_000},
		{128_000, 40_000},
		{2_000_000, 40_000},
	}
	for _, tt := range tests {
		if got := MaxToolResultChars(tt.window); got != tt.want {
			t.Errorf("MaxToolResultChars(%d) = %d, want %d", tt.window, got, tt.want)
		}
	}
}

func TestTruncateText(t *testing.T) {
	lines := func(n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteString("line ")
			b.WriteString(strings.Repeat("x", i%50))
			b.WriteByte('\n')
		}
		return b.String()
	}
	closing := "\n[showing lines 1-2000 of 9000; use offset=2001 to read on]"
	tests := []struct {
		name       string
		text       string
		max        int
		opts       TruncateOptions
		unchanged  bool
		minLen     int
		wantSuffix string
		wantNotice string
		wantNoTail bool
	}{
		{name: "within limit", text: rep("x", 100), max: 100, unchanged: true},
		{name: "empty", text: "", max: 0, unchanged: true},
		{name: "head and tail keep the closing notice", text: lines(3000) + closing, max: 10_000,
			wantSuffix: closing, wantNotice: "more characters truncated]"},
		{name: "min keep wins over a tiny max", text: rep("x", 10_000), max: 10, minLen: 2_000,
			wantNotice: "more characters truncated]"},
		{name: "no minimum: head only under 1000", text: rep("x", 5_000), max: 500, opts: TruncateOptions{MinKeep: -1},
			wantNoTail: true, wantNotice: "more characters truncated]"},
		{name: "min keep at least the text: unchanged", text: rep("x", 3_000), max: 1_000,
			opts: TruncateOptions{MinKeep: 5_000}, unchanged: true},
		{name: "custom notice", text: rep("x", 5_000), max: 300, opts: TruncateOptions{MinKeep: 250,
			Notice: func(int) string { return "\n\n[custom-truncated]" }}, minLen: 251, wantNotice: "[custom-truncated]"},
		{name: "multibyte text stays valid UTF-8", text: rep("é", 20_000), max: 5_000, wantNotice: "truncated]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, removed := TruncateText(tt.text, tt.max, tt.opts)
			if tt.unchanged {
				if got != tt.text || removed != 0 {
					t.Fatalf("changed: len %d removed %d", len(got), removed)
				}
				return
			}
			if removed <= 0 {
				t.Fatalf("removed %d, want > 0", removed)
			}
			if limit := max(tt.max, tt.minLen+len(tt.opts.notice(len(tt.text)))+4); len(got) > limit {
				t.Errorf("len %d > %d", len(got), limit)
			}
			if len(got) < tt.minLen {
				t.Errorf("len %d < min %d", len(got), tt.minLen)
			}
			if !strings.Contains(got, tt.wantNotice) {
				t.Errorf("no notice %q in %q", tt.wantNotice, tail(got))
			}
			if tt.opts.Notice == nil && !strings.Contains(got, TruncationNotice(removed)) {
				t.Errorf("notice does not state the %d removed characters", removed)
			}
			if tt.wantSuffix != "" && !strings.HasSuffix(got, tt.wantSuffix) {
				t.Errorf("tail lost: %q", tail(got))
			}
			if tt.wantNoTail && !strings.HasSuffix(got, "truncated]") {
				t.Errorf("expected head only, got tail %q", tail(got))
			}
			if !utf8.ValidString(got) {
				t.Error("result is not valid UTF-8")
			}
			if !strings.HasPrefix(tt.text, got[:min(len(got), 50)]) {
				t.Error("head is not the start of the text")
			}
		})
	}
}

func tail(s string) string { return s[max(0, len(s)-120):] }

func TestTruncateContent(t *testing.T) {
	img := llm.Image("aGk=", "image/png")
	content := []llm.Content{llm.Text(rep("a", 30_000)), img, llm.Text(rep("b", 10_000))}
	got, removed := TruncateContent(content, 20_000, TruncateOptions{})
	if removed == 0 {
		t.Fatal("nothing removed")
	}
	if len(got) != 3 || got[1].Type != llm.ContentImage {
		t.Fatalf("blocks changed: %+v", got)
	}
	a, b := len(got[0].Text), len(got[2].Text)
	if a+b > 20_000 || a < b {
		t.Errorf("shares %d + %d: want ≤ 20000, larger block keeps more", a, b)
	}
	if content[0].Text != rep("a", 30_000) {
		t.Error("input was modified")
	}
	same, n := TruncateContent(content[:2], 40_000, TruncateOptions{})
	if n != 0 || &same[0] != &content[0] {
		t.Error("content within the limit should come back as is")
	}
}

func TestToolResultTextChars(t *testing.T) {
	if n := ToolResultTextChars(&[]llm.Message{assistant("hello")}[0]); n != 0 {
		t.Errorf("assistant counted %d", n)
	}
	m := result("c", "t", "hello")
	if n := ToolResultTextChars(&m); n != 5 {
		t.Errorf("got %d, want 5", n)
	}
}

func TestReductionPotential(t *testing.T) {
	tests := []struct {
		name                               string
		lens                               []int
		max                                int
		count, oversized, single, agg, top int
	}{
		{"none", nil, 40_000, 0, 0, 0, 0, 0},
		{"one small", []int{1_000}, 40_000, 1, 0, 0, 0, 0},
		{"one oversized", []int{50_000}, 40_000, 1, 1, 10_000, 0, 10_000},
		{"aggregate over the cap", []int{18_000, 18_000, 18_000}, 40_000, 3, 0, 0, 14_000, 14_000},
		{"both", []int{50_000, 45_000}, 40_000, 2, 2, 15_000, 55_000, 55_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs := []llm.Message{user("u")}
			for i, n := range tt.lens {
				id := string(rune('a' + i))
				msgs = append(msgs, assistant("", call(id, "read", `{}`)), result(id, "read", rep("r", n)))
			}
			r := ReductionPotential(msgs, tt.max)
			if r.ToolResults != tt.count || r.Oversized != tt.oversized || r.SingleReducible != tt.single ||
				r.AggregateReducible != tt.agg || r.MaxReducible != tt.top {
				t.Errorf("got %+v", r)
			}
		})
	}
}

func TestCapToolResults(t *testing.T) {
	msgs := []llm.Message{user("go"), assistant("", call("a", "read", `{}`)), result("a", "read", rep("r", 50_000)),
		assistant("", call("b", "read", `{}`)), result("b", "read", "small")}
	out, recs := CapToolResults(msgs, 38_400)
	if len(recs) != 1 || recs[0].ToolCallID != "a" || recs[0].Index != 2 || recs[0].Reason != "cap" {
		t.Fatalf("records %+v", recs)
	}
	if n := ToolResultTextChars(&out[2]); n > 38_400 || n < 30_000 || recs[0].KeptChars != n || recs[0].OriginalChars != 50_000 {
		t.Errorf("kept %d chars, record %+v", n, recs[0])
	}
	if ToolResultTextChars(&msgs[2]) != 50_000 {
		t.Error("input modified")
	}
	same, none := CapToolResults(msgs[3:], 38_400)
	if none != nil || &same[0] != &msgs[3] {
		t.Error("nothing to cap should return the input")
	}
}

func TestShrinkToolResults(t *testing.T) {
	msgs := []llm.Message{user("go"),
		assistant("", call("a", "read", `{}`)), result("a", "read", rep("r", 30_000)),
		assistant("", call("b", "read", `{}`)), result("b", "read", rep("r", 10_000)),
		assistant("", call("c", "read", `{}`)), result("c", "read", rep("r", 1_000))}
	tests := []struct {
		name    string
		need    int
		ok      bool
		changed []string
	}{
		{"nothing needed", 0, true, nil},
		{"largest first", 15_000, true, []string{"a"}},
		{"both large ones", 30_000, true, []string{"a", "b"}},
		{"impossible above the minimum", 38_000, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, recs, ok := ShrinkToolResults(msgs, tt.need, 0)
			if ok != tt.ok {
				t.Fatalf("ok = %v", ok)
			}
			var ids []string
			for _, r := range recs {
				ids = append(ids, r.ToolCallID)
			}
			if strings.Join(ids, ",") != strings.Join(tt.changed, ",") {
				t.Errorf("changed %v, want %v", ids, tt.changed)
			}
			saved := 0
			for i := range msgs {
				saved += ToolResultTextChars(&msgs[i]) - ToolResultTextChars(&out[i])
			}
			if ok && saved < tt.need {
				t.Errorf("saved %d < need %d", saved, tt.need)
			}
			if msg := checkPairing(out); msg != "" {
				t.Error(msg)
			}
		})
	}
}
