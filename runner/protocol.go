package runner

import (
	"encoding/json"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/compact"
	"github.com/agentloop/agentloop/llm"
)

// ProtocolVersion is the "v" of every event line (docs/protocol.md).
const ProtocolVersion = 2

// line is one event of protocol v2: the envelope, then the payload's
// fields beside it. Fields that do not apply are left out.
type line struct {
	V         int             `json:"v"`
	Type      agent.EventType `json:"type"`
	Seq       int64           `json:"seq"`
	RunID     string          `json:"runId"`
	SessionID string          `json:"sessionId,omitempty"`

	// The agent's events.
	Turn       int             `json:"turn,omitempty"`
	Message    *llm.Message    `json:"message,omitempty"`
	Event      llm.EventType   `json:"event,omitempty"`
	Index      *int            `json:"contentIndex,omitempty"`
	Delta      string          `json:"delta,omitempty"`
	Block      *llm.Content    `json:"block,omitempty"`
	ToolCallID string          `json:"toolCallId,omitempty"`
	ToolName   string          `json:"toolName,omitempty"`
	Args       json.RawMessage `json:"args,omitempty"`
	Partial    *wireResult     `json:"partial,omitempty"`
	Result     *wireResult     `json:"result,omitempty"`
	IsError    *bool           `json:"isError,omitempty"`
	StopReason llm.StopReason  `json:"stopReason,omitempty"`
	Reason     string          `json:"reason,omitempty"`
	Usage      *llm.Usage      `json:"usage,omitempty"`
	Hook       string          `json:"hook,omitempty"`
	MaxTokens  int             `json:"maxTokens,omitempty"`
	Count      int             `json:"count,omitempty"`

	// run_start.
	Model   string   `json:"model,omitempty"`
	Cwd     string   `json:"cwd,omitempty"`
	Lane    string   `json:"lane,omitempty"`
	Tools   []string `json:"tools,omitempty"`
	Resumed bool     `json:"resumed,omitempty"`

	// The runner's notices and compaction's events.
	Text     string `json:"text,omitempty"`
	DelayMs  int64  `json:"delayMs,omitempty"`
	Attempt  int    `json:"attempt,omitempty"`
	Max      int    `json:"max,omitempty"`
	Position int    `json:"position,omitempty"`
	WaitedMs int64  `json:"waitedMs,omitempty"`
	Streamed bool   `json:"streamed,omitempty"`
	Window   int    `json:"window,omitempty"`

	Trigger      compact.Trigger `json:"trigger,omitempty"`
	Route        compact.Route   `json:"route,omitempty"`
	TokensBefore int             `json:"tokensBefore,omitempty"`
	TokensAfter  int             `json:"tokensAfter,omitempty"`
	Truncated    int             `json:"truncated,omitempty"`
	Record       *wireRecord     `json:"record,omitempty"`
	Records      []wireTrunc     `json:"records,omitempty"`
	Snip         *wireSnip       `json:"snip,omitempty"`

	// run_end.
	Attempts    int      `json:"attempts,omitempty"`
	Retries     int      `json:"retries,omitempty"`
	Compactions int      `json:"compactions,omitempty"`
	SessionPath string   `json:"sessionPath,omitempty"`
	Warnings    []string `json:"warnings,omitempty"`

	// subagent_start and subagent_end.
	TaskID           string `json:"taskId,omitempty"`
	ChildSessionID   string `json:"childSessionId,omitempty"`
	ParentToolCallID string `json:"parentToolCallId,omitempty"`
	Agent            string `json:"agent,omitempty"`
	Description      string `json:"description,omitempty"`
	Background       bool   `json:"background,omitempty"`
	Depth            int    `json:"depth,omitempty"`
	Status           string `json:"status,omitempty"`
	DurationMs       *int64 `json:"durationMs,omitempty"`
	Turns            int    `json:"turns,omitempty"`

	Error   string     `json:"error,omitempty"`
	Failure llm.Reason `json:"failure,omitempty"`
}

type wireResult struct {
	Content []llm.Content   `json:"content"`
	Details json.RawMessage `json:"details,omitempty"`
}

type wireRecord struct {
	Summary         string            `json:"summary"`
	FirstKeptIndex  int               `json:"firstKeptIndex"`
	TokensBefore    int               `json:"tokensBefore"`
	TokensAfter     int               `json:"tokensAfter"`
	Trigger         compact.Trigger   `json:"trigger,omitempty"`
	Files           compact.FileLists `json:"files"`
	Fallback        bool              `json:"fallback,omitempty"`
	DroppedMessages int               `json:"droppedMessages"`
}

type wireTrunc struct {
	Index         int    `json:"index"`
	ToolCallID    string `json:"toolCallId"`
	ToolName      string `json:"toolName,omitempty"`
	OriginalChars int    `json:"originalChars"`
	KeptChars     int    `json:"keptChars"`
	Reason        string `json:"reason"`
}

type wireSnip struct {
	FirstDroppedIndex int    `json:"firstDroppedIndex"`
	FirstKeptIndex    int    `json:"firstKeptIndex"`
	Note              string `json:"note"`
	DroppedMessages   int    `json:"droppedMessages"`
	DroppedTokens     int    `json:"droppedTokens"`
}

