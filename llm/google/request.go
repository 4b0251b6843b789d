package google

import (
	"encoding/json"
	"strings"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/internal/wire"
)

// The request body of streamGenerateContent.
type request struct {
	Contents          []content         `json:"contents"`
	SystemInstruction *content          `json:"systemInstruction,omitempty"`
	Tools             []toolSet         `json:"tools,omitempty"`
	ToolConfig        *toolConfig       `json:"toolConfig,omitempty"`
	GenerationConfig  *generationConfig `json:"generationConfig,omitempty"`
}

type content struct {
	Role  string `json:"role,omitempty"`
	Parts []part `json:"parts"`
}

// part is any part we send; only the fields of its kind are set. Text is a
// pointer so that an empty text part that carries only a thought signature
// still says "text": "".
type part struct {
	Text             *string           `json:"text,omitempty"`
	Thought          bool              `json:"thought,omitempty"`
	ThoughtSignature string            `json:"thoughtSignature,omitempty"`
	InlineData       *blob             `json:"inlineData,omitempty"`
	FunctionCall     *functionCall     `json:"functionCall,omitempty"`
	FunctionResponse *functionResponse `json:"functionResponse,omitempty"`
}

type blob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

type functionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type functionResponse struct {
	ID       string         `json:"id,omitempty"`
	Name     string         `json:"name"`
	Response map[string]any `json:"response"`
}

type toolSet struct {
	FunctionDeclarations []functionDeclaration `json:"functionDeclarations"`
}

type functionDeclaration struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

type toolConfig struct {
	FunctionCallingConfig functionCallingConfig `json:"functionCallingConfig"`
}

