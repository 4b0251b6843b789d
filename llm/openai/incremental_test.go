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
)

// scriptedTurn appends one turn of a long, varied conversation: calls
// whose ids repeat across turns (as Kimi and several OpenAI-compatible
// servers send them), ids that need sanitising, thinking, failed turns,
// tool results with images, errors, empty outputs, follow-up user turns.
func scriptedTurn(rng *rand.Rand, hist []llm.Message, turn int) []llm.Message {
	calls := 1 + rng.IntN(3)
	var content []llm.Content
	if rng.IntN(3) == 0 {
		content = append(content, llm.Thinking(fmt.Sprintf("thinking %d", turn), "reasoning_content"))
	}
	if rng.IntN(2) == 0 {
		content = append(content, llm.Text(fmt.Sprintf("turn %d <&> \"quoted\"", turn)))
	}
	var ids []string
	for c := 0; c < calls; c++ {
		id := fmt.Sprintf("call_%d", c) // repeats every turn
		if rng.IntN(4) == 0 {
			id = fmt.Sprintf("functions.read:%d", c)
		}
		ids = append(ids, id)
		content = append(content, llm.ToolCall(id, "read", json.RawMessage(fmt.Sprintf(`{"path":"f%d.txt"}`, turn))))
	}
	a := llm.Message{Role: llm.RoleAssistant, Content: content, Provider: "openai", API: string(llm.APIOpenAICompletions), Model: "gpt-test", StopReason: llm.StopReasonToolUse}
	if rng.IntN(15) == 0 {
		a.StopReason = llm.StopReasonError
		a.Content = []llm.Content{llm.Text("cut")}
		ids = nil
	}
	hist = append(hist, a)
	for c, id := range ids {
		r := llm.Message{Role: llm.RoleToolResult, ToolCallID: id, ToolName: "read", Content: []llm.Content{llm.Text(fmt.Sprintf("out %d.%d", turn, c))}}
		switch rng.IntN(8) {
		case 0:
			r.Content = append(r.Content, llm.Image("aGVsbG8=", "image/png"))
		case 1:
			r.Content = nil
		case 2:
			r.IsError = true
		}
		hist = append(hist, r)
	}
	if rng.IntN(5) == 0 {
		hist = append(hist, llm.UserText(fmt.Sprintf("and then %d", turn)))
	}
	return hist
}

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
				rng := rand.New(rand.NewPCG(1, uint64(len(name))))
				hist := []llm.Message{llm.UserText("start")}
				hits := 0
				for turn := 0; turn < 300; turn++ {
					switch {
					case turn == 100: // a snip: the history is rebuilt shorter
						hist = append([]llm.Message{llm.UserText("summary")}, hist[len(hist)-20:]...)
					case turn == 150: // a block changed in place
						hist[3].Content[0].Text += " (edited)"
					case turn == 200: // a shorter history: the last turn dropped
						hist = hist[:len(hist)-2]
					case turn == 250: // another conversation on the same model
						other := []llm.Message{llm.UserText("other")}
						check(t, m, other, turn)
					}
					hist = scriptedTurn(rng, hist, turn)
					covered := m.hist.Covered()
					check(t, m, hist, turn)
					if covered > 0 {
						hits++
					}
				}
				if hits < 250 {
					t.Fatalf("the history cache served %d of 300 turns; want most", hits)
				}
			})
		}
	}
}

func check(t *testing.T, m *Model, hist []llm.Message, turn int) {
	t.Helper()
	temp := 0.5
	req := &llm.Request{SystemPrompt: "be brief", Messages: hist, Tools: []llm.ToolSpec{{Name: "read", Description: "read a file", Parameters: json.RawMessage(`{"type":"object"}`)}},
		Options: llm.Options{Temperature: &temp, SessionID: "s1"}}
	body, _, err := m.encodeRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	got := bytes.Join(body, nil)
	want, err := json.Marshal(m.buildRequest(req))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Fatalf("turn %d: incremental request differs from the whole build at byte %d:\n got …%s\nwant …%s", turn, i, got[max(0, i-80):min(len(got), i+80)], want[max(0, i-80):min(len(want), i+80)])
	}
	if m.hist.Covered() != len(hist) {
		t.Fatalf("turn %d: the cache covers %d of %d messages after the build", turn, m.hist.Covered(), len(hist))
	}
}

// The edge cases of the body's assembly: no system prompt, no message at
// all, only a system prompt.
func TestIncrementalRequestEdges(t *testing.T) {
	m := New(Config{Info: llm.ModelInfo{ID: "gpt-test", Provider: "openai"}})
	for _, req := range []*llm.Request{
		{},
		{SystemPrompt: "sys"},
		{Messages: []llm.Message{llm.UserText("hi")}},
		{Messages: []llm.Message{{Role: llm.RoleUser}}}, // sends no message
		{SystemPrompt: "sys", Messages: []llm.Message{llm.UserText("hi")}},
	} {
		for range 2 { // a miss, then a hit
			body, _, err := m.encodeRequest(req)
			if err != nil {
				t.Fatal(err)
			}
			got := bytes.Join(body, nil)
			want, _ := json.Marshal(m.buildRequest(req))
			if !bytes.Equal(got, want) {
				t.Fatalf("%+v:\n got %s\nwant %s", req, got, want)
			}
		}
	}
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
		hist = scriptedTurn(rng, hist, turn)
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
