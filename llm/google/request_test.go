package google_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/google"
	"github.com/agentloop/agentloop/llm/jsonpartial"
)

func js(v any) string { b, _ := json.Marshal(v); return string(b) }

// history has a Gemini turn with signed thinking, a signed call and an
// unsigned parallel call, their results, another provider's turn, and a
// failed turn.
func history() []llm.Message {
	return []llm.Message{
		llm.UserText("look"),
		{Role: llm.RoleAssistant, Provider: "google", Model: "gemini-test", API: "google-generative-ai", StopReason: llm.StopReasonToolUse,
			Content: []llm.Content{
				{Type: llm.ContentThinking, Thinking: "I should read it.", ThinkingSignature: "sigT"},
				{Type: llm.ContentText, Text: "Reading.", TextSignature: "sigX"},
				{Type: llm.ContentToolCall, ID: "read_1", Name: "read", Arguments: json.RawMessage(`{"path":"a"}`), ThoughtSignature: "sigC"},
				llm.ToolCall("write_2", "write", jsonpartial.Invalid([]byte(`{"path": "b`))),
			}},
		{Role: llm.RoleToolResult, ToolCallID: "read_1", ToolName: "read", Content: []llm.Content{llm.Text("A"), llm.Image("aGk=", "image/png")}},
		{Role: llm.RoleToolResult, ToolCallID: "write_2", ToolName: "write", IsError: true, Content: []llm.Content{llm.Text("bad args")}},
		{Role: llm.RoleAssistant, Provider: "anthropic", Model: "claude", API: "anthropic-messages", StopReason: llm.StopReasonToolUse,
			Content: []llm.Content{llm.Thinking("claude thoughts", "sig"), llm.Text("ok"),
				{Type: llm.ContentToolCall, ID: "toolu_1", Name: "ls", Arguments: json.RawMessage(`{}`), ThoughtSignature: "other"}}},
		{Role: llm.RoleToolResult, ToolCallID: "toolu_1", Content: []llm.Content{llm.Text("a b")}}, // name from its call
		{Role: llm.RoleAssistant, StopReason: llm.StopReasonError, Content: []llm.Content{llm.Text("failed")}},
		llm.UserText("next"),
	}
}

