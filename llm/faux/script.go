package faux

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/agentloop/agentloop/llm"
)

// scriptFile is the JSON form of a script (see the package doc).
type scriptFile struct {
	Model *struct {
		ID            string     `json:"id"`
		Name          string     `json:"name"`
		ContextWindow int        `json:"contextWindow"`
		MaxTokens     int        `json:"maxTokens"`
		Cost          llm.Prices `json:"cost"`
	} `json:"model"`
	Repeat bool       `json:"repeat"`
	Steps  []stepJSON `json:"steps"`
}

type stepJSON struct {
	Thinking   string         `json:"thinking"`
	Text       string         `json:"text"`
	ToolCalls  []toolCallJSON `json:"toolCalls"`
	Content    []llm.Content  `json:"content"`
	StopReason llm.StopReason `json:"stopReason"`
	Error      *failureJSON   `json:"error"`
	DelayMs    int            `json:"delayMs"`
	TailMs     int            `json:"tailMs"`
	Usage      *llm.Usage     `json:"usage"`
}

type toolCallJSON struct {
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Arguments    json.RawMessage `json:"arguments"`
	RawArguments *string         `json:"rawArguments"`
}

type failureJSON struct {
	Reason       llm.Reason `json:"reason"`
	Status       int        `json:"status"`
	Message      string     `json:"message"`
	RetryAfterMs int        `json:"retryAfterMs"`
	BeforeStart  bool       `json:"beforeStart"`
}

var stopReasons = map[llm.StopReason]bool{
	"": true, llm.StopReasonStop: true, llm.StopReasonLength: true, llm.StopReasonToolUse: true,
}

// Parse reads a script in the JSON format of the package doc.
func Parse(data []byte) (*Model, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f scriptFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("faux script: %w (see docs/faux.md for the format)", err)
	}
	steps := make([]Step, 0, len(f.Steps))
	for i, sj := range f.Steps {
		s, err := sj.step()
		if err != nil {
			return nil, fmt.Errorf("faux script: step %d: %w", i+1, err)
		}
		steps = append(steps, s)
	}
	m := New(steps...)
	m.Repeat = f.Repeat
	if f.Model != nil {
		if f.Model.ID != "" {
			m.Info = defaultInfo(f.Model.ID)
		}
		if f.Model.Name != "" {
			m.Info.Name = f.Model.Name
		}
		if f.Model.ContextWindow > 0 {
			m.Info.ContextWindow = f.Model.ContextWindow
		}
		if f.Model.MaxTokens > 0 {
			m.Info.MaxTokens = f.Model.MaxTokens
		}
		m.Info.Cost = f.Model.Cost
	}
	return m, nil
}

func (sj *stepJSON) step() (Step, error) {
	var s Step
	if sj.Thinking != "" {
		s.Content = append(s.Content, Thinking(sj.Thinking))
	}
	if sj.Text != "" {
		s.Content = append(s.Content, Text(sj.Text))
	}
	for k, tc := range sj.ToolCalls {
		if tc.Name == "" {
			return s, fmt.Errorf("toolCalls[%d] has no name", k)
		}
		var c llm.Content
		switch {
		case tc.RawArguments != nil:
			c = RawToolCall(tc.Name, *tc.RawArguments)
		case len(tc.Arguments) > 0:
			c = ToolCall(tc.Name, tc.Arguments)
		default:
			c = ToolCall(tc.Name, nil)
		}
		c.ID = tc.ID
		s.Content = append(s.Content, c)
	}
	for k, c := range sj.Content {
		switch c.Type {
		case llm.ContentText, llm.ContentThinking, llm.ContentToolCall, llm.ContentImage:
		default:
			return s, fmt.Errorf("content[%d] has type %q; use text, thinking, toolCall or image", k, c.Type)
		}
		s.Content = append(s.Content, c)
	}
	if !stopReasons[sj.StopReason] {
		return s, fmt.Errorf("stopReason %q is not one of stop, length, toolUse (failures go in \"error\")", sj.StopReason)
	}
	s.StopReason = sj.StopReason
	if e := sj.Error; e != nil {
		if e.Reason == "" {
			return s, fmt.Errorf("error needs a reason such as rate_limit, overloaded or context_overflow")
		}
		s.Err = &Failure{
			Reason: e.Reason, Status: e.Status, Message: e.Message,
			RetryAfter: time.Duration(e.RetryAfterMs) * time.Millisecond, BeforeStart: e.BeforeStart,
		}
	}
	if sj.DelayMs < 0 || sj.TailMs < 0 {
		return s, fmt.Errorf("delayMs and tailMs must not be negative")
	}
	s.Delay = time.Duration(sj.DelayMs) * time.Millisecond
	s.Tail = time.Duration(sj.TailMs) * time.Millisecond
	s.Usage = sj.Usage
	return s, nil
}

// Load reads a script file. The model's id, unless the file sets one, is
// the file's base name without extension.
func Load(path string) (*Model, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load faux script: %w", err)
	}
	m, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

var builtins = map[string]func() *Model{
	"demo": Demo,
}

// Builtin returns a fresh model playing the built-in script called name
// ("demo"), for --model faux/<name>.
func Builtin(name string) (*Model, error) {
	f, ok := builtins[name]
	if !ok {
		return nil, fmt.Errorf("faux: no built-in script %q; built-in scripts: %s (or pass a script file with --script)",
			name, strings.Join(BuiltinNames(), ", "))
	}
	return f(), nil
}

// BuiltinNames lists the built-in scripts.
func BuiltinNames() []string {
	names := make([]string, 0, len(builtins))
	for n := range builtins {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
