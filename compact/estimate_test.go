package compact

import (
	"errors"
	"testing"

	"github.com/agentloop/agentloop/llm"
)

func TestMessageTokens(t *testing.T) {
	img := llm.Image("aGVsbG8=", "image/png")
	tests := []struct {
		name string
		msg  llm.Message
		want int
	}{
		{"empty user", llm.Message{Role: llm.RoleUser}, 0},
		{"user text rounds up", user("abcde"), 2},
		{"user text exact", user(rep("x", 400)), 100},
		{"user image counts 4800 chars", llm.Message{Role: llm.RoleUser, Content: []llm.Content{img}}, 1200},
		{"assistant text and thinking", llm.Message{Role: llm.RoleAssistant,
			Content: []llm.Content{llm.Text(rep("a", 8)), llm.Thinking(rep("t", 8), "sig")}}, 4},
		{"assistant tool call: name plus JSON", assistant(rep("y", 500), call("c1", "test_tool", `{}`)), 128},
		{"tool result text", result("c1", "t", "result"), 2},
		{"tool result image", llm.Message{Role: llm.RoleToolResult, Content: []llm.Content{llm.Text("ab"), img}}, 1201},
		{"details are not counted", llm.Message{Role: llm.RoleToolResult, Content: []llm.Content{llm.Text("abcd")},
			Details: []byte(`{"big":"` + rep("z", 1000) + `"}`)}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MessageTokens(&tt.msg); got != tt.want {
				t.Errorf("MessageTokens = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestEstimate(t *testing.T) {
	tools := []llm.ToolSpec{{Name: "read", Description: rep("d", 36), Parameters: []byte(`{"type":"object"}`)}} // 4+36+17=57 chars
	withUsage := assistant(rep("a", 40))
	withUsage.Usage = &llm.Usage{Input: 900, Output: 100, Total: 1000}
	failed := withUsage.Clone()
	failed.StopReason = llm.StopReasonError
	tests := []struct {
		name       string
		p          Prompt
		want       int
		reported   int
		usageIndex int
	}{
		{"empty", Prompt{}, 0, 0, -1},
		{"system prompt counted", Prompt{System: rep("s", 400)}, 120, 0, -1},
		{"tool schemas counted", Prompt{Tools: tools}, 18, 0, -1},                     // ceil(57/4)=15, ×1.2 = 18
		{"margin rounds up", Prompt{Messages: []llm.Message{user("abcd")}}, 2, 0, -1}, // 1 × 1.2 → 2
		{"all parts", Prompt{System: rep("s", 400), Tools: tools, Messages: []llm.Message{user(rep("u", 400))}}, 258, 0, -1},
		{"usage of last assistant plus what came after", Prompt{System: rep("s", 4000),
			Messages: []llm.Message{user(rep("u", 4000)), withUsage, user(rep("x", 400))}}, 1000 + 120, 1000, 1},
		{"usage before UsageFrom is not trusted", Prompt{UsageFrom: 2,
			Messages: []llm.Message{user(rep("u", 4000)), withUsage, user(rep("x", 400))}}, 1200 + 12 + 120, 0, -1},
		{"negative UsageFrom trusts none", Prompt{UsageFrom: -1, Messages: []llm.Message{withUsage}}, 12, 0, -1},
		{"failed assistant's usage is not used", Prompt{Messages: []llm.Message{withUsage, failed}}, 24, 0, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Estimate(tt.p)
			if got.Tokens != tt.want || got.Reported != tt.reported || got.UsageIndex != tt.usageIndex {
				t.Errorf("Estimate = %+v, want tokens %d reported %d usage index %d", got, tt.want, tt.reported, tt.usageIndex)
			}
		})
	}
}

func TestCheckWindow(t *testing.T) {
	tests := []struct {
		window  int
		blocked bool
		warned  bool
	}{
		{0, true, false},
		{8_000, true, false},
		{15_999, true, false},
		{16_000, false, true},
		{24_000, false, true},
		{31_999, false, true},
		{32_000, false, false},
		{200_000, false, false},
	}
	for _, tt := range tests {
		warn, err := CheckWindow(tt.window)
		if (err != nil) != tt.blocked || (warn != "") != tt.warned {
			t.Errorf("CheckWindow(%d) = %q, %v; want blocked %v warned %v", tt.window, warn, err, tt.blocked, tt.warned)
		}
		if err != nil && !errors.Is(err, ErrWindowTooSmall) {
			t.Errorf("CheckWindow(%d) error %v is not ErrWindowTooSmall", tt.window, err)
		}
	}
}

func TestNewBudget(t *testing.T) {
	tests := []struct {
		window, setting                   int
		reserve, keepRecent, promptBudget int
	}{
		{16_000, 0, 8_000, 4_000, 8_000},
		{16_384, 0, 8_384, 4_096, 8_000},
		{32_000, 0, 20_000, 8_000, 12_000},
		{32_768, 0, 20_000, 8_192, 12_768},
		{128_000, 0, 20_000, 20_000, 108_000},
		{200_000, 0, 20_000, 20_000, 180_000},
		{1_000_000, 0, 20_000, 20_000, 980_000},
		{2_000_000, 0, 20_000, 20_000, 1_980_000},
		{200_000, 50_000, 50_000, 20_000, 150_000}, // a setting above the floor is kept
		{200_000, 10_000, 20_000, 20_000, 180_000}, // below the floor is raised
		{32_000, 50_000, 24_000, 8_000, 8_000},     // capped so the prompt keeps 8,000
	}
	for _, tt := range tests {
		b := NewBudget(tt.window, tt.setting)
		if b.Reserve != tt.reserve || b.KeepRecent != tt.keepRecent || b.PromptBudget() != tt.promptBudget {
			t.Errorf("NewBudget(%d, %d) = reserve %d keep %d prompt %d; want %d %d %d", tt.window, tt.setting,
				b.Reserve, b.KeepRecent, b.PromptBudget(), tt.reserve, tt.keepRecent, tt.promptBudget)
		}
	}
}

func TestDecideRoute(t *testing.T) {
	tests := []struct {
		name      string
		overflow  int
		reducible int
		want      Route
		need      int
	}{
		{"no overflow", 0, 100_000, RouteFits, 0},
		{"nothing to truncate", 100, 0, RouteCompact, 2_448},
		{"small overflow: need is overflow + 2048", 100, 2_448, RouteTruncate, 2_448},
		{"one short of need", 100, 2_447, RouteCompactThenTruncate, 2_448},
		{"large overflow: need is 1.5 × overflow", 10_000, 60_000, RouteTruncate, 60_000},
		{"large overflow, not enough", 10_000, 59_999, RouteCompactThenTruncate, 60_000},
		{"crossover at 4096 chars", 1_024, 6_144, RouteTruncate, 6_144},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, need := DecideRoute(tt.overflow, tt.reducible)
			if got != tt.want || need != tt.need {
				t.Errorf("DecideRoute(%d, %d) = %s, %d; want %s, %d", tt.overflow, tt.reducible, got, need, tt.want, tt.need)
			}
		})
	}
}

func TestPrecheck(t *testing.T) {
	b := Budget{Window: 16_000, Reserve: 8_000} // prompt budget 8,000 tokens
	big := rep("r\n", 7_500)                    // 15,000 chars
	tests := []struct {
		name string
		msgs []llm.Message
		want Route
	}{
		{"fits", []llm.Message{user("hello")}, RouteFits},
		{"text only over budget", []llm.Message{user(rep("u", 40_000))}, RouteCompact},
		{"tool results can give it back", []llm.Message{user("go"),
			assistant("", call("a", "read", `{}`)), result("a", "read", big),
			assistant("", call("b", "read", `{}`)), result("b", "read", big)}, RouteTruncate},
		{"tool results help but not enough", []llm.Message{user(rep("u", 30_000)),
			assistant("", call("a", "read", `{}`)), result("a", "read", rep("r", 8_000)),
			assistant("", call("b", "read", `{}`)), result("b", "read", rep("r", 8_000)),
			assistant("", call("c", "read", `{}`)), result("c", "read", rep("r", 8_000))}, RouteCompactThenTruncate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Precheck(Prompt{Messages: tt.msgs}, b)
			if d.Route != tt.want {
				t.Errorf("route %s, want %s (%+v)", d.Route, tt.want, d)
			}
			if d.PromptBudget != 8_000 {
				t.Errorf("prompt budget %d, want 8000", d.PromptBudget)
			}
		})
	}
}
