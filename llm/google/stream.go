package google

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/internal/wire"
	"github.com/agentloop/agentloop/llm/sse"
)

// chunk is one GenerateContentResponse of the stream. Only the first
// candidate is read (we never ask for more); an array of one keeps the
// decoder from allocating a slice per chunk, as does usage by value.
type chunk struct {
	Candidates [1]struct {
		Content struct {
			Parts []streamPart `json:"parts"`
		} `json:"content"`
		FinishReason  string         `json:"finishReason"`
		FinishMessage string         `json:"finishMessage"`
		SafetyRatings []safetyRating `json:"safetyRatings"`
	} `json:"candidates"`
	UsageMetadata  usageMetadata `json:"usageMetadata"`
	PromptFeedback *struct {
		BlockReason        string         `json:"blockReason"`
		BlockReasonMessage string         `json:"blockReasonMessage"`
		SafetyRatings      []safetyRating `json:"safetyRatings"`
	} `json:"promptFeedback"`
	Error json.RawMessage `json:"error"`
}

// streamPart is one part; a part without text, call or signature (inline
// data, executable code) is not modelled.
type streamPart struct {
	Text             string `json:"text"`
	Thought          bool   `json:"thought"`
	ThoughtSignature string `json:"thoughtSignature"`
	FunctionCall     *struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
		// With streamed arguments (streamFunctionCallArguments) a call
		// comes in parts: willContinue says more parts of this call
		// follow, partialArgs carry its arguments piece by piece.
		PartialArgs  []partialArg `json:"partialArgs"`
		WillContinue bool         `json:"willContinue"`
	} `json:"functionCall"`
}

type safetyRating struct {
	Category    string `json:"category"`
	Probability string `json:"probability"`
	Blocked     bool   `json:"blocked"`
}

type usageMetadata struct {
	PromptTokenCount        int `json:"promptTokenCount"`
	CandidatesTokenCount    int `json:"candidatesTokenCount"`
	ThoughtsTokenCount      int `json:"thoughtsTokenCount"`
	CachedContentTokenCount int `json:"cachedContentTokenCount"`
}

// apply sets the counters; Gemini's are cumulative, so the last chunk's
// win. The prompt count includes the cached part, which Usage keeps apart.
func (u *usageMetadata) apply(to *llm.Usage) {
	to.Input = max(0, u.PromptTokenCount-u.CachedContentTokenCount)
	to.Output = u.CandidatesTokenCount + u.ThoughtsTokenCount
	to.CacheRead = u.CachedContentTokenCount
}

// idCounter numbers synthesised tool-call ids.
type idCounter struct{ n atomic.Uint64 }

// next returns an id for a call that came without one: the tool's name,
// the time and a counter, unique across the conversation.
func (c *idCounter) next(name string) string {
	n := c.n.Add(1)
	return wire.SanitizeID(fmt.Sprintf("%s_%d_%d", name, time.Now().UnixMilli(), n), 64)
}

func (m *Model) stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		b := wire.NewBuilder(m.cfg.Info, m.site.Provider, llm.APIGoogleGenerativeAI, yield)
		body, greq, err := m.encodeRequest(req)
		if err != nil {
			b.Fail(fmt.Errorf("%s: encode request: %w", m.site.Provider, err))
			return
		}
		if gc := greq.GenerationConfig; gc != nil {
			b.LimitOutput(gc.MaxOutputTokens)
		}
		wire.Call(ctx, b, m.site.Post(map[string]string{
			"Content-Type":   "application/json",
			"Accept":         "text/event-stream",
			"X-Goog-Api-Key": m.cfg.APIKey,
		}), body, &decoder{m: m, b: b, cur: -1})
	}
}

// Event implements wire.Decoder. Gemini has no terminator, so no event
// finishes the reply.
func (d *decoder) Event(ev *sse.Event) (bool, error) {
	if ev.Done() || len(bytes.TrimSpace(ev.Data)) == 0 {
		return false, nil // a proxy's sentinel, or an empty event
	}
	return false, d.handle(ev.Data)
}

// Ended implements wire.Decoder: the body ends after the chunk that gave
// the finish reason, and the reply is complete if one came.
func (d *decoder) Ended() bool {
	if d.finish == "" {
		return false
	}
	d.end()
	return true
}

// Whole implements wire.WholeDecoder: a reply that came as one JSON
// document, the array of chunks streamGenerateContent sends when a proxy
// drops alt=sse, or one chunk.
func (d *decoder) Whole(body []byte) {
	m, b := d.m, d.b
	var chunks []json.RawMessage
	if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '[' {
		if err := json.Unmarshal(t, &chunks); err != nil {
			b.Fail(wire.Malformed(m.site.Provider, m.cfg.Info.ID, "the provider sent a reply that is not valid JSON", body))
			return
		}
	} else {
		chunks = []json.RawMessage{t}
	}
	for _, c := range chunks {
		if err := d.handle(c); err != nil {
			b.Fail(err)
			return
		}
		if b.Stopped() {
			return
		}
	}
	if d.finish == "" {
		b.Fail(wire.Truncated(m.site.Provider, m.cfg.Info.ID))
		return
	}
	d.end()
}

