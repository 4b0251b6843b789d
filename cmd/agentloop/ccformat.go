package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/reply"
	"github.com/agentloop/agentloop/runner"
)

// The --output-format json and stream-json of print mode, in the shapes
// scripts written for `claude -p` read: one result object at the end, or
// one line per message (system/init, assistant, user with tool results)
// and the result last. --json stays our own protocol (docs/protocol.md).

// Output formats.
const (
	formatText       = "text"
	formatJSON       = "json"
	formatStreamJSON = "stream-json"
)

// ccUsage is the usage object of a result or an assistant message.
type ccUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

func ccUsageOf(u llm.Usage) ccUsage {
	return ccUsage{InputTokens: u.Input, OutputTokens: u.Output, CacheCreationInputTokens: u.CacheWrite, CacheReadInputTokens: u.CacheRead}
}

// ccResult is the last line: how the run ended.
type ccResult struct {
	Type          string  `json:"type"`
	Subtype       string  `json:"subtype"`
	IsError       bool    `json:"is_error"`
	Result        string  `json:"result"`
	SessionID     string  `json:"session_id"`
	NumTurns      int     `json:"num_turns"`
	DurationMS    int64   `json:"duration_ms"`
	DurationAPIMS int64   `json:"duration_api_ms"`
	TotalCostUSD  float64 `json:"total_cost_usd"`
	Usage         ccUsage `json:"usage"`
	Model         string  `json:"model"`
	StopReason    string  `json:"stop_reason,omitempty"`
}

// ccInit is the first stream-json line.
type ccInit struct {
	Type      string   `json:"type"`
	Subtype   string   `json:"subtype"`
	Cwd       string   `json:"cwd"`
	SessionID string   `json:"session_id"`
	Tools     []string `json:"tools"`
	Model     string   `json:"model"`
}

