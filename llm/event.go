package llm

// EventType names a streaming event.
type EventType string

// The streaming events of one assistant message, in the order a stream may
// emit them: start once; then for each content block its _start, deltas and
// _end; then done or error.
const (
	EventStart         EventType = "start"
	EventTextStart     EventType = "text_start"
	EventTextDelta     EventType = "text_delta"
	EventTextEnd       EventType = "text_end"
	EventThinkingStart EventType = "thinking_start"
	EventThinkingDelta EventType = "thinking_delta"
	EventThinkingEnd   EventType = "thinking_end"
	EventToolCallStart EventType = "toolcall_start"
	EventToolCallDelta EventType = "toolcall_delta"
	EventToolCallEnd   EventType = "toolcall_end"
	EventDone          EventType = "done"
	EventError         EventType = "error"
)

// Terminal reports whether the event ends its stream.
func (t EventType) Terminal() bool { return t == EventDone || t == EventError }

// Event is one step of a streamed assistant message.
//
// Partial is the message as built so far (shared and mutated by the
// producer: copy it to keep it past the next event). For toolcall events
// Partial.Content[ContentIndex].Arguments holds the arguments parsed so far.
// Done and error events carry the final Message; an error event's Err holds
// the cause (a *ProviderError, or a context error on abort).
type Event struct {
	Type         EventType  `json:"type"`
	ContentIndex int        `json:"contentIndex"`
	Delta        string     `json:"delta,omitempty"`
	Reason       StopReason `json:"reason,omitempty"`
	// Block is the finished block on *_end events.
	Block *Content `json:"block,omitempty"`
	// Message is the final message on done and error events.
	Message *Message `json:"message,omitempty"`
	Err     error    `json:"-"`
	Partial *Message `json:"-"`
}
