package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

const sampleModelsFile = `{
  "providers": {
    "local": {
      "baseUrl": "http://127.0.0.1:8080/v1",
      "api": "openai-completions",
      "apiKey": "LOCAL_KEY",
      "headers": {"X-Team": "infra"},
      "compat": {"maxTokensField": "max_tokens"},
      "profiles": [{"id": "work", "apiKey": "KEY_A"}, {"id": "spare", "apiKey": "!echo spare-key"}],
      "models": [
        {"id": "qwen3", "contextWindow": 32768, "maxTokens": 4096,
         "cost": {"input": 0.1, "output": 0.2, "cacheRead": 0, "cacheWrite": 0},
         "reasoning": true, "input": ["text", "image"], "compat": {"supportsStrictMode": false},
         "headers": {"X-Model": "q"}},
        {"id": "tiny"}
      ]
    },
    "anthropic": {"apiKey": "WORK_ANTHROPIC_KEY"},
    "openrouter": {"models": [{"id": "my/model", "contextWindow": 64000}]}
  }
}`

func TestParseModelsFile(t *testing.T) {
	f, err := ParseModelsFile("models.json", []byte(sampleModelsFile))
	if err != nil {
		t.Fatal(err)
	}
	qwen, ok := f.Model("local", "qwen3")
	if !ok {
		t.Fatal("qwen3 not found")
	}
	// No name: the id, as pi names it.
	want := ModelInfo{ID: "qwen3", Name: "qwen3", Provider: "local", API: APIOpenAICompletions, BaseURL: "http://127.0.0.1:8080/v1",
		ContextWindow: 32768, MaxTokens: 4096, Cost: Prices{Input: 0.1, Output: 0.2}, Reasoning: true, Input: []string{"text", "image"}}
	if fmt.Sprint(qwen) != fmt.Sprint(want) {
		t.Errorf("qwen3 = %+v\nwant    %+v", qwen, want)
	}
	tiny, _ := f.Model("local", "tiny")
	if tiny.ContextWindow != DefaultContextWindow || tiny.MaxTokens != DefaultMaxTokens || strings.Join(tiny.Input, ",") != "text" || tiny.API != APIOpenAICompletions {
		t.Errorf("defaults not applied: %+v", tiny)
	}
	or, _ := f.Model("openrouter", "my/model")
	if or.BaseURL != OpenRouterBaseURL || or.API != APIOpenAICompletions || or.ContextWindow != 64000 {
		t.Errorf("built-in provider defaults not applied: %+v", or)
	}
	p := f.Provider("local")
	if len(p.Profiles) != 2 || p.Profiles[0].ID != "work" || p.Profiles[1].APIKey != "!echo spare-key" {
		t.Errorf("profiles = %+v", p.Profiles)
	}
	layers := p.CompatLayers("qwen3")
	if len(layers) != 2 || !json.Valid(layers[0]) || !strings.Contains(string(layers[1]), "supportsStrictMode") {
		t.Errorf("compat layers = %s", layers)
	}
	if h := p.ModelHeaders("qwen3"); h["X-Team"] != "infra" || h["X-Model"] != "q" {
		t.Errorf("headers = %v", h)
	}
	if h := p.ModelHeaders("tiny"); len(h) != 1 {
		t.Errorf("headers of tiny = %v", h)
	}
	if f.Provider("anthropic").APIKey != "WORK_ANTHROPIC_KEY" {
		t.Errorf("key-only provider entry lost")
	}
	c := BuiltinCatalog()
	f.AddTo(c)
	if _, ok := c.Lookup("local", "qwen3"); !ok {
		t.Errorf("AddTo did not add the file's models")
	}
	if _, ok := c.Lookup("openai", "gpt-5"); !ok {
		t.Errorf("AddTo lost the built-in models")
	}
}

