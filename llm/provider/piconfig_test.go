package provider

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentloop/agentloop/llm"
)

// bodyServer answers every request with a short reply of wire and keeps
// the last request's body and headers.
type bodyServer struct {
	mu     sync.Mutex
	body   map[string]any
	header http.Header
}

func (b *bodyServer) start(t *testing.T, wire string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		b.mu.Lock()
		b.body = nil
		json.Unmarshal(data, &b.body)
		b.header = r.Header.Clone()
		b.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		switch wire {
		case "anthropic":
			io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1}}}\n\n"+
				"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}}\n\n"+
				"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
		default:
			io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func (b *bodyServer) get(key string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.body[key]
	if !ok {
		return ""
	}
	out, _ := json.Marshal(v)
	return string(out)
}

func streamOnce(t *testing.T, res *Resolved, thinking llm.ThinkingLevel) {
	t.Helper()
	req := &llm.Request{Messages: []llm.Message{llm.UserText("hi")}, Options: llm.Options{Thinking: thinking},
		Tools: []llm.ToolSpec{{Name: "read", Description: "Read", Parameters: json.RawMessage(`{"type":"object"}`)}}}
	for _, err := range res.Model.Stream(context.Background(), req) {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func writeFileT(t *testing.T, text string) string {
	path := filepath.Join(t.TempDir(), "models.json")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Issue 18, item 5: the fields of pi's models.json that agentloop used to
// accept and ignore are applied as pi applies them, through the real wire.
func TestPiModelsFileFields(t *testing.T) {
	var chat bodyServer
	chatSrv := chat.start(t, "openai")
	var anth bodyServer
	anthSrv := anth.start(t, "anthropic")
	path := writeFileT(t, `{"providers": {
  "router": {"baseUrl": "`+chatSrv.URL+`/v1", "api": "openai-completions", "apiKey": "sk-router",
    "compat": {"openRouterRouting": {"only": ["anthropic"], "order": ["anthropic", "google"], "allow_fallbacks": false},
               "vercelGatewayRouting": {"order": ["bedrock", "anthropic"]}},
    "models": [{"id": "ds", "reasoning": true,
                "compat": {"thinkingFormat": "deepseek", "supportsReasoningEffort": true},
                "thinkingLevelMap": {"high": "max", "minimal": null}}]},
  "gw": {"baseUrl": "`+anthSrv.URL+`", "api": "anthropic-messages", "apiKey": "sk-gw",
    "models": [{"id": "claude-eager", "compat": {"supportsEagerToolInputStreaming": true}},
               {"id": "claude-beta", "compat": {"supportsEagerToolInputStreaming": false}}]}
}}`)
	env := envOf(t)

	res, err := Resolve(context.Background(), "router/ds", &Options{ModelsFile: path, LookupEnv: env, Thinking: llm.ThinkingHigh})
	if err != nil {
		t.Fatal(err)
	}
	if res.Info.Name != "ds" {
		t.Errorf("name %q, want the id", res.Info.Name)
	}
	streamOnce(t, res, llm.ThinkingHigh)
	if got := chat.get("provider"); got != `{"allow_fallbacks":false,"only":["anthropic"],"order":["anthropic","google"]}` {
		t.Errorf("provider = %s", got)
	}
	if got := chat.get("providerOptions"); got != `{"gateway":{"order":["bedrock","anthropic"]}}` {
		t.Errorf("providerOptions = %s", got)
	}
	if chat.get("thinking") != `{"type":"enabled"}` || chat.get("reasoning_effort") != `"max"` {
		t.Errorf("deepseek thinking %s effort %s", chat.get("thinking"), chat.get("reasoning_effort"))
	}
	// A level the map marks unsupported sends no effort, and says so.
	res, err = Resolve(context.Background(), "router/ds", &Options{ModelsFile: path, LookupEnv: env, Thinking: llm.ThinkingMinimal})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "does not support thinking level minimal") {
		t.Errorf("warnings %v", res.Warnings)
	}
	streamOnce(t, res, llm.ThinkingMinimal)
	if chat.get("thinking") != `{"type":"enabled"}` || chat.get("reasoning_effort") != "" {
		t.Errorf("minimal: thinking %s effort %s", chat.get("thinking"), chat.get("reasoning_effort"))
	}

	res, err = Resolve(context.Background(), "gw/claude-eager", &Options{ModelsFile: path, LookupEnv: env})
	if err != nil {
		t.Fatal(err)
	}
	streamOnce(t, res, "")
	if tools := anth.get("tools"); !strings.Contains(tools, `"eager_input_streaming":true`) || strings.Contains(anth.header.Get("Anthropic-Beta"), "fine-grained") {
		t.Errorf("eager: tools %s beta %q", tools, anth.header.Get("Anthropic-Beta"))
	}
	res, err = Resolve(context.Background(), "gw/claude-beta", &Options{ModelsFile: path, LookupEnv: env})
	if err != nil {
		t.Fatal(err)
	}
	streamOnce(t, res, "")
	if tools := anth.get("tools"); strings.Contains(tools, "eager_input_streaming") || !strings.Contains(anth.header.Get("Anthropic-Beta"), "fine-grained-tool-streaming-2025-05-14") {
		t.Errorf("beta: tools %s beta %q", tools, anth.header.Get("Anthropic-Beta"))
	}
}

// A modelOverrides entry for a model our registry does not know, of a
// provider whose api and base URL are known, describes the model.
func TestModelOverrideOfUnknownModel(t *testing.T) {
	got := capture(t)
	path := writeFileT(t, `{"providers": {"anthropic": {"modelOverrides": {"claude-future-9": {"name": "Future", "contextWindow": 500000, "maxTokens": 64000, "reasoning": true}}}}}`)
	res, err := Resolve(context.Background(), "anthropic/claude-future-9", &Options{ModelsFile: path, LookupEnv: envOf(t, "ANTHROPIC_API_KEY", "sk-ant")})
	if err != nil {
		t.Fatal(err)
	}
	if got.wire != "anthropic" || res.Info.ContextWindow != 500000 || res.Info.MaxTokens != 64000 || !res.Info.Reasoning || res.Info.Name != "Future" {
		t.Errorf("info %+v", res.Info)
	}
	if strings.Contains(strings.Join(res.Warnings, "\n"), "not in the registry") {
		t.Errorf("warned as unknown: %v", res.Warnings)
	}
}

// Keys nobody reads are named with their line (and the key meant, when
// one is close); compat settings a wire does not apply are named too.
func TestModelsFileKeyWarnings(t *testing.T) {
	capture(t)
	path := writeFileT(t, `{
  "provders": {},
  "providers": {
    "local": {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "sk-local",
      "compat": {"requiresMistralToolIds": true, "supportsStrictMode": false, "maxTokenField": "max_tokens"},
      "models": [{"id": "m", "contextWindw": 32000,
                  "compat": {"supportsEagerToolInputStreaming": true}}]}
  }
}`)
	res, err := Resolve(context.Background(), "local/m", &Options{ModelsFile: path, LookupEnv: envOf(t)})
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(res.Warnings, "\n")
	for _, want := range []string{
		`line 2: unknown key "provders" in the top level: agentloop ignores it (did you mean "providers"?)`,
		`line 6: unknown key "contextWindw" in providers.local.models.0: agentloop ignores it (did you mean "contextWindow"?)`,
		`line 5: provider "local": compat.requiresMistralToolIds is a pi setting agentloop does not apply`,
		`line 5: provider "local": compat.maxTokenField is not a compat setting agentloop knows`,
		`line 7: provider "local", model "m": compat.supportsEagerToolInputStreaming does not apply to the openai-completions wire`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no warning %q in:\n%s", want, all)
		}
	}
	if strings.Contains(all, "supportsStrictMode") {
		t.Errorf("an applied key was warned about:\n%s", all)
	}
}

// A --models file that does not exist is an error, not an empty file.
func TestMissingModelsFile(t *testing.T) {
	_, err := Resolve(context.Background(), "openai/gpt-5", &Options{ModelsFile: filepath.Join(t.TempDir(), "nope.json"), LookupEnv: envOf(t, "OPENAI_API_KEY", "sk")})
	if err == nil || !strings.Contains(err.Error(), "nope.json") {
		t.Errorf("err = %v", err)
	}
}