// MarshalJSON writes the event as one line of protocol v2, through
// llm.MarshalJSON (so <, > and & stay as they are): the envelope and the
// payload's fields beside it. A message_update carries only its delta (a
// finished tool call also its block), never the partial message, so a
// run's encoding grows linearly; turn_end and agent_end do not repeat
// messages already sent by message_end. This is the only place an event
// becomes JSON.
func (e Event) MarshalJSON() ([]byte, error) {
	w := line{V: ProtocolVersion, Type: e.Type, Seq: e.Seq, RunID: e.RunID, SessionID: e.SessionID}
	if a := e.Agent; a != nil {
		w.agent(a)
	}
	if st := e.Start; st != nil {
		w.Model, w.Cwd, w.Lane, w.Tools, w.Resumed = st.Model, st.Cwd, st.Lane, st.Tools, st.Resumed
	}
	if n := e.Notice; n != nil {
		w.Text, w.Reason, w.DelayMs, w.Attempt, w.Max = n.Message, n.Reason, n.Delay.Milliseconds(), n.Attempt, n.Max
		w.Lane, w.Position, w.WaitedMs, w.Streamed, w.Window = n.Lane, n.Position, n.Waited.Milliseconds(), n.Streamed, n.Window
		w.Tools = n.Tools
	}
	if l := e.Loop; l != nil {
		w.ToolCallID, w.ToolName, w.Count = l.CallID, l.Tool, l.Detection.Count
		w.Attempt = 0
	}
	if c := e.Compaction; c != nil {
		w.compaction(c)
	}
	if sa := e.Subagent; sa != nil {
		w.TaskID, w.ChildSessionID, w.ParentToolCallID, w.Agent = sa.TaskID, sa.ChildSessionID, sa.ParentToolCallID, sa.Agent
		w.Description, w.Background, w.Depth, w.Status, w.Turns = sa.Description, sa.Background, sa.Depth, sa.Status, sa.Turns
		if sa.Status != "" {
			ms := sa.Duration.Milliseconds()
			w.DurationMs = &ms
			if sa.Usage != (llm.Usage{}) {
				u := sa.Usage
				w.Usage = &u
			}
		}
	}
	if r := e.End; r != nil {
		w.Reason, w.StopReason, w.Text, w.Model = r.Reason, r.StopReason, r.Message, r.Model
		w.Attempts, w.Retries, w.Compactions, w.SessionPath = r.Attempts, r.Retries, r.Compactions, r.SessionPath
		w.Warnings = r.Warnings
		if r.Usage != (llm.Usage{}) {
			u := r.Usage
			w.Usage = &u
		}
		if r.Err != nil {
			w.Error, w.Failure = r.Err.Error(), llm.ReasonOf(r.Err)
		}
	}
	return llm.MarshalJSON(w)
}

// agent fills in an agent event's fields.
func (w *line) agent(e *agent.Event) {
	w.Turn, w.ToolCallID, w.ToolName, w.StopReason = e.Turn, e.ToolCallID, e.ToolName, e.StopReason
	w.Reason, w.Usage, w.Hook, w.MaxTokens, w.Count, w.Max = e.Reason, e.Usage, e.Hook, e.MaxTokens, e.Count, e.Max
	switch e.Type {
	case agent.EventMessageStart, agent.EventMessageEnd:
		w.Message = e.Message
	case agent.EventMessageUpdate:
		if ev := e.LLM; ev != nil {
			w.Event = ev.Type
			if ev.Type != llm.EventStart && !ev.Type.Terminal() {
				idx := ev.ContentIndex
				w.Index = &idx
			}
			w.Delta = ev.Delta
			if ev.Type == llm.EventToolCallStart && ev.Partial != nil && ev.ContentIndex < len(ev.Partial.Content) {
				b := &ev.Partial.Content[ev.ContentIndex]
				w.ToolCallID, w.ToolName = b.ID, b.Name
			}
			if ev.Type == llm.EventToolCallEnd {
				w.Block = ev.Block
			}
		}
	case agent.EventToolExecutionStart:
		w.Args = e.Args
	case agent.EventToolExecutionUpdate:
		if e.Partial != nil {
			w.Partial = &wireResult{Content: e.Partial.Content, Details: e.Partial.Details}
		}
	case agent.EventToolExecutionEnd:
		if r := e.Result; r != nil {
			content := r.Content
			if content == nil {
				content = []llm.Content{}
			}
			w.Result = &wireResult{Content: content, Details: r.Details}
			isErr := r.IsError
			w.IsError = &isErr
		}
	case agent.EventTurnEnd, agent.EventAgentEnd:
	default:
		w.Message = e.Message
		w.Args = e.Args
		if r := e.Result; r != nil {
			w.Result = &wireResult{Content: r.Content, Details: r.Details}
			isErr := r.IsError
			w.IsError = &isErr
		}
	}
	if e.Err != nil {
		w.Error = e.Err.Error()
		w.Failure = llm.ReasonOf(e.Err)
	}
}

// compaction fills in a compaction event's fields: a record without the
// summary's file lists repeated, truncation records without their content.
func (w *line) compaction(e *compact.Event) {
	w.Trigger, w.Route, w.TokensBefore, w.TokensAfter, w.Truncated = e.Trigger, e.Route, e.TokensBefore, e.TokensAfter, e.Truncated
	w.Text = e.Message
	if e.Err != nil {
		w.Error = e.Err.Error()
	}
	if r := e.Record; r != nil {
		w.Record = &wireRecord{Summary: compact.StripFiles(r.Summary), FirstKeptIndex: r.FirstKeptIndex, TokensBefore: r.TokensBefore,
			TokensAfter: r.TokensAfter, Trigger: r.Trigger, Files: r.Files, Fallback: r.Fallback, DroppedMessages: r.DroppedMessages}
	}
	if r := e.Snip; r != nil {
		w.Snip = &wireSnip{r.FirstDroppedIndex, r.FirstKeptIndex, r.Note, r.DroppedMessages, r.DroppedTokens}
	}
	for _, t := range e.Records {
		w.Records = append(w.Records, wireTrunc{t.Index, t.ToolCallID, t.ToolName, t.OriginalChars, t.KeptChars, t.Reason})
	}
}
