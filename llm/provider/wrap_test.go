package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/wrap"
)

func TestWrapConfigLayers(t *testing.T) {
	base := wrap.For("local", llm.APIOpenAICompletions)
	got, err := wrapConfig("local", llm.APIOpenAICompletions, []json.RawMessage{
		json.RawMessage(`{"supportsStore": false}`),
		json.RawMessage(`{"wrap": {"promote": false}}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := base
	want.Promote = false
	if got.Promote != want.Promote || got.Repair != want.Repair || got.Normalize != want.Normalize {
		t.Errorf("wrapConfig = %+v, want %+v", got, want)
	}
	if _, err := wrapConfig("local", llm.APIOpenAICompletions, []json.RawMessage{json.RawMessage(`{"wrap": 3}`)}); err == nil {
		t.Error("a wrap value that is not an object was accepted")
	}
}

// A model served by an open-model server that writes its tool call as text
// reaches the caller as a real tool call: Resolve applies the middleware.
func TestResolvedModelIsWrapped(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		text, _ := json.Marshal(`<tool_call>{"name": "ls", "arguments": {"path": "."}}</tool_call>`)
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%s}}]}\n\n", text)
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	dir := t.TempDir()
	models := filepath.Join(dir, "models.json")
	os.WriteFile(models, []byte(`{"providers":{"local":{"baseUrl":"`+srv.URL+`/v1","api":"openai-completions","apiKey":"k","models":[{"id":"qwen"}]}}}`), 0o600)
	res, err := Resolve(context.Background(), "local/qwen", &Options{ModelsFile: models, LookupEnv: envOf(t, "", "")})
	if err != nil {
		t.Fatal(err)
	}
	req := &llm.Request{
		Messages: []llm.Message{llm.UserText("list")},
		Tools:    []llm.ToolSpec{{Name: "ls", Description: "list", Parameters: json.RawMessage(`{"type":"object"}`)}},
	}
	var final *llm.Message
	for ev, err := range res.Model.Stream(context.Background(), req) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type.Terminal() {
			final = ev.Message
		}
	}
	if final == nil || final.StopReason != llm.StopReasonToolUse || len(final.ToolCalls()) != 1 || final.ToolCalls()[0].Name != "ls" {
		t.Fatalf("final message = %+v, want one ls call", final)
	}
}