type functionCallingConfig struct {
	Mode                 string   `json:"mode"`
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

type generationConfig struct {
	MaxOutputTokens int             `json:"maxOutputTokens,omitempty"`
	Temperature     *float64        `json:"temperature,omitempty"`
	ThinkingConfig  *thinkingConfig `json:"thinkingConfig,omitempty"`
}

type thinkingConfig struct {
	IncludeThoughts bool   `json:"includeThoughts,omitempty"`
	ThinkingBudget  *int   `json:"thinkingBudget,omitempty"`
	ThinkingLevel   string `json:"thinkingLevel,omitempty"`
}

// SkipSignature is the placeholder thought signature Gemini documents for
// function calls it did not produce itself (history from another model):
// Gemini 3 rejects a replayed call without any signature.
const SkipSignature = "skip_thought_signature_validator"

// Thinking budgets (tokens) per level for the Gemini 2.5 family, which
// takes a budget rather than a level.
var (
	// ProBudgets are for Gemini 2.5 Pro, which cannot turn thinking off
	// (128 is its least budget).
	ProBudgets = map[llm.ThinkingLevel]int{
		llm.ThinkingOff: 128, llm.ThinkingMinimal: 128, llm.ThinkingLow: 2048,
		llm.ThinkingMedium: 8192, llm.ThinkingHigh: 32768, llm.ThinkingXHigh: 32768,
	}
	// FlashBudgets are for Gemini 2.5 Flash and Flash-Lite; 0 turns
	// thinking off.
	FlashBudgets = map[llm.ThinkingLevel]int{
		llm.ThinkingOff: 0, llm.ThinkingMinimal: 128, llm.ThinkingLow: 2048,
		llm.ThinkingMedium: 8192, llm.ThinkingHigh: 24576, llm.ThinkingXHigh: 24576,
	}
)

// flashLiteMinBudget is the least non-zero budget Flash-Lite accepts.
const flashLiteMinBudget = 512

func isGemini3(id string) bool { return strings.Contains(id, "gemini-3") }

func isFlash(id string) bool { return strings.Contains(id, "flash") }

// thinking builds the thinkingConfig for a level, or nil for a model that
// does not think.
func thinking(info *llm.ModelInfo, lvl llm.ThinkingLevel) *thinkingConfig {
	if !info.Reasoning {
		return nil
	}
	if lvl == "" {
		lvl = llm.ThinkingOff
	}
	id := strings.ToLower(info.ID)
	tc := &thinkingConfig{IncludeThoughts: lvl.Enabled()}
	if isGemini3(id) {
		// Gemini 3 takes a level and cannot stop thinking: off asks for
		// the least thinking and hides it.
		switch {
		case isFlash(id):
			tc.ThinkingLevel = map[llm.ThinkingLevel]string{
				llm.ThinkingOff: "MINIMAL", llm.ThinkingMinimal: "MINIMAL", llm.ThinkingLow: "LOW",
				llm.ThinkingMedium: "MEDIUM", llm.ThinkingHigh: "HIGH", llm.ThinkingXHigh: "HIGH",
			}[lvl]
		default:
			tc.ThinkingLevel = "HIGH"
			if lvl == llm.ThinkingOff || lvl == llm.ThinkingMinimal || lvl == llm.ThinkingLow {
				tc.ThinkingLevel = "LOW"
			}
		}
		if tc.ThinkingLevel == "" {
			tc.ThinkingLevel = "HIGH"
		}
		return tc
	}
	budgets := ProBudgets
	if isFlash(id) {
		budgets = FlashBudgets
	}
	b, ok := budgets[lvl]
	if !ok {
		b = budgets[llm.ThinkingMedium]
	}
	if strings.Contains(id, "flash-lite") && b > 0 && b < flashLiteMinBudget {
		b = flashLiteMinBudget
	}
	tc.ThinkingBudget = &b
	return tc
}

func (m *Model) buildRequest(req *llm.Request) *request {
	info := &m.cfg.Info
	r := &request{}
	gc := &generationConfig{MaxOutputTokens: req.Options.MaxTokens, Temperature: req.Options.Temperature}
	gc.ThinkingConfig = thinking(info, req.Options.Thinking)
	if tc := gc.ThinkingConfig; tc != nil && tc.ThinkingBudget != nil && gc.MaxOutputTokens > 0 {
		// Gemini counts thoughts as output: make room for the budget, within
		// the model's limit, so a small cap is not all spent thinking.
		gc.MaxOutputTokens += *tc.ThinkingBudget
		if info.MaxTokens > 0 {
			gc.MaxOutputTokens = min(gc.MaxOutputTokens, info.MaxTokens)
		}
	}
	if gc.MaxOutputTokens > 0 || gc.Temperature != nil || gc.ThinkingConfig != nil {
		r.GenerationConfig = gc
	}
	if req.SystemPrompt != "" {
		s := req.SystemPrompt
		r.SystemInstruction = &content{Parts: []part{{Text: &s}}}
	}
	if len(req.Tools) > 0 {
		decls := make([]functionDeclaration, 0, len(req.Tools))
		for _, t := range req.Tools {
			decls = append(decls, functionDeclaration{Name: t.Name, Description: t.Description, Parameters: SanitizeSchema(t.Parameters)})
		}
		r.Tools = []toolSet{{FunctionDeclarations: decls}}
		switch c := req.Options.ToolChoice; c {
		case "", "auto":
		case "none":
			r.ToolConfig = &toolConfig{functionCallingConfig{Mode: "NONE"}}
		case "required", "any":
			r.ToolConfig = &toolConfig{functionCallingConfig{Mode: "ANY"}}
		default:
			r.ToolConfig = &toolConfig{functionCallingConfig{Mode: "ANY", AllowedFunctionNames: []string{c}}}
		}
	}
	r.Contents = m.convertMessages(req.Messages)
	return r
}

// convertMessages turns the history into Gemini contents: user and tool
// results become "user" contents, assistant messages "model" contents, and
// adjacent contents of one role are merged (Gemini wants the roles to
// alternate, and all responses to one turn's calls in one content).
func (m *Model) convertMessages(msgs []llm.Message) []content {
	out := make([]content, 0, len(msgs))
	// Gemini pairs a response with its call by name: a result stored
	// without one takes its call's.
	names := map[string]string{}
	for i := range msgs {
		out = m.convertMessage(out, &msgs[i], names)
	}
	return out
}

// convertMessage adds one history message to out, merging it into the
// last content when that has its role.
func (m *Model) convertMessage(out []content, msg *llm.Message, names map[string]string) []content {
	add := func(role string, parts []part) {
		if len(parts) == 0 {
			return
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Parts = append(out[n-1].Parts, parts...)
			return
		}
		out = append(out, content{Role: role, Parts: parts})
	}
	switch msg.Role {
	case llm.RoleUser:
		add("user", userParts(msg.Content))
	case llm.RoleAssistant:
		for _, c := range msg.Content {
			if c.Type == llm.ContentToolCall {
				names[c.ID] = c.Name
			}
		}
		add("model", m.modelParts(msg))
	case llm.RoleToolResult:
		add("user", toolResultParts(msg, names[msg.ToolCallID]))
	}
	return out
}

// histState is where an incremental build continues from: the calls'
// names so far and the last content, which the next message may join.
type histState struct {
	names map[string]string
	open  []content
}

// encodeRequest is json.Marshal(buildRequest(req)), byte for byte, with
// the settled contents (all but the last) taken from the model's History
// when the request continues the conversation of the one before: only
// the messages appended since are converted and encoded. It returns the
// request without its contents, for its other fields.
func (m *Model) encodeRequest(req *llm.Request) (wire.Encoded, *request, error) {
	r := m.buildRequest(&llm.Request{SystemPrompt: req.SystemPrompt, Tools: req.Tools, Options: req.Options})
	r.Contents = nil
	head, err := json.Marshal(r)
	if err != nil {
		return nil, nil, err
	}
	msgs := req.Messages
	n, enc, st := m.hist.Take(msgs)
	if st == nil {
		n, enc, st = 0, nil, &histState{names: map[string]string{}}
	}
	out := st.open
	for i := n; i < len(msgs); i++ {
		out = m.convertMessage(out, &msgs[i], st.names)
	}
	settled := max(0, len(out)-1)
	if enc, err = wire.AppendElements(enc, out[:settled]); err != nil {
		m.hist.Drop()
		return nil, nil, err
	}
	open := append([]content(nil), out[settled:]...)
	last, err := wire.AppendElements(nil, open)
	if err != nil {
		m.hist.Drop()
		return nil, nil, err
	}
	m.hist.Keep(msgs, n, enc, &histState{names: st.names, open: open})
	body, err := wire.Splice(head, "contents", "[]", enc, last)
	return body, r, err
}

func userParts(cs []llm.Content) []part {
	parts := make([]part, 0, len(cs))
	for _, c := range cs {
		switch c.Type {
		case llm.ContentText:
			if c.Text != "" {
				t := c.Text
				parts = append(parts, part{Text: &t})
			}
		case llm.ContentImage:
			parts = append(parts, part{InlineData: &blob{MimeType: c.MimeType, Data: c.Data}})
		}
	}
	return parts
}

// toolResultParts answers one call: its text as the function's output (or
// error), and its images as inline data after it.
func toolResultParts(msg *llm.Message, callName string) []part {
	var text strings.Builder
	var images []part
	for _, c := range msg.Content {
		switch c.Type {
		case llm.ContentText:
			if text.Len() > 0 {
				text.WriteByte('\n')
			}
			text.WriteString(c.Text)
		case llm.ContentImage:
			images = append(images, part{InlineData: &blob{MimeType: c.MimeType, Data: c.Data}})
		}
	}
	s := text.String()
	if s == "" && len(images) > 0 {
		s = "(see the attached image)"
	}
	key := "output"
	if msg.IsError {
		key = "error"
	}
	name := msg.ToolName
	if name == "" {
		name = callName
	}
	parts := []part{{FunctionResponse: &functionResponse{Name: name, Response: map[string]any{key: s}}}}
	return append(parts, images...)
}

// modelParts replays an assistant message. Thought parts and signatures go
// back only to the model that made them; another model's thinking becomes
// plain text. A failed message without calls is left out.
func (m *Model) modelParts(msg *llm.Message) []part {
	if wire.Dropped(msg) {
		return nil
	}
	same := m.site.Made(msg, llm.APIGoogleGenerativeAI)
	gemini3 := isGemini3(strings.ToLower(m.cfg.Info.ID))
	parts := make([]part, 0, len(msg.Content))
	for _, c := range msg.Content {
		switch c.Type {
		case llm.ContentText:
			sig := ""
			if same {
				sig = c.TextSignature
			}
			if c.Text != "" || sig != "" {
				t := c.Text
				parts = append(parts, part{Text: &t, ThoughtSignature: sig})
			}
		case llm.ContentThinking:
			switch {
			case c.Redacted:
				// Another provider's opaque reasoning: nothing to send.
			case same:
				if c.Thinking != "" || c.ThinkingSignature != "" {
					t := c.Thinking
					parts = append(parts, part{Text: &t, Thought: true, ThoughtSignature: c.ThinkingSignature})
				}
			case c.Thinking != "":
				t := c.Thinking
				parts = append(parts, part{Text: &t})
			}
		case llm.ContentToolCall:
			args := wire.ObjectArgs(c.Arguments)
			sig := ""
			if same {
				sig = c.ThoughtSignature
			}
			if sig == "" && gemini3 && !same {
				sig = SkipSignature
			}
			parts = append(parts, part{FunctionCall: &functionCall{Name: c.Name, Args: args}, ThoughtSignature: sig})
		}
	}
	return parts
}
