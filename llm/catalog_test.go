package llm

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestBuiltinCatalogLookup(t *testing.T) {
	cases := []struct {
		provider, id string
		api          API
		window, max  int
		in, out      float64
		reasoning    bool
		images       bool
	}{
		{"anthropic", "claude-sonnet-4-5", APIAnthropicMessages, 200000, 64000, 3, 15, true, true},
		{"anthropic", "claude-sonnet-4-5-20250929", APIAnthropicMessages, 200000, 64000, 3, 15, true, true},
		{"anthropic", "claude-opus-4-6", APIAnthropicMessages, 1000000, 128000, 5, 25, true, true},
		{"anthropic", "claude-haiku-4-5", APIAnthropicMessages, 200000, 64000, 1, 5, true, true},
		{"anthropic", "CLAUDE-HAIKU-4-5", APIAnthropicMessages, 200000, 64000, 1, 5, true, true},
		{"openai", "gpt-5", APIOpenAICompletions, 400000, 128000, 1.25, 10, true, true},
		{"openai", "gpt-4.1", APIOpenAICompletions, 1047576, 32768, 2, 8, false, true},
		{"openai", "o3-mini", APIOpenAICompletions, 200000, 100000, 1.1, 4.4, true, false},
		{"openai", "gpt-5.1-codex", APIOpenAIResponses, 400000, 128000, 1.25, 10, true, true},
		{"google", "gemini-2.5-pro", APIGoogleGenerativeAI, 1048576, 65536, 1.25, 10, true, true},
		{"openrouter", "anthropic/claude-sonnet-4.5", APIOpenAICompletions, 1000000, 64000, 3, 15, true, true},
		{"groq", "llama-3.3-70b-versatile", APIOpenAICompletions, 131072, 32768, 0.59, 0.79, false, false},
		{"deepseek", "deepseek-v4-flash", APIOpenAICompletions, 1000000, 384000, 0.14, 0.28, true, false},
	}
	for _, c := range cases {
		t.Run(c.provider+"/"+c.id, func(t *testing.T) {
			m, ok := LookupModel(c.provider, c.id)
			if !ok {
				t.Fatalf("LookupModel(%q, %q) found nothing", c.provider, c.id)
			}
			if m.Provider != c.provider || m.API != c.api || m.ContextWindow != c.window || m.MaxTokens != c.max ||
				m.Cost.Input != c.in || m.Cost.Output != c.out || m.Reasoning != c.reasoning || m.AcceptsImages() != c.images {
				t.Errorf("got %+v", m)
			}
			if m.BaseURL != DefaultBaseURL(c.provider) {
				t.Errorf("BaseURL = %q, want %q", m.BaseURL, DefaultBaseURL(c.provider))
			}
		})
	}
	if _, ok := LookupModel("anthropic", "claude-9"); ok {
		t.Errorf("found a model that does not exist")
	}
	if _, ok := LookupModel("nobody", "gpt-5"); ok {
		t.Errorf("found a model under an unknown provider")
	}
}

// TestBuiltinEntriesAreSane guards the tables against typos: every entry
// has a name, a known API, limits that fit, and prices in range.
func TestBuiltinEntriesAreSane(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range BuiltinModels() {
		key := m.Provider + "/" + m.ID
		if seen[key] {
			t.Errorf("%s is listed twice", key)
		}
		seen[key] = true
		switch {
		case m.ID == "" || m.Name == "" || m.BaseURL == "":
			t.Errorf("%s: missing id, name or base URL: %+v", key, m)
		case !knownAPI(m.API):
			t.Errorf("%s: unknown api %q", key, m.API)
		case m.ContextWindow < 8192 || m.MaxTokens < 1024 || m.MaxTokens > m.ContextWindow:
			t.Errorf("%s: window %d, max output %d", key, m.ContextWindow, m.MaxTokens)
		case m.Cost.Input <= 0 || m.Cost.Output < m.Cost.Input || m.Cost.Output > 200:
			t.Errorf("%s: prices %+v", key, m.Cost)
		case m.Cost.CacheRead > m.Cost.Input:
			t.Errorf("%s: cache reads cost more than input: %+v", key, m.Cost)
		case m.API != DefaultAPI(m.Provider) && !(m.Provider == "openai" && m.API == APIOpenAIResponses):
			t.Errorf("%s: api %s, provider default %s", key, m.API, DefaultAPI(m.Provider))
		}
	}
	for _, p := range []string{"anthropic", "openai", "google", "openrouter", "groq", "deepseek"} {
		if len(BuiltinCatalog().Models(p)) == 0 {
			t.Errorf("no built-in models for %s", p)
		}
	}
}

func TestCatalogAddAndCopies(t *testing.T) {
	c := BuiltinCatalog()
	c.Add(ModelInfo{ID: "gpt-5", Provider: "openai", API: APIOpenAICompletions, ContextWindow: 1000, MaxTokens: 100, Input: []string{"text"}})
	if m, _ := c.Lookup("openai", "gpt-5"); m.ContextWindow != 1000 {
		t.Errorf("Add did not replace the entry: %+v", m)
	}
	if m, _ := LookupModel("openai", "gpt-5"); m.ContextWindow != 400000 {
		t.Errorf("a catalog's Add changed the built-in entries: %+v", m)
	}
	m, _ := c.Lookup("openai", "gpt-5")
	m.Input[0] = "changed"
	if again, _ := c.Lookup("openai", "gpt-5"); again.Input[0] != "text" {
		t.Errorf("Lookup hands out shared slices")
	}
	if got := strings.Join(c.Providers(), ","); got != "anthropic,deepseek,google,groq,openai,openrouter" {
		t.Errorf("Providers() = %s", got)
	}
	ms := c.Models("groq")
	for i := 1; i < len(ms); i++ {
		if ms[i-1].ID > ms[i].ID {
			t.Errorf("Models not sorted: %s before %s", ms[i-1].ID, ms[i].ID)
		}
	}
}

func TestCostFromCatalogPrices(t *testing.T) {
	m, _ := LookupModel("anthropic", "claude-sonnet-4-5")
	u := Usage{Input: 1000, Output: 500, CacheRead: 10000, CacheWrite: 2000}
	u.ApplyPrices(m.Cost)
	// 1000×3 + 500×15 + 10000×0.3 + 2000×3.75 per million = 0.021
	if math.Abs(u.Cost.Total-0.021) > 1e-12 {
		t.Errorf("cost %v, want 0.021", u.Cost.Total)
	}
}

func ExampleLookupModel() {
	m, ok := LookupModel("anthropic", "claude-sonnet-4-5")
	fmt.Println(ok, m.API, m.ContextWindow, m.MaxTokens, m.Cost.Input, m.Cost.Output)
	// Output: true anthropic-messages 200000 64000 3 15
}

func BenchmarkLookupModel(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_, _ = LookupModel("openai", "gpt-5-mini")
	}
}
