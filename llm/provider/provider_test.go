package provider

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/anthropic"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/llm/google"
	"github.com/agentloop/agentloop/llm/openai"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// captured is the configuration a wire constructor received.
type captured struct {
	wire    string
	apiKey  string
	baseURL string
	headers map[string]string
	info    llm.ModelInfo
	compat  *openai.Compat
}

// capture replaces the wire constructors for one test.
func capture(t *testing.T) *captured {
	t.Helper()
	c := &captured{}
	oldA, oldO, oldG, oldR := newAnthropic, newOpenAI, newGoogle, newResponses
	newAnthropic = func(cfg anthropic.Config) llm.Model {
		*c = captured{wire: "anthropic", apiKey: cfg.APIKey, baseURL: cfg.BaseURL, headers: cfg.Headers, info: cfg.Info}
		return stubModel{}
	}
	newOpenAI = func(cfg openai.Config) llm.Model {
		*c = captured{wire: "openai", apiKey: cfg.APIKey, baseURL: cfg.BaseURL, headers: cfg.Headers, info: cfg.Info, compat: cfg.Compat}
		return stubModel{}
	}
	newGoogle = func(cfg google.Config) llm.Model {
		*c = captured{wire: "google", apiKey: cfg.APIKey, baseURL: cfg.BaseURL, headers: cfg.Headers, info: cfg.Info}
		return stubModel{}
	}
	newResponses = func(cfg openai.Config) llm.Model {
		*c = captured{wire: "responses", apiKey: cfg.APIKey, baseURL: cfg.BaseURL, headers: cfg.Headers, info: cfg.Info}
		return stubModel{}
	}
	t.Cleanup(func() { newAnthropic, newOpenAI, newGoogle, newResponses = oldA, oldO, oldG, oldR })
	return c
}

type stubModel struct{}

func (stubModel) Stream(context.Context, *llm.Request) iter.Seq2[llm.Event, error] {
	return func(func(llm.Event, error) bool) {}
}