func TestRequestBody(t *testing.T) {
	var c capture
	srv := serve(t, 200, nil, fixture(t, "text.sse"), &c)
	temp := 0.2
	req := &llm.Request{
		SystemPrompt: "You are terse.",
		Tools: []llm.ToolSpec{
			{Name: "read", Description: "Read a file", Parameters: json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`)},
			{Name: "ls", Description: "List", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
		},
		Options:  llm.Options{Thinking: llm.ThinkingHigh, Temperature: &temp, ToolChoice: "read", MaxTokens: 1000},
		Messages: history(),
	}
	if r := collect(t, newModel(srv, 0), context.Background(), req); r.Err != nil {
		t.Fatal(r.Err)
	}
	var body map[string]any
	if err := json.Unmarshal(c.Body, &body); err != nil {
		t.Fatal(err)
	}
	checks := []struct{ name, got, want string }{
		{"systemInstruction", js(body["systemInstruction"]), `{"parts":[{"text":"You are terse."}]}`},
		{"tools", js(body["tools"]), `[{"functionDeclarations":[{"description":"Read a file","name":"read","parameters":{"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}},{"description":"List","name":"ls"}]}]`},
		{"toolConfig", js(body["toolConfig"]), `{"functionCallingConfig":{"allowedFunctionNames":["read"],"mode":"ANY"}}`},
		{"generationConfig", js(body["generationConfig"]), `{"maxOutputTokens":33768,"temperature":0.2,"thinkingConfig":{"includeThoughts":true,"thinkingBudget":32768}}`},
		{"contents", js(body["contents"]), `[` +
			`{"parts":[{"text":"look"}],"role":"user"},` +
			`{"parts":[{"text":"I should read it.","thought":true,"thoughtSignature":"sigT"},{"text":"Reading.","thoughtSignature":"sigX"},` +
			`{"functionCall":{"args":{"path":"a"},"name":"read"},"thoughtSignature":"sigC"},{"functionCall":{"args":{},"name":"write"}}],"role":"model"},` +
			`{"parts":[{"functionResponse":{"name":"read","response":{"output":"A"}}},{"inlineData":{"data":"aGk=","mimeType":"image/png"}},` +
			`{"functionResponse":{"name":"write","response":{"error":"bad args"}}}],"role":"user"},` +
			`{"parts":[{"text":"claude thoughts"},{"text":"ok"},{"functionCall":{"args":{},"name":"ls"}}],"role":"model"},` +
			`{"parts":[{"functionResponse":{"name":"ls","response":{"output":"a b"}}},{"text":"next"}],"role":"user"}]`},
	}
	for _, ck := range checks {
		if ck.got != ck.want {
			t.Errorf("%s\n got %s\nwant %s", ck.name, ck.got, ck.want)
		}
	}
	if c.Query != "alt=sse" || c.Header.Get("X-Goog-Api-Key") != testKey {
		t.Errorf("query %q, key header %q", c.Query, c.Header.Get("X-Goog-Api-Key"))
	}
}

// Gemini 3 takes a thinking level; a call another model made gets the
// documented placeholder signature.
func TestGemini3(t *testing.T) {
	var c capture
	srv := serve(t, 200, nil, fixture(t, "text.sse"), &c)
	req := &llm.Request{Messages: history(), Options: llm.Options{Thinking: llm.ThinkingMinimal}}
	if r := collect(t, newModelID(srv, 0, "gemini-3-flash-preview"), context.Background(), req); r.Err != nil {
		t.Fatal(r.Err)
	}
	var body struct {
		GenerationConfig json.RawMessage `json:"generationConfig"`
		Contents         []struct {
			Parts []map[string]json.RawMessage `json:"parts"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(c.Body, &body); err != nil {
		t.Fatal(err)
	}
	if got := string(body.GenerationConfig); got != `{"thinkingConfig":{"includeThoughts":true,"thinkingLevel":"MINIMAL"}}` {
		t.Errorf("generationConfig %s", got)
	}
	// History from gemini-test is another model now: its signatures are
	// not sent, and every call carries the placeholder.
	var sigs []string
	for _, ct := range body.Contents {
		for _, p := range ct.Parts {
			if s, ok := p["thoughtSignature"]; ok {
				sigs = append(sigs, string(s))
			}
		}
	}
	want := fmt.Sprintf("%q %q %q", google.SkipSignature, google.SkipSignature, google.SkipSignature)
	if got := fmt.Sprintf("%s %s %s", sigs[0], sigs[1], sigs[2]); len(sigs) != 3 || got != want {
		t.Errorf("signatures %v", sigs)
	}
}

func TestThinkingConfig(t *testing.T) {
	tests := []struct {
		id        string
		reasoning bool
		level     llm.ThinkingLevel
		want      string
	}{
		{"gemini-2.5-pro", true, llm.ThinkingOff, `{"thinkingBudget":128}`},
		{"gemini-2.5-pro", true, llm.ThinkingMedium, `{"includeThoughts":true,"thinkingBudget":8192}`},
		{"gemini-2.5-pro", true, llm.ThinkingXHigh, `{"includeThoughts":true,"thinkingBudget":32768}`},
		{"gemini-2.5-flash", true, "", `{"thinkingBudget":0}`},
		{"gemini-2.5-flash", true, llm.ThinkingLow, `{"includeThoughts":true,"thinkingBudget":2048}`},
		{"gemini-2.5-flash", true, llm.ThinkingHigh, `{"includeThoughts":true,"thinkingBudget":24576}`},
		{"gemini-2.5-flash-lite", true, llm.ThinkingMinimal, `{"includeThoughts":true,"thinkingBudget":512}`},
		{"gemini-3-pro-preview", true, llm.ThinkingLow, `{"includeThoughts":true,"thinkingLevel":"LOW"}`},
		{"gemini-3-pro-preview", true, llm.ThinkingMedium, `{"includeThoughts":true,"thinkingLevel":"HIGH"}`},
		{"gemini-3-pro-preview", true, llm.ThinkingOff, `{"thinkingLevel":"LOW"}`},
		{"gemini-3-flash-preview", true, llm.ThinkingMedium, `{"includeThoughts":true,"thinkingLevel":"MEDIUM"}`},
		{"gemini-2.0-flash", false, llm.ThinkingHigh, `null`},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.id, " ", tt.level), func(t *testing.T) {
			var c capture
			srv := serve(t, 200, nil, fixture(t, "text.sse"), &c)
			m := google.New(google.Config{Info: llm.ModelInfo{ID: tt.id, Reasoning: tt.reasoning}, BaseURL: srv.URL, HTTPClient: srv.Client()})
			req := simpleRequest()
			req.Options.Thinking = tt.level
			if r := collect(t, m, context.Background(), req); r.Err != nil {
				t.Fatal(r.Err)
			}
			var body struct {
				GenerationConfig struct {
					ThinkingConfig json.RawMessage `json:"thinkingConfig"`
				} `json:"generationConfig"`
			}
			if err := json.Unmarshal(c.Body, &body); err != nil {
				t.Fatal(err)
			}
			got := string(body.GenerationConfig.ThinkingConfig)
			if got == "" {
				got = "null"
			}
			if got != tt.want {
				t.Errorf("thinkingConfig %s, want %s", got, tt.want)
			}
			if c.Path != "/models/"+tt.id+":streamGenerateContent" {
				t.Errorf("path %q", c.Path)
			}
		})
	}
}

func TestSanitizeSchema(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"empty", ``, ``},
		{"not an object", `[1]`, ``},
		{"object without properties", `{"type":"object","properties":{}}`, ``},
		{"drops unknown keywords", `{"$schema":"x","$id":"y","type":"object","additionalProperties":false,"properties":{"a":{"type":"string","default":"x","examples":["q"],"minLength":1}}}`,
			`{"properties":{"a":{"minLength":1,"type":"string"}},"type":"object"}`},
		{"type array with null", `{"type":"object","properties":{"a":{"type":["string","null"]}}}`,
			`{"properties":{"a":{"nullable":true,"type":"string"}},"type":"object"}`},
		{"type array of two", `{"type":"object","properties":{"a":{"type":["string","integer"]}}}`,
			`{"properties":{"a":{"anyOf":[{"type":"string"},{"type":"integer"}]}},"type":"object"}`},
		{"const", `{"type":"object","properties":{"a":{"const":"on"}}}`,
			`{"properties":{"a":{"enum":["on"],"type":"string"}},"type":"object"}`},
		{"integer enum becomes a description", `{"type":"object","properties":{"n":{"type":"integer","enum":[1,2],"description":"Level."}}}`,
			`{"properties":{"n":{"description":"Level. One of: 1, 2.","type":"integer"}},"type":"object"}`},
		{"oneOf with null", `{"type":"object","properties":{"a":{"oneOf":[{"type":"number"},{"type":"null"}]}}}`,
			`{"properties":{"a":{"nullable":true,"type":"number"}},"type":"object"}`},
		{"anyOf kept", `{"type":"object","properties":{"a":{"anyOf":[{"type":"number"},{"type":"string","format":"uri"}]}}}`,
			`{"properties":{"a":{"anyOf":[{"type":"number"},{"type":"string"}]}},"type":"object"}`},
		{"ref and defs", `{"type":"object","$defs":{"P":{"type":"object","properties":{"x":{"type":"integer","format":"int64"}}}},"properties":{"p":{"$ref":"#/$defs/P","description":"A point."}}}`,
			`{"properties":{"p":{"description":"A point.","properties":{"x":{"format":"int64","type":"integer"}},"type":"object"}},"type":"object"}`},
		{"recursive ref is bounded", `{"type":"object","definitions":{"N":{"type":"object","properties":{"next":{"$ref":"#/definitions/N"}}}},"properties":{"n":{"$ref":"#/definitions/N"}}}`, ""},
		{"allOf merged", `{"allOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"properties":{"b":{"type":"boolean"}},"required":["b","zz"]}]}`,
			`{"properties":{"a":{"type":"string"},"b":{"type":"boolean"}},"required":["a","b"],"type":"object"}`},
		{"tuple items and missing items", `{"type":"object","properties":{"t":{"type":"array","items":[{"type":"string"}]},"u":{"type":"array"}}}`,
			`{"properties":{"t":{"items":{"type":"string"},"type":"array"},"u":{"items":{"type":"string"},"type":"array"}},"type":"object"}`},
		{"exclusive bounds", `{"type":"object","properties":{"n":{"type":"number","exclusiveMinimum":0,"maximum":5,"exclusiveMaximum":9}}}`,
			`{"properties":{"n":{"maximum":5,"minimum":0,"type":"number"}},"type":"object"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(google.SanitizeSchema(json.RawMessage(tt.in)))
			if tt.name == "recursive ref is bounded" {
				if got == "" || len(got) > 20000 {
					t.Errorf("got %d bytes", len(got))
				}
				return
			}
			if got != tt.want {
				t.Errorf("\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func ExampleNew() {
	m := google.New(google.Config{
		Info:   llm.ModelInfo{ID: "gemini-2.5-flash", Provider: "google", API: llm.APIGoogleGenerativeAI, Reasoning: true},
		APIKey: "your key, sent as x-goog-api-key",
	})
	fmt.Println(m.Info().ID)
	// Output: gemini-2.5-flash
}

// The thinking budget is added to a requested output cap (Gemini counts
// thoughts as output), within the model's limit; no cap asked, none sent.
func TestMaxOutputTokensMakeRoomForThinking(t *testing.T) {
	tests := []struct {
		max  int
		lvl  llm.ThinkingLevel
		want string
	}{
		{1000, llm.ThinkingLow, `"maxOutputTokens":3048`},
		{60000, llm.ThinkingHigh, `"maxOutputTokens":65536`},
		{1000, llm.ThinkingOff, `"maxOutputTokens":1128`},
		{0, llm.ThinkingHigh, `{"thinkingConfig"`},
	}
	for _, tt := range tests {
		var c capture
		srv := serve(t, 200, nil, fixture(t, "text.sse"), &c)
		req := simpleRequest()
		req.Options = llm.Options{MaxTokens: tt.max, Thinking: tt.lvl}
		if r := collect(t, newModelID(srv, 0, "gemini-2.5-pro"), context.Background(), req); r.Err != nil {
			t.Fatal(r.Err)
		}
		var body struct {
			GenerationConfig json.RawMessage `json:"generationConfig"`
		}
		json.Unmarshal(c.Body, &body)
		if got := string(body.GenerationConfig); !strings.Contains(got, tt.want) {
			t.Errorf("max %d %s: generationConfig %s, want %s", tt.max, tt.lvl, got, tt.want)
		}
	}
}
