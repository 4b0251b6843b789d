package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/internal/wiretest"
)

// Issue 20.1: the request a turn sends, built from the history cache and
// the messages appended since, is the whole build's byte for byte, after
// every turn of a long run, on several server dialects, through rewrites
// of the history (a snip, a message changed in place, a shorter
// history, another conversation on the same model) that must miss.
func TestIncrementalRequestMatchesWholeBuild(t *testing.T) {
	dialects := map[string]Compat{
		"openai":    CompatFor("openai", llm.OpenAIBaseURL),
		"mistral":   CompatFor("mistral", "https://api.mistral.ai/v1"),
		"deepseek":  CompatFor("deepseek", "https://api.deepseek.com"),
		"bridge":    {RequiresAssistantAfterToolResult: true, RequiresToolResultName: true, SendReasoningContentBack: true},
		"textthink": {RequiresThinkingAsText: true},
	}
	for name, compat := range dialects {
		for _, images := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/images=%v", name, images), func(t *testing.T) {
				info := llm.ModelInfo{ID: "gpt-test", Provider: "openai", API: llm.APIOpenAICompletions, MaxTokens: 1000, Reasoning: true, Input: []string{"text"}}
				if images {
					info.Input = []string{"text", "image"}
				}
				c := compat
				m := New(Config{Info: info, Compat: &c})
				wiretest.CheckIncremental(t, incremental(m), 300, uint64(len(name)))
			})
		}
	}
}

// The edges of a body's assembly.
func TestIncrementalRequestEdges(t *testing.T) {
	m := New(Config{Info: llm.ModelInfo{ID: "gpt-test", Provider: "openai"}})
	wiretest.CheckIncrementalEdges(t, incremental(m))
}

// Through Stream against an HTTP server: each turn's body, as the server
// reads it, is the whole build's, sent with its length rather than
// chunked.
func TestIncrementalRequestOverHTTP(t *testing.T) {
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if len(r.TransferEncoding) > 0 || r.ContentLength != int64(len(b)) {
			t.Errorf("body sent with transfer encoding %v, length %d for %d bytes", r.TransferEncoding, r.ContentLength, len(b))
		}
		bodies = append(bodies, b)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","model":"gpt-test","choices":[{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	m := New(Config{Info: llm.ModelInfo{ID: "gpt-test", Provider: "openai", API: llm.APIOpenAICompletions, MaxTokens: 100},
		APIKey: "sk-test", BaseURL: srv.URL + "/v1", HTTPClient: srv.Client()})
	rng := rand.New(rand.NewPCG(7, 7))
	hist := []llm.Message{llm.UserText("start")}
	for turn := 0; turn < 40; turn++ {
		hist = wiretest.ScriptedTurn(rng, hist, turn, llm.APIOpenAICompletions, "openai")
		req := &llm.Request{SystemPrompt: "be brief", Messages: hist}
		for _, err := range m.Stream(context.Background(), req) {
			if err != nil {
				t.Fatal(err)
			}
		}
		want, _ := json.Marshal(m.buildRequest(req))
		if got := bodies[len(bodies)-1]; !bytes.Equal(got, want) {
			t.Fatalf("turn %d: the server got\n%s\nwant\n%s", turn, got, want)
		}
	}
	if m.hist.Covered() != len(hist) {
		t.Fatalf("the cache covers %d of %d messages", m.hist.Covered(), len(hist))
	}
}

func incremental(m *Model) wiretest.Incremental {
	return wiretest.Incremental{
		API: llm.APIOpenAICompletions, Provider: "openai",
		Encode: func(req *llm.Request) ([]byte, error) {
			body, _, err := m.encodeRequest(req)
			return bytes.Join(body, nil), err
		},
		Whole:   func(req *llm.Request) ([]byte, error) { return json.Marshal(m.buildRequest(req)) },
		Covered: m.hist.Covered,
	}
}

// Issue 20.1 on the Responses wire, where each message is its own input
// items (reasoning items and unmodelled output items replayed to the same
// model among them).
func TestResponsesIncrementalRequestMatchesWholeBuild(t *testing.T) {
	for name, info := range map[string]llm.ModelInfo{
		"reasoning": {ID: "gpt-test", Provider: "openai", API: llm.APIOpenAIResponses, MaxTokens: 1000, Reasoning: true, Input: []string{"text", "image"}},
		"plain":     {ID: "gpt-test", Provider: "openai", API: llm.APIOpenAIResponses, Input: []string{"text"}},
	} {
		t.Run(name, func(t *testing.T) {
			m := NewResponses(Config{Info: info})
			wiretest.CheckIncremental(t, responsesIncremental(m), 300, 5)
		})
	}
	wiretest.CheckIncrementalEdges(t, responsesIncremental(NewResponses(Config{Info: llm.ModelInfo{ID: "gpt-test", Provider: "openai"}})))
}

func responsesIncremental(m *ResponsesModel) wiretest.Incremental {
	return wiretest.Incremental{
		API: llm.APIOpenAIResponses, Provider: "openai",
		Decorate: func(msg *llm.Message, turn int) {
			if msg.Role != llm.RoleAssistant {
				if msg.Role == llm.RoleToolResult && turn%2 == 0 {
					msg.ToolCallID += fmt.Sprintf("|fc_%d", turn)
				}
				return
			}
			for i := range msg.Content {
				c := &msg.Content[i]
				switch {
				case c.Type == llm.ContentThinking && turn%2 == 0:
					c.ThinkingSignature = fmt.Sprintf(`{"type":"reasoning","id":"rs_%d","summary":[],"encrypted_content":"<x&y>"}`, turn)
				case c.Type == llm.ContentToolCall && turn%2 == 0:
					c.ID += fmt.Sprintf("|fc_%d", turn)
				case c.Type == llm.ContentText && turn%3 == 0:
					c.TextSignature = fmt.Sprintf("msg_%d", turn)
				}
			}
			if turn%4 == 0 {
				msg.Extra = map[string]json.RawMessage{ItemsKey: json.RawMessage(fmt.Sprintf(
					`[{"before":0,"item":{"type":"web_search_call","id":"ws_%d","status":"completed"}},{"before":99,"item":{"type":"x", "spaced" : true}}]`, turn))}
			}
		},
		Encode: func(req *llm.Request) ([]byte, error) {
			body, _, err := m.encodeRequest(req)
			return bytes.Join(body, nil), err
		},
		Whole:   func(req *llm.Request) ([]byte, error) { return json.Marshal(m.buildRequest(req)) },
		Covered: m.hist.Covered,
	}
}