func TestParseModelsFileErrors(t *testing.T) {
	cases := []struct {
		name, data string
		want       []string
	}{
		{"syntax", "{\n  \"providers\": {\n    \"x\": {,}\n  }\n}", []string{"bad.json", "line 3", "invalid JSON"}},
		{"empty", "", []string{"bad.json", "empty"}},
		{"wrong type", `{"providers": {"x": {"models": {"id": "a"}}}}`, []string{"bad.json", "models", "an array"}},
		{"unknown api", `{"providers": {"x": {"baseUrl": "http://h", "api": "openai-chat", "models": [{"id": "m"}]}}}`, []string{"bad.json", `provider "x"`, `unknown api "openai-chat"`, "openai-completions"}},
		{"unknown model api", `{"providers": {"x": {"baseUrl": "http://h", "api": "openai-completions", "models": [{"id": "m", "api": "grpc"}]}}}`, []string{`model "m"`, `unknown api "grpc"`}},
		{"no id", `{"providers": {"x": {"baseUrl": "http://h", "api": "openai-completions", "models": [{"name": "m"}]}}}`, []string{"model #1 has no id"}},
		{"twice", `{"providers": {"x": {"baseUrl": "http://h", "api": "openai-completions", "models": [{"id": "m"}, {"id": "m"}]}}}`, []string{`model "m" is listed twice`}},
		{"no base url", `{"providers": {"x": {"api": "openai-completions", "models": [{"id": "m"}]}}}`, []string{`provider "x": no baseUrl`}},
		{"no api", `{"providers": {"x": {"baseUrl": "http://h", "models": [{"id": "m"}]}}}`, []string{"no api"}},
		{"slash in name", `{"providers": {"a/b": {}}}`, []string{`"a/b"`, "slashes"}},
		{"profile without key", `{"providers": {"x": {"profiles": [{"id": "p"}]}}}`, []string{`profile "p" has no apiKey`}},
		{"trailing text", `{"providers": {}} {}`, []string{"after the JSON object"}},
		{"negative window", `{"providers": {"x": {"baseUrl": "http://h", "api": "openai-completions", "models": [{"id": "m", "contextWindow": -1}]}}}`, []string{"must be positive"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseModelsFile("bad.json", []byte(c.data))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestModelsFileErrorsHideKeys(t *testing.T) {
	secret := "sk-live-1234567890abcdef"
	data := `{"providers": {"x": {"apiKey": "` + secret + `", "baseUrl": 5}}}`
	_, err := ParseModelsFile("m.json", []byte(data))
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("error %v (must exist and not quote the key)", err)
	}
	data = `{"providers": {"x": {"apiKey": "` + secret + `", "api": "nope", "baseUrl": "http://h", "models": [{"id": "m"}]}}}`
	_, err = ParseModelsFile("m.json", []byte(data))
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("error %v (must exist and not quote the key)", err)
	}
}

func TestLoadModelsFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "models.json")
	if _, err := LoadModelsFile(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
	if err := os.WriteFile(path, []byte(sampleModelsFile), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := LoadModelsFile(path)
	if err != nil || f.Path != path {
		t.Fatalf("LoadModelsFile = %v, %v", f, err)
	}
	got, err := DefaultModelsPath(func(k string) string {
		if k == "AGENTLOOP_HOME" {
			return dir
		}
		return ""
	})
	if err != nil || got != path {
		t.Errorf("DefaultModelsPath = %q, %v; want %q", got, err, path)
	}
}

func TestResolveKey(t *testing.T) {
	defer goleak.VerifyNone(t)
	env := map[string]string{"LOCAL_KEY": "from-env", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cases := []struct {
		name, spec, want, err string
	}{
		{"env var", "LOCAL_KEY", "from-env", ""},
		{"literal", "sk-literal-key", "sk-literal-key", ""},
		{"empty env var is literal", "EMPTY", "EMPTY", ""},
		{"nothing", "  ", "", ""},
		{"command", "!printf '  cmd-key \\n'", "cmd-key", ""},
		{"command failing", "!echo secret-out; echo oops >&2; exit 3", "", `key command "echo" failed (exit status 3): oops`},
		{"command silent", "!true", "", "printed nothing"},
		{"no command", "!", "", "no command"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ResolveKey(context.Background(), c.spec, lookup)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				if strings.Contains(err.Error(), "secret-out") {
					t.Errorf("the command's output leaks into the error: %v", err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Errorf("ResolveKey(%q) = %q, %v; want %q", c.spec, got, err, c.want)
			}
		})
	}
	h, err := ResolveHeaders(context.Background(), map[string]string{"X-Key": "LOCAL_KEY", "X-Lit": "v"}, lookup)
	if err != nil || h["X-Key"] != "from-env" || h["X-Lit"] != "v" {
		t.Errorf("ResolveHeaders = %v, %v", h, err)
	}
}

func TestResolveKeyCommandTimeout(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := ResolveKey(ctx, "!sleep 5", nil)
	if err == nil || !strings.Contains(err.Error(), "did not finish in time") {
		t.Errorf("err = %v, want a timeout", err)
	}
}

func ExampleParseModelsFile() {
	data := []byte(`{"providers": {"local": {"baseUrl": "http://127.0.0.1:8080/v1", "api": "openai-completions",
		"models": [{"id": "qwen3", "contextWindow": 32768}]}}}`)
	f, err := ParseModelsFile("models.json", data)
	if err != nil {
		fmt.Println(err)
		return
	}
	m, _ := f.Model("local", "qwen3")
	fmt.Println(m.Provider, m.ID, m.API, m.BaseURL, m.ContextWindow, m.MaxTokens)
	// Output: local qwen3 openai-completions http://127.0.0.1:8080/v1 32768 16384
}

func TestModelOverrides(t *testing.T) {
	data := `{"providers": {"openrouter": {"modelOverrides": {
	  "openai/gpt-5": {"name": "GPT-5 via OR", "reasoning": false, "maxTokens": 1000, "cost": {"output": 9}, "compat": {"x": 1}, "headers": {"H": "v"}},
	  "no/such-model": {"name": "ignored"}}}}}`
	f, err := ParseModelsFile("m.json", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	base, _ := LookupModel("openrouter", "openai/gpt-5")
	got := f.Override(base)
	if got.Name != "GPT-5 via OR" || got.Reasoning || got.MaxTokens != 1000 || got.ContextWindow != base.ContextWindow ||
		got.Cost.Output != 9 || got.Cost.Input != base.Cost.Input {
		t.Errorf("Override = %+v", got)
	}
	if other, _ := LookupModel("openrouter", "openai/gpt-4.1"); f.Override(other).Name != other.Name {
		t.Errorf("an override touched another model")
	}
	c := BuiltinCatalog()
	f.AddTo(c)
	if m, _ := c.Lookup("openrouter", "openai/gpt-5"); m.MaxTokens != 1000 {
		t.Errorf("AddTo did not apply the override: %+v", m)
	}
	if _, ok := c.Lookup("openrouter", "no/such-model"); ok {
		t.Errorf("an override of an unknown id created a model")
	}
	p := f.Provider("openrouter")
	if len(p.CompatLayers("openai/gpt-5")) != 1 || p.ModelHeaders("openai/gpt-5")["H"] != "v" {
		t.Errorf("override compat/headers not used")
	}
	if f.Override(ModelInfo{Provider: "nobody", ID: "x"}).ID != "x" {
		t.Errorf("Override of a provider without entry changed the model")
	}
	var nilFile *ModelsFile
	if nilFile.Override(base).Name != base.Name {
		t.Errorf("nil file changed the model")
	}
}