// ccBlock is a content block in Anthropic's shape.
type ccBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text,omitempty"`
	Thinking  *string         `json:"thinking,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   *string         `json:"content,omitempty"`
	IsError   *bool           `json:"is_error,omitempty"`
}

type ccMessage struct {
	Role       string    `json:"role"`
	Model      string    `json:"model,omitempty"`
	Content    []ccBlock `json:"content"`
	StopReason string    `json:"stop_reason,omitempty"`
	Usage      *ccUsage  `json:"usage,omitempty"`
}

// ccLine is an assistant or user line of stream-json.
type ccLine struct {
	Type            string    `json:"type"`
	Message         ccMessage `json:"message"`
	ParentToolUseID *string   `json:"parent_tool_use_id"`
	SessionID       string    `json:"session_id"`
}

// ccPrinter writes the json or stream-json output of one process: for
// --input-format stream-json, one result per turn.
type ccPrinter struct {
	enc     *json.Encoder
	errw    io.Writer
	stream  bool
	verbose bool
	model   string

	start     time.Time
	callStart time.Time
	apiTime   time.Duration
	turns     int
	sessionID string
	inited    bool
	last      string // the text of the last assistant reply
}

func newCCPrinter(env *cliEnv, format string, verbose bool, model string) *ccPrinter {
	enc := json.NewEncoder(env.stdout)
	enc.SetEscapeHTML(false)
	return &ccPrinter{enc: enc, errw: env.stderr, stream: format == formatStreamJSON, verbose: verbose, model: model, start: time.Now()}
}

func (p *ccPrinter) emit(v any) {
	if err := p.enc.Encode(v); err != nil {
		fmt.Fprintf(p.errw, "agentloop: cannot encode a line of output: %v\n", err)
	}
}

func (p *ccPrinter) event(re runner.Event) {
	if re.SessionID != "" {
		p.sessionID = re.SessionID
	}
	if re.Start != nil {
		if re.Start.Model != "" {
			p.model = re.Start.Model
		}
		if p.stream && !p.inited {
			p.inited = true
			tools := re.Start.Tools
			if tools == nil {
				tools = []string{}
			}
			p.emit(ccInit{Type: "system", Subtype: "init", Cwd: re.Start.Cwd, SessionID: p.sessionID, Tools: tools, Model: p.model})
		}
		return
	}
	ev := re.Agent
	if ev == nil {
		return
	}
	switch ev.Type {
	case agent.EventTurnStart:
		p.turns++
	case agent.EventMessageStart:
		if ev.Message != nil && ev.Message.Role == llm.RoleAssistant {
			p.callStart = time.Now()
		}
	case agent.EventMessageEnd:
		m := ev.Message
		if m == nil {
			return
		}
		switch m.Role {
		case llm.RoleAssistant:
			if !p.callStart.IsZero() {
				p.apiTime += time.Since(p.callStart)
				p.callStart = time.Time{}
			}
			if m.StopReason.Failed() {
				return // a failed attempt; the retry's reply follows
			}
			p.last = reply.StripTags(m.Text(), nil)
			if p.stream {
				p.emit(ccLine{Type: "assistant", Message: ccAssistant(m), SessionID: p.sessionID})
			}
		case llm.RoleToolResult:
			if p.stream {
				text := m.Text()
				isErr := m.IsError
				p.emit(ccLine{Type: "user", SessionID: p.sessionID, Message: ccMessage{Role: "user",
					Content: []ccBlock{{Type: "tool_result", ToolUseID: m.ToolCallID, Content: &text, IsError: &isErr}}}})
			}
			if p.verbose {
				fmt.Fprintf(p.errw, "  ← %s: %s\n", m.ToolName, oneLine(m.Text(), 300))
			}
		}
	}
}

// ccAssistant is an assistant message in Anthropic's shape.
func ccAssistant(m *llm.Message) ccMessage {
	out := ccMessage{Role: "assistant", Model: m.Model, Content: []ccBlock{}, StopReason: ccStopReason(m.StopReason)}
	for _, c := range m.Content {
		switch c.Type {
		case llm.ContentText:
			text := c.Text
			out.Content = append(out.Content, ccBlock{Type: "text", Text: &text})
		case llm.ContentThinking:
			th := c.Thinking
			out.Content = append(out.Content, ccBlock{Type: "thinking", Thinking: &th})
		case llm.ContentToolCall:
			in := c.Arguments
			if len(in) == 0 {
				in = json.RawMessage(`{}`)
			}
			out.Content = append(out.Content, ccBlock{Type: "tool_use", ID: c.ID, Name: c.Name, Input: in})
		}
	}
	if m.Usage != nil {
		u := ccUsageOf(*m.Usage)
		out.Usage = &u
	}
	return out
}

func ccStopReason(r llm.StopReason) string {
	switch r {
	case llm.StopReasonStop:
		return "end_turn"
	case llm.StopReasonToolUse:
		return "tool_use"
	case llm.StopReasonLength:
		return "max_tokens"
	}
	return string(r)
}

// finish writes the result line of a run.
func (p *ccPrinter) finish(res runner.Result, errMsg string) {
	r := ccResult{Type: "result", Subtype: "success", Result: p.last, SessionID: p.sessionID, NumTurns: p.turns,
		DurationMS: time.Since(p.start).Milliseconds(), DurationAPIMS: p.apiTime.Milliseconds(),
		TotalCostUSD: res.Usage.Cost.Total, Usage: ccUsageOf(res.Usage), Model: p.model, StopReason: ccStopReason(res.StopReason)}
	if res.SessionID != "" {
		r.SessionID = res.SessionID
	}
	if res.Model != "" {
		r.Model = res.Model
	}
	switch {
	case errMsg != "":
		r.Subtype, r.IsError, r.Result = "error_during_execution", true, errMsg
	case res.Reason == runner.ReasonStop:
	case res.Reason == runner.ReasonMaxTurns:
		r.Subtype, r.IsError = "error_max_turns", true
	default:
		r.Subtype, r.IsError = "error_during_execution", true
		if msg := strings.TrimSpace(res.Message); msg != "" {
			r.Result = msg
		} else if res.Err != nil {
			r.Result = describeError(res.Err)
		}
	}
	p.emit(r)
	// The next turn of the process counts afresh.
	p.start, p.apiTime, p.turns, p.last = time.Now(), 0, 0, ""
}

// ccSetupError is the one line of a run that could not start, in json and
// stream-json output.
func ccSetupError(w io.Writer, msg string) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(ccResult{Type: "result", Subtype: "error_during_execution", IsError: true, Result: msg})
}