var _ wire.WholeDecoder = (*decoder)(nil)

// decoder maps the chunks onto the builder.
type decoder struct {
	m      *Model
	b      *wire.Builder
	cur    int // content index of the open text or thinking block, or -1
	finish string
	// finishMessage and blocked explain a safety or policy stop.
	finishMessage string
	blocked       []string
	seenIDs       map[string]bool
	// streaming is the call whose arguments are still arriving.
	streaming *streamedCall
	c         chunk
	json      wire.JSONReader
}

// handle applies one chunk.
func (d *decoder) handle(data []byte) error {
	m, b := d.m, d.b
	// Reuse the parts' backing array, zeroed: the decoder fills elements
	// in place and would keep a field the new part does not have.
	parts := d.c.Candidates[0].Content.Parts
	clear(parts[:cap(parts)])
	d.c = chunk{}
	d.c.Candidates[0].Content.Parts = parts[:0]
	c := &d.c
	if err := d.json.Decode(data, c); err != nil {
		return wire.Unreadable(m.site.Provider, m.cfg.Info.ID, data)
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return llm.NewHTTPError(m.site.Provider, m.cfg.Info.ID, 0, nil, data)
	}
	if c.UsageMetadata != (usageMetadata{}) {
		c.UsageMetadata.apply(b.Msg.Usage)
	}
	if pf := c.PromptFeedback; pf != nil && pf.BlockReason != "" {
		return d.blockedPrompt(pf.BlockReason, pf.BlockReasonMessage, pf.SafetyRatings)
	}
	cand := &c.Candidates[0]
	for i := range cand.Content.Parts {
		if !d.part(&cand.Content.Parts[i]) {
			return nil
		}
	}
	if cand.FinishReason != "" {
		d.finish = cand.FinishReason
		d.finishMessage = cand.FinishMessage
		d.blocked = flagged(cand.SafetyRatings)
	}
	return nil
}

// part applies one part; false means the consumer has gone.
func (d *decoder) part(p *streamPart) bool {
	b := d.b
	if fc := p.FunctionCall; fc != nil {
		if d.cur >= 0 && !b.End(d.cur) {
			return false
		}
		d.cur = -1
		if sc := d.streaming; sc != nil {
			if fc.Name == "" || fc.Name == b.Msg.Content[sc.index].Name {
				// The next part of the call being streamed.
				sc.add(fc.PartialArgs)
				if fc.WillContinue {
					return true
				}
				return d.endStreamed()
			}
			// Another call began: the streamed one is as complete as
			// it will get.
			if !d.endStreamed() {
				return false
			}
		}
		id := fc.ID
		if d.seenIDs == nil {
			d.seenIDs = map[string]bool{}
		}
		if id == "" || d.seenIDs[id] {
			id = d.m.ids.next(fc.Name)
		}
		d.seenIDs[id] = true
		i, ok := b.Begin(llm.Content{Type: llm.ContentToolCall, ID: id, Name: fc.Name, Arguments: json.RawMessage("{}"), ThoughtSignature: p.ThoughtSignature})
		if !ok {
			return false
		}
		if fc.WillContinue || len(fc.PartialArgs) > 0 {
			d.streaming = &streamedCall{index: i}
			d.streaming.add(fc.PartialArgs)
			if fc.WillContinue {
				return true
			}
			return d.endStreamed()
		}
		// Calls arrive whole: one delta with all the arguments.
		if args := bytes.TrimSpace(fc.Args); len(args) > 0 && string(args) != "null" && !b.ToolArgs(i, string(args)) {
			return false
		}
		return b.End(i)
	}
	text, sig := p.Text, p.ThoughtSignature
	if d.streaming != nil && text != "" && !d.endStreamed() {
		return false
	}
	typ := llm.ContentText
	if p.Thought {
		typ = llm.ContentThinking
	}
	if text == "" {
		if sig == "" {
			return true
		}
		// A signature alone closes the part it follows.
		if d.cur >= 0 && signature(&b.Msg.Content[d.cur]) == "" {
			setSignature(&b.Msg.Content[d.cur], sig)
			return true
		}
	}
	// A new block when the kind changes, or when the open block has been
	// sealed by a signature (the signature belongs to its own part).
	if d.cur >= 0 && (b.Msg.Content[d.cur].Type != typ || signature(&b.Msg.Content[d.cur]) != "") {
		if !b.End(d.cur) {
			return false
		}
		d.cur = -1
	}
	if d.cur < 0 {
		i, ok := b.Begin(llm.Content{Type: typ})
		if !ok {
			return false
		}
		d.cur = i
	}
	if text != "" {
		var ok bool
		if typ == llm.ContentThinking {
			ok = b.Thinking(d.cur, text)
		} else {
			ok = b.Text(d.cur, text)
		}
		if !ok {
			return false
		}
	}
	if sig != "" {
		setSignature(&b.Msg.Content[d.cur], sig)
	}
	return true
}