// envOf builds a LookupEnv over a map, with AGENTLOOP_HOME in a temp dir so
// no test reads the real models file.
func envOf(t *testing.T, kv ...string) func(string) (string, bool) {
	env := map[string]string{"AGENTLOOP_HOME": t.TempDir()}
	for i := 0; i+1 < len(kv); i += 2 {
		env[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

func TestResolveSpecs(t *testing.T) {
	cases := []struct {
		name       string
		spec       string
		env        []string
		baseURL    string
		wire       string
		wantKey    string
		wantSource string
		wantBase   string
		wantWindow int
		warn       string // a warning must contain this ("" = no warning)
	}{
		{"anthropic known", "anthropic/claude-sonnet-4-5", []string{"ANTHROPIC_API_KEY", "ak"}, "", "anthropic", "ak", "ANTHROPIC_API_KEY", llm.AnthropicBaseURL, 200000, ""},
		{"anthropic dated alias", "anthropic/claude-haiku-4-5-20251001", []string{"ANTHROPIC_API_KEY", "ak"}, "", "anthropic", "ak", "ANTHROPIC_API_KEY", llm.AnthropicBaseURL, 200000, ""},
		{"anthropic base from env", "anthropic/any", []string{"ANTHROPIC_BASE_URL", "http://127.0.0.1:9/"}, "", "anthropic", "", "", "http://127.0.0.1:9/", llm.DefaultContextWindow, "not in the registry"},
		{"openai known", "openai/gpt-5", []string{"OPENAI_API_KEY", "ok"}, "", "openai", "ok", "OPENAI_API_KEY", llm.OpenAIBaseURL, 400000, ""},
		{"openai responses-only", "openai/gpt-5.1-codex", []string{"OPENAI_API_KEY", "ok"}, "", "responses", "ok", "OPENAI_API_KEY", llm.OpenAIBaseURL, 400000, ""},
		{"openai base flag beats env", "openai/gpt-5", []string{"OPENAI_API_KEY", "ok", "OPENAI_BASE_URL", "http://env"}, "http://flag/v1", "openai", "ok", "OPENAI_API_KEY", "http://flag/v1", 400000, ""},
		{"openai any on base url without key", "openai/any", nil, "http://127.0.0.1:8/v1", "openai", "", "", "http://127.0.0.1:8/v1", llm.DefaultContextWindow, "without one"},
		{"ollama no key", "ollama/qwen3", nil, "", "openai", "", "", llm.OllamaBaseURL, llm.DefaultContextWindow, "not in the registry"},
		{"openrouter nested id", "openrouter/anthropic/claude-sonnet-4.5", []string{"OPENROUTER_API_KEY", "or"}, "", "openai", "or", "OPENROUTER_API_KEY", llm.OpenRouterBaseURL, 1000000, ""},
		{"groq", "groq/llama-3.3-70b-versatile", []string{"GROQ_API_KEY", "gq"}, "", "openai", "gq", "GROQ_API_KEY", llm.GroqBaseURL, 131072, ""},
		{"deepseek", "deepseek/deepseek-v4-flash", []string{"DEEPSEEK_API_KEY", "ds"}, "", "openai", "ds", "DEEPSEEK_API_KEY", llm.DeepSeekBaseURL, 1000000, ""},
		{"deepseek unknown id", "deepseek/deepseek-chat", []string{"DEEPSEEK_API_KEY", "ds"}, "", "openai", "ds", "DEEPSEEK_API_KEY", llm.DeepSeekBaseURL, llm.DefaultContextWindow, "deepseek/deepseek-chat is not in the registry"},
		{"unknown provider with base url", "lab/mixtral", nil, "http://10.0.0.2:8000/v1", "openai", "", "", "http://10.0.0.2:8000/v1", llm.DefaultContextWindow, "not in the registry"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := capture(t)
			res, err := Resolve(context.Background(), c.spec, &Options{LookupEnv: envOf(t, c.env...), BaseURL: c.baseURL})
			if err != nil {
				t.Fatal(err)
			}
			if got.wire != c.wire || got.apiKey != c.wantKey || got.baseURL != c.wantBase {
				t.Errorf("wire %s key %q base %q; want %s %q %q", got.wire, got.apiKey, got.baseURL, c.wire, c.wantKey, c.wantBase)
			}
			if res.KeySource != c.wantSource {
				t.Errorf("KeySource = %q, want %q", res.KeySource, c.wantSource)
			}
			if res.Info.ContextWindow != c.wantWindow || res.Info.BaseURL != c.wantBase || got.info.ID != res.Info.ID {
				t.Errorf("Info = %+v", res.Info)
			}
			warnings := strings.Join(res.Warnings, "\n")
			if (c.warn == "") != (warnings == "") || !strings.Contains(warnings, c.warn) {
				t.Errorf("warnings %q, want %q", warnings, c.warn)
			}
			if strings.Contains(warnings, c.wantKey) && c.wantKey != "" {
				t.Errorf("a warning shows the key")
			}
		})
	}
}

func TestResolveCompat(t *testing.T) {
	got := capture(t)
	if _, err := Resolve(context.Background(), "groq/llama-3.3-70b-versatile", &Options{LookupEnv: envOf(t, "GROQ_API_KEY", "k")}); err != nil {
		t.Fatal(err)
	}
	if want := openai.CompatFor("groq", llm.GroqBaseURL); got.compat == nil || got.compat.MaxTokensField != want.MaxTokensField {
		t.Errorf("compat = %+v, want groq's", got.compat)
	}
}

func TestResolveErrors(t *testing.T) {
	cases := []struct {
		name string
		spec string
		env  []string
		is   error
		want []string
	}{
		{"anthropic without key", "anthropic/claude-sonnet-4-5", nil, nil, []string{"ANTHROPIC_API_KEY", "faux/demo"}},
		{"openai without key", "openai/gpt-5", nil, nil, []string{"OPENAI_API_KEY"}},
		{"openrouter without key", "openrouter/openai/gpt-5", nil, nil, []string{"OPENROUTER_API_KEY"}},
		{"groq without key", "groq/x", nil, nil, []string{"GROQ_API_KEY"}},
		{"google without key", "google/gemini-2.5-pro", nil, nil, []string{"GEMINI_API_KEY or GOOGLE_API_KEY"}},
		{"unknown provider", "acme/m1", nil, nil, []string{`unknown provider "acme"`, "anthropic", "--base-url", "models.json"}},
		{"no slash", "claude", nil, nil, []string{"provider/model"}},
		{"empty id", "openai/", nil, nil, []string{"provider/model"}},
		{"faux unknown script", "faux/nope", nil, nil, []string{"demo"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			capture(t)
			_, err := Resolve(context.Background(), c.spec, &Options{LookupEnv: envOf(t, c.env...)})
			if err == nil {
				t.Fatal("no error")
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error %v is not %v", err, c.is)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestResolveDefaultOrder(t *testing.T) {
	cases := []struct {
		name string
		env  []string
		want string // provider/id, or "" for the no-provider error
		warn string
	}{
		{"anthropic first", []string{"OPENROUTER_API_KEY", "o", "OPENAI_API_KEY", "p", "ANTHROPIC_API_KEY", "a"}, "anthropic/" + DefaultModels["anthropic"], ""},
		{"openai second", []string{"OPENROUTER_API_KEY", "o", "OPENAI_API_KEY", "p"}, "openai/" + DefaultModels["openai"], ""},
		{"google third", []string{"GEMINI_API_KEY", "g", "OPENROUTER_API_KEY", "o"}, "google/" + DefaultModels["google"], ""},
		{"google alias var", []string{"GOOGLE_API_KEY", "g", "OPENROUTER_API_KEY", "o"}, "google/" + DefaultModels["google"], ""},
		{"openrouter last", []string{"OPENROUTER_API_KEY", "o"}, "openrouter/" + DefaultModels["openrouter"], ""},
		{"groq is not a default", []string{"GROQ_API_KEY", "q"}, "", ""},
		{"nothing set", nil, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			capture(t)
			res, err := Resolve(context.Background(), "", &Options{LookupEnv: envOf(t, c.env...)})
			if c.want == "" {
				if !errors.Is(err, ErrNoProvider) || !strings.Contains(err.Error(), "--model faux/demo") || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
					t.Fatalf("err = %v, want ErrNoProvider pointing to faux/demo", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Info.Provider + "/" + res.Info.ID; got != c.want {
				t.Errorf("chose %s, want %s", got, c.want)
			}
			if w := strings.Join(res.Warnings, "\n"); !strings.Contains(w, c.warn) || (c.warn == "" && w != "") {
				t.Errorf("warnings %q, want %q", w, c.warn)
			}
		})
	}
	t.Run("only google", func(t *testing.T) {
		got := capture(t)
		res, err := Resolve(context.Background(), "", &Options{LookupEnv: envOf(t, "GOOGLE_API_KEY", "g")})
		if err != nil || got.wire != "google" || got.apiKey != "g" || got.baseURL != llm.GoogleBaseURL || res.KeySource != "GOOGLE_API_KEY" {
			t.Errorf("got %+v err %v", got, err)
		}
	})
}

func TestDefaultModelsAreInTheRegistry(t *testing.T) {
	for p, id := range DefaultModels {
		if _, ok := llm.LookupModel(p, id); !ok {
			t.Errorf("default model %s/%s is not a built-in model", p, id)
		}
	}
	for _, p := range DefaultOrder {
		if DefaultModels[p] == "" {
			t.Errorf("provider %s in DefaultOrder has no default model", p)
		}
	}
}

const modelsJSON = `{"providers": {
  "local": {"baseUrl": "http://127.0.0.1:8080/v1", "api": "openai-completions", "apiKey": "LOCAL_KEY",
    "headers": {"X-Team": "TEAM_VAR"}, "compat": {"maxTokensField": "max_tokens", "supportsStrictMode": true},
    "profiles": [{"id": "work", "apiKey": "KEY_A"}, {"id": "spare", "apiKey": "!printf spare-key"}],
    "models": [{"id": "qwen3", "contextWindow": 32768, "maxTokens": 4096, "compat": {"supportsStrictMode": false}}]},
  "gateway": {"baseUrl": "http://gw/anthropic", "api": "anthropic-messages", "apiKey": "GW_KEY", "authHeader": true,
    "models": [{"id": "claude-x", "reasoning": true}]},
  "anthropic": {"apiKey": "!printf file-key", "modelOverrides": {"claude-sonnet-4-5": {"name": "Sonnet via proxy", "contextWindow": 100000, "cost": {"input": 1}, "headers": {"X-Route": "eu"}}}},
  "openai": {"baseUrl": "http://file-proxy/v1"},
  "responses": {"baseUrl": "http://r/v1", "api": "openai-responses", "models": [{"id": "m"}]}
}}`

func writeModels(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "models.json")
	if err := os.WriteFile(path, []byte(modelsJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestResolveModelsFile(t *testing.T) {
	path := writeModels(t)
	t.Run("file provider", func(t *testing.T) {
		got := capture(t)
		res, err := Resolve(context.Background(), "local/qwen3", &Options{ModelsFile: path, LookupEnv: envOf(t, "LOCAL_KEY", "lk", "TEAM_VAR", "infra")})
		if err != nil {
			t.Fatal(err)
		}
		if got.wire != "openai" || got.apiKey != "lk" || got.baseURL != "http://127.0.0.1:8080/v1" || res.KeySource != "models file" {
			t.Errorf("got %+v, source %q", got, res.KeySource)
		}
		if res.Info.ContextWindow != 32768 || res.Info.MaxTokens != 4096 || len(res.Warnings) != 0 {
			t.Errorf("info %+v warnings %v", res.Info, res.Warnings)
		}
		if got.headers["X-Team"] != "infra" {
			t.Errorf("headers %v", got.headers)
		}
		// What tools must not inherit: the variables the key and the
		// header came from, and their values.
		if !slices.Contains(res.SecretVars, "LOCAL_KEY") || !slices.Contains(res.SecretVars, "TEAM_VAR") ||
			!slices.Contains(res.Secrets, "lk") || !slices.Contains(res.Secrets, "infra") {
			t.Errorf("secret vars %v, %d secrets", res.SecretVars, len(res.Secrets))
		}
		if got.compat == nil || got.compat.MaxTokensField != "max_tokens" || got.compat.SupportsStrictMode {
			t.Errorf("compat layers not applied in order: %+v", got.compat)
		}
	})
	t.Run("unknown id on a file provider", func(t *testing.T) {
		got := capture(t)
		// The apiKey names LOCAL_KEY, which is not set: an error that says
		// so, not a request carrying the variable's name as the key.
		_, err := Resolve(context.Background(), "local/llama", &Options{ModelsFile: path, LookupEnv: envOf(t)})
		if !errors.Is(err, llm.ErrKeyVariableUnset) || !strings.Contains(err.Error(), "LOCAL_KEY is not set") {
			t.Fatalf("err = %v", err)
		}
		res, err := Resolve(context.Background(), "local/llama", &Options{ModelsFile: path, LookupEnv: envOf(t, "LOCAL_KEY", "lk")})
		if err != nil {
			t.Fatal(err)
		}
		if got.baseURL != "http://127.0.0.1:8080/v1" || got.apiKey != "lk" || res.Info.ContextWindow != llm.DefaultContextWindow {
			t.Errorf("got %+v info %+v", got, res.Info)
		}
		if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], path) {
			t.Errorf("warnings %v, want one naming %s", res.Warnings, path)
		}
	})
	t.Run("profile", func(t *testing.T) {
		got := capture(t)
		res, err := Resolve(context.Background(), "local/qwen3", &Options{ModelsFile: path, Profile: "spare", LookupEnv: envOf(t)})
		if err != nil || got.apiKey != "spare-key" || res.KeySource != "profile spare" {
			t.Errorf("key %q source %q err %v", got.apiKey, res.KeySource, err)
		}
		_, err = Resolve(context.Background(), "local/qwen3", &Options{ModelsFile: path, Profile: "nope", LookupEnv: envOf(t)})
		if err == nil || !strings.Contains(err.Error(), `no auth profile "nope"`) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("anthropic gateway with bearer", func(t *testing.T) {
		got := capture(t)
		_, err := Resolve(context.Background(), "gateway/claude-x", &Options{ModelsFile: path, LookupEnv: envOf(t, "GW_KEY", "gw")})
		if err != nil {
			t.Fatal(err)
		}
		if got.wire != "anthropic" || got.apiKey != "gw" || got.headers["Authorization"] != "Bearer gw" || !got.info.Reasoning {
			t.Errorf("got %+v", got)
		}
	})
	t.Run("env key beats file key", func(t *testing.T) {
		got := capture(t)
		res, err := Resolve(context.Background(), "anthropic/claude-sonnet-4-5", &Options{ModelsFile: path, LookupEnv: envOf(t, "ANTHROPIC_API_KEY", "env-key")})
		if err != nil || got.apiKey != "env-key" || res.KeySource != "ANTHROPIC_API_KEY" {
			t.Errorf("key %q source %q err %v", got.apiKey, res.KeySource, err)
		}
	})
	t.Run("file key command for a built-in provider", func(t *testing.T) {
		got := capture(t)
		res, err := Resolve(context.Background(), "anthropic/claude-sonnet-4-5", &Options{ModelsFile: path, LookupEnv: envOf(t)})
		if err != nil || got.apiKey != "file-key" || res.KeySource != "models file" || got.baseURL != llm.AnthropicBaseURL {
			t.Errorf("got %+v source %q err %v", got, res.KeySource, err)
		}
	})
	t.Run("model override", func(t *testing.T) {
		got := capture(t)
		res, err := Resolve(context.Background(), "anthropic/claude-sonnet-4-5", &Options{ModelsFile: path, LookupEnv: envOf(t, "ANTHROPIC_API_KEY", "k")})
		if err != nil {
			t.Fatal(err)
		}
		i := res.Info
		if i.Name != "Sonnet via proxy" || i.ContextWindow != 100000 || i.MaxTokens != 64000 || i.Cost.Input != 1 || i.Cost.Output != 15 || got.headers["X-Route"] != "eu" {
			t.Errorf("override not applied: %+v headers %v", i, got.headers)
		}
	})
	t.Run("file base url for a built-in provider beats env", func(t *testing.T) {
		got := capture(t)
		_, err := Resolve(context.Background(), "openai/gpt-5", &Options{ModelsFile: path, LookupEnv: envOf(t, "OPENAI_API_KEY", "k", "OPENAI_BASE_URL", "http://env/v1")})
		if err != nil || got.baseURL != "http://file-proxy/v1" {
			t.Errorf("base %q err %v", got.baseURL, err)
		}
	})
	t.Run("responses api", func(t *testing.T) {
		got := capture(t)
		res, err := Resolve(context.Background(), "responses/m", &Options{ModelsFile: path, LookupEnv: envOf(t)})
		if err != nil || got.wire != "responses" || got.baseURL != "http://r/v1" || res.Info.API != llm.APIOpenAIResponses {
			t.Errorf("got %+v err %v", got, err)
		}
	})
	t.Run("default file from AGENTLOOP_HOME", func(t *testing.T) {
		got := capture(t)
		_, err := Resolve(context.Background(), "local/qwen3", &Options{LookupEnv: envOf(t, "AGENTLOOP_HOME", filepath.Dir(path), "LOCAL_KEY", "lk")})
		if err != nil || got.apiKey != "lk" {
			t.Errorf("key %q err %v", got.apiKey, err)
		}
	})
	t.Run("explicit file missing", func(t *testing.T) {
		_, err := Resolve(context.Background(), "openai/gpt-5", &Options{ModelsFile: filepath.Join(t.TempDir(), "none.json"), LookupEnv: envOf(t, "OPENAI_API_KEY", "k")})
		if err == nil || !strings.Contains(err.Error(), "none.json") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("bad default file is reported", func(t *testing.T) {
		home := t.TempDir()
		if err := os.WriteFile(filepath.Join(home, "models.json"), []byte(`{"providers": `), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Resolve(context.Background(), "openai/gpt-5", &Options{LookupEnv: envOf(t, "AGENTLOOP_HOME", home, "OPENAI_API_KEY", "k")})
		if err == nil || !strings.Contains(err.Error(), "models.json") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("failing key command", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "m.json")
		os.WriteFile(bad, []byte(`{"providers": {"anthropic": {"apiKey": "!exit 4"}}}`), 0o600)
		_, err := Resolve(context.Background(), "anthropic/claude-sonnet-4-5", &Options{ModelsFile: bad, LookupEnv: envOf(t)})
		if err == nil || !strings.Contains(err.Error(), "exit status 4") || !strings.Contains(err.Error(), "m.json") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestResolveThinkingWarning(t *testing.T) {
	capture(t)
	res, err := Resolve(context.Background(), "openai/gpt-4.1", &Options{Thinking: llm.ThinkingHigh, LookupEnv: envOf(t, "OPENAI_API_KEY", "k")})
	if err != nil || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "does not support thinking") {
		t.Errorf("warnings %v err %v", res, err)
	}
	res, err = Resolve(context.Background(), "openai/gpt-5", &Options{Thinking: llm.ThinkingHigh, LookupEnv: envOf(t, "OPENAI_API_KEY", "k")})
	if err != nil || len(res.Warnings) != 0 {
		t.Errorf("warnings %v err %v", res.Warnings, err)
	}
}

func TestResolveFaux(t *testing.T) {
	res, err := Resolve(context.Background(), "faux/demo", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.Model.(*faux.Model); !ok || res.KeySource != "" {
		t.Errorf("model %T source %q", res.Model, res.KeySource)
	}
	script := filepath.Join(t.TempDir(), "s.json")
	os.WriteFile(script, []byte(`{"model": {"id": "scripted", "contextWindow": 5000}, "steps": [{"text": "hi"}]}`), 0o600)
	res, err = Resolve(context.Background(), "", &Options{Script: script})
	if err != nil || res.Info.ID != "scripted" || res.Info.ContextWindow != 5000 {
		t.Errorf("script: %+v %v", res, err)
	}
}

// TestResolvedModelsReachTheServer checks, through real wire packages, that
// the key, base URL and headers arrive where the provider expects them.
func TestResolvedModelsReachTheServer(t *testing.T) {
	type seen struct{ path, auth, xkey, team string }
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"), r.Header.Get("X-Team")}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":{"message":"no","type":"authentication_error"}}`)
	}))
	defer srv.Close()
	cases := []struct {
		spec, env, envVal string
		want              seen
	}{
		{"anthropic/any", "ANTHROPIC_API_KEY", "ak-1", seen{path: "/v1/messages", xkey: "ak-1"}},
		{"openai/any", "OPENAI_API_KEY", "ok-1", seen{path: "/v1/chat/completions", auth: "Bearer ok-1"}},
	}
	for _, c := range cases {
		t.Run(c.spec, func(t *testing.T) {
			base := srv.URL
			if strings.HasPrefix(c.spec, "openai") {
				base += "/v1"
			}
			res, err := Resolve(context.Background(), c.spec, &Options{BaseURL: base, LookupEnv: envOf(t, c.env, c.envVal)})
			if err != nil {
				t.Fatal(err)
			}
			var streamErr error
			for _, err := range res.Model.Stream(context.Background(), &llm.Request{Messages: []llm.Message{llm.UserText("hi")}}) {
				if err != nil {
					streamErr = err
				}
			}
			s := <-got
			if s.path != c.want.path || s.auth != c.want.auth || s.xkey != c.want.xkey {
				t.Errorf("server saw %+v, want %+v", s, c.want)
			}
			if llm.ReasonOf(streamErr) != llm.ReasonAuth {
				t.Errorf("stream error %v, want an auth ProviderError", streamErr)
			}
			if streamErr != nil && strings.Contains(streamErr.Error(), c.envVal) {
				t.Errorf("the key leaks into the error: %v", streamErr)
			}
		})
	}
}

func ExampleResolve() {
	// AGENTLOOP_HOME points where no models file is, so only the built-in
	// registry and the environment count.
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-example", "AGENTLOOP_HOME": filepath.Join(os.TempDir(), "agentloop-example-empty-home")}
	res, err := Resolve(context.Background(), "anthropic/claude-sonnet-4-5", &Options{
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Info.Provider, res.Info.ID, res.Info.ContextWindow, res.KeySource)
	// Output: anthropic claude-sonnet-4-5 200000 ANTHROPIC_API_KEY
}

func BenchmarkResolve(b *testing.B) {
	env := map[string]string{"OPENAI_API_KEY": "k", "AGENTLOOP_HOME": b.TempDir()}
	opts := &Options{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Resolve(context.Background(), "openai/gpt-5", opts); err != nil {
			b.Fatal(err)
		}
	}
}
