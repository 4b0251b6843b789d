package compact

import (
	"slices"
	"testing"

	"github.com/agentloop/agentloop/llm"
)

func TestSplitByTokenShare(t *testing.T) {
	x := func(n int) llm.Message { return user(rep("x", n*4)) } // n tokens
	tests := []struct {
		name  string
		msgs  []llm.Message
		parts int
		want  [][]int64
	}{
		{"empty", nil, 2, [][]int64{}},
		{"one part", stamp(x(10), x(10)), 1, [][]int64{{1, 2}}},
		{"parts capped by messages", stamp(x(10)), 5, [][]int64{{1}}},
		{"even halves", stamp(x(10), x(10), x(10), x(10)), 2, [][]int64{{1, 2}, {3, 4}}},
		{"three parts", stamp(x(10), x(10), x(10), x(10), x(10), x(10)), 3, [][]int64{{1, 2}, {3, 4}, {5, 6}}},
		{"a tool call keeps its results", stamp(x(10), assistant(rep("y", 40), call("a", "t", `{}`)),
			result("a", "t", rep("r", 40)), x(10)), 2, [][]int64{{1}, {2, 3, 4}}},
		{"split at the start of the tool turn once over target", stamp(x(1),
			assistant(rep("y", 40), call("a", "t", `{}`), call("b", "t", `{}`)),
			result("a", "t", rep("r", 40)), result("b", "t", rep("r", 40)), x(1)), 2, [][]int64{{1}, {2, 3, 4, 5}}},
		{"result without id clears pending", stamp(assistant("", call("a", "t", `{}`)),
			llm.Message{Role: llm.RoleToolResult}, x(10), x(10)), 2, [][]int64{{1, 2}, {3, 4}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := chunkStamps(SplitByTokenShare(tt.msgs, tt.parts))
			if !slices.EqualFunc(got, tt.want, slices.Equal) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			for _, c := range SplitByTokenShare(tt.msgs, tt.parts) {
				if len(c) == 0 {
					t.Error("empty chunk")
				}
			}
		})
	}
}

func TestChunkByMaxTokens(t *testing.T) {
	x := func(n int) llm.Message { return user(rep("x", n*4)) }
	tests := []struct {
		name string
		msgs []llm.Message
		max  int
		want [][]int64
	}{
		{"empty", nil, 100, [][]int64{}},
		{"all fit (limit 100/1.2 = 83)", stamp(x(40), x(40)), 100, [][]int64{{1, 2}}},
		{"margin splits", stamp(x(45), x(45)), 100, [][]int64{{1}, {2}}},
		{"oversized closes its chunk", stamp(x(10), x(500), x(10)), 100, [][]int64{{1}, {2}, {3}}},
		{"oversized first", stamp(x(500), x(10), x(10)), 100, [][]int64{{1}, {2, 3}}},
		{"zero max still progresses", stamp(x(1), x(1)), 0, [][]int64{{1}, {2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := chunkStamps(ChunkByMaxTokens(tt.msgs, tt.max))
			if !slices.EqualFunc(got, tt.want, slices.Equal) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAdaptiveChunkRatio(t *testing.T) {
	x := func(n int) llm.Message { return user(rep("x", n*4)) }
	tests := []struct {
		name   string
		msgs   []llm.Message
		window int
		want   float64
	}{
		{"empty", nil, 200_000, 0.4},
		{"small messages", []llm.Message{x(100), x(100)}, 200_000, 0.4},
		{"exactly a tenth is not over", []llm.Message{x(50_000 / 3)}, 200_000, 0.4}, // 16666×1.2 = 19999
		{"over a tenth lowers it", []llm.Message{x(20_000)}, 200_000, 0.4 - 0.24},
		{"floor", []llm.Message{x(100_000)}, 200_000, 0.15},
		{"no window", []llm.Message{x(10)}, 0, 0.4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := AdaptiveChunkRatio(tt.msgs, tt.window)
			if d := got - tt.want; d > 1e-9 || d < -1e-9 {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestIsOversizedForSummary(t *testing.T) {
	tests := []struct {
		tokens, window int
		want           bool
	}{
		{0, 1000, false},
		{416, 1000, false}, // 499.2 ≤ 500
		{417, 1000, true},  // 500.4 > 500
		{100_000, 200_000, true},
	}
	for _, tt := range tests {
		m := user(rep("x", tt.tokens*4))
		if got := IsOversizedForSummary(&m, tt.window); got != tt.want {
			t.Errorf("IsOversizedForSummary(%d tokens, %d) = %v", tt.tokens, tt.window, got)
		}
	}
}

func TestPrune(t *testing.T) {
	x := func(n int) llm.Message { return user(rep("x", n*4)) }
	t.Run("drops orphaned results with their calls' chunk", func(t *testing.T) {
		// A result without an id ends the call's turn, so the split may
		// leave the real result of call a in the next chunk: an orphan
		// once the first chunk goes.
		msgs := stamp(assistant("", call("a", "t", `{}`)), llm.Message{Role: llm.RoleToolResult}, x(1000),
			result("a", "t", "r"), x(1000))
		r := Prune(msgs, 2_000, 0.5, 2)
		if msg := checkPairing(r.Messages); msg != "" {
			t.Fatal(msg)
		}
		if r.DroppedMessages != len(r.Dropped)+1 {
			t.Errorf("dropped %d messages, listed %d: the orphan should count", r.DroppedMessages, len(r.Dropped))
		}
	})
	t.Run("defaults", func(t *testing.T) {
		r := Prune(stamp(x(10)), 1_000, 0, 0)
		if r.BudgetTokens != 500 || r.DroppedChunks != 0 || r.KeptTokens != 10 {
			t.Errorf("%+v", r)
		}
	})
	t.Run("one chunk left stops", func(t *testing.T) {
		r := Prune(stamp(x(5_000)), 1_000, 0.5, 2)
		if len(r.Messages) != 1 || r.DroppedChunks != 0 {
			t.Errorf("%+v", r)
		}
	})
}

func TestFindCutPoint(t *testing.T) {
	x := func(n int) llm.Message { return user(rep("x", n*4)) }
	tests := []struct {
		name string
		msgs []llm.Message
		keep int
		want int
	}{
		{"empty", nil, 10, 0},
		{"all within keep", []llm.Message{x(5), x(5)}, 100, 0},
		{"cut at a user message", []llm.Message{x(50), assistant(rep("a", 200)), x(50), assistant(rep("a", 200))}, 100, 2},
		{"never at a tool result: moves forward", []llm.Message{x(50), assistant("", call("a", "t", `{}`)),
			result("a", "t", rep("r", 400)), x(5), assistant(rep("a", 200))}, 100, 3},
		{"tool result at the end: moves back to its call", []llm.Message{x(50), assistant("", call("a", "t", `{}`)),
			result("a", "t", rep("r", 800))}, 100, 1},
		{"not inside a multi-result turn", []llm.Message{x(50), assistant("", call("a", "t", `{}`), call("b", "t", `{}`)),
			result("a", "t", rep("r", 400)), result("b", "t", rep("r", 400))}, 150, 1},
		{"assistant after results is a valid cut", []llm.Message{x(50), assistant("", call("a", "t", `{}`)),
			result("a", "t", rep("r", 40)), assistant(rep("a", 400))}, 100, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FindCutPoint(tt.msgs, tt.keep)
			if got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
			if msg := checkPairing(tt.msgs[got:]); got > 0 && msg != "" {
				t.Errorf("kept part breaks pairing: %s", msg)
			}
		})
	}
}