func signature(c *llm.Content) string {
	if c.Type == llm.ContentThinking {
		return c.ThinkingSignature
	}
	return c.TextSignature
}

func setSignature(c *llm.Content, sig string) {
	if c.Type == llm.ContentThinking {
		c.ThinkingSignature = sig
	} else {
		c.TextSignature = sig
	}
}

// The finish reasons that mean Gemini withheld the reply, with what each
// one means, in our words.
var withheld = map[string]string{
	"SAFETY":             "its safety filters flagged the reply",
	"RECITATION":         "the reply would have recited copyrighted or training material",
	"BLOCKLIST":          "the reply contained a term from a blocklist",
	"PROHIBITED_CONTENT": "the reply touched prohibited content",
	"SPII":               "the reply contained sensitive personal information",
	"IMAGE_SAFETY":       "its safety filters flagged a generated image",
	"LANGUAGE":           "the reply was in a language the model does not support",
	"OTHER":              "of an unspecified policy",
}

// The finish reasons that mean the model's tool use went wrong.
var toolTrouble = map[string]string{
	"MALFORMED_FUNCTION_CALL": "the model produced a function call that could not be parsed",
	"UNEXPECTED_TOOL_CALL":    "the model called a tool although tools were disabled for this request",
	"TOO_MANY_TOOL_CALLS":     "the model made more tool calls in a row than Gemini allows",
}

// endStreamed ends the call whose arguments were streamed: its assembled
// arguments arrive as one delta, and its block ends.
func (d *decoder) endStreamed() bool {
	sc := d.streaming
	d.streaming = nil
	if args := sc.json(); args != "{}" && !d.b.ToolArgs(sc.index, args) {
		return false
	}
	return d.b.End(sc.index)
}

// end finishes a stream whose body ended after a finish reason.
func (d *decoder) end() {
	m, b := d.m, d.b
	if d.streaming != nil && !d.endStreamed() {
		return
	}
	hasCalls := len(b.Msg.ToolCalls()) > 0
	switch r := d.finish; {
	case r == "STOP" || r == "FINISH_REASON_UNSPECIFIED":
		if hasCalls {
			b.Done(llm.StopReasonToolUse)
		} else {
			b.Done(llm.StopReasonStop)
		}
	case r == "MAX_TOKENS":
		// Gemini's calls arrive whole, so a call made before the cap is
		// complete and is run.
		if hasCalls {
			b.Done(llm.StopReasonToolUse)
		} else {
			b.Done(llm.StopReasonLength)
		}
	case withheld[r] != "":
		text := fmt.Sprintf("%s: Gemini withheld the reply because %s", r, withheld[r])
		if len(d.blocked) > 0 {
			text += " (" + strings.Join(d.blocked, ", ") + ")"
		}
		if d.finishMessage != "" {
			text += ": " + d.finishMessage
		}
		b.Fail(llm.NewHTTPError(m.site.Provider, m.cfg.Info.ID, 0, nil, []byte(text+". Rephrase the request or leave out the flagged content.")))
	case toolTrouble[r] != "":
		text := fmt.Sprintf("%s: %s", r, toolTrouble[r])
		if d.finishMessage != "" {
			text += ": " + d.finishMessage
		}
		b.Fail(llm.NewHTTPError(m.site.Provider, m.cfg.Info.ID, 0, nil, []byte(text)))
	default:
		// A finish reason newer than this code: the message is complete.
		if hasCalls {
			b.Done(llm.StopReasonToolUse)
		} else {
			b.Done(llm.StopReasonStop)
		}
	}
}

// blockedPrompt reports a prompt Gemini refused to answer at all.
func (d *decoder) blockedPrompt(reason, message string, ratings []safetyRating) error {
	text := fmt.Sprintf("prompt blocked (%s): Gemini refused to answer this prompt", reason)
	if f := flagged(ratings); len(f) > 0 {
		text += " (" + strings.Join(f, ", ") + ")"
	}
	if message != "" {
		text += ": " + message
	}
	return llm.NewHTTPError(d.m.site.Provider, d.m.cfg.Info.ID, 0, nil, []byte(text+". Rephrase the request or leave out the flagged content."))
}

// flagged names the safety categories that blocked or rated high.
func flagged(ratings []safetyRating) []string {
	var out []string
	for _, r := range ratings {
		if r.Blocked || r.Probability == "HIGH" || r.Probability == "MEDIUM" {
			out = append(out, fmt.Sprintf("%s %s", strings.TrimPrefix(r.Category, "HARM_CATEGORY_"), strings.ToLower(r.Probability)))
		}
	}
	return out
}
