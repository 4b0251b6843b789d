package runner

import (
	"errors"
	"testing"
	"time"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/compact"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/loopguard"
)

// The payloads' fields sit beside the envelope, for every kind of event.
func TestEventLines(t *testing.T) {
	rec := &compact.CompactionRecord{Summary: "## Goal\nx\n\n<read-files>\na.go\n</read-files>", FirstKeptIndex: 7,
		TokensBefore: 100, TokensAfter: 40, Trigger: compact.TriggerThreshold, Files: compact.FileLists{Read: []string{"a.go"}}, DroppedMessages: 7}
	env := Event{Seq: 5, RunID: "r1", SessionID: "s1"}
	with := func(e Event) Event { e.Seq, e.RunID, e.SessionID = env.Seq, env.RunID, env.SessionID; return e }
	tests := []struct {
		e    Event
		want string
	}{
		{with(Event{Type: agent.EventType(compact.EventCompactionStart), Compaction: &compact.Event{Type: compact.EventCompactionStart, Trigger: compact.TriggerManual, TokensBefore: 100}}),
			`{"v":2,"type":"auto_compaction_start","seq":5,"runId":"r1","sessionId":"s1","trigger":"manual","tokensBefore":100}`},
		{with(Event{Type: agent.EventType(compact.EventCompactionEnd), Compaction: &compact.Event{Type: compact.EventCompactionEnd, Trigger: compact.TriggerThreshold, TokensBefore: 100, TokensAfter: 40, Record: rec}}),
			`{"v":2,"type":"auto_compaction_end","seq":5,"runId":"r1","sessionId":"s1","trigger":"threshold","tokensBefore":100,"tokensAfter":40,"record":{"summary":"## Goal\nx","firstKeptIndex":7,"tokensBefore":100,"tokensAfter":40,"trigger":"threshold","files":{"readFiles":["a.go"]},"droppedMessages":7}}`},
		{with(Event{Type: agent.EventType(compact.EventFallback), Compaction: &compact.Event{Type: compact.EventFallback, Err: errors.New("boom"), Message: "pruned"}}),
			`{"v":2,"type":"compaction_fallback","seq":5,"runId":"r1","sessionId":"s1","text":"pruned","error":"boom"}`},
		{with(Event{Type: agent.EventType(compact.EventTruncation), Compaction: &compact.Event{Type: compact.EventTruncation, Truncated: 1, Records: []compact.Truncation{{Index: 3, ToolCallID: "c", ToolName: "read",
			Content: []llm.Content{llm.Text("x")}, OriginalChars: 9, KeptChars: 1, Reason: "cap"}}}}),
			`{"v":2,"type":"tool_result_truncation","seq":5,"runId":"r1","sessionId":"s1","truncated":1,"records":[{"index":3,"toolCallId":"c","toolName":"read","originalChars":9,"keptChars":1,"reason":"cap"}]}`},
		{with(Event{Type: agent.EventType(compact.EventSnip), Compaction: &compact.Event{Type: compact.EventSnip, TokensBefore: 9, TokensAfter: 3,
			Snip: &compact.SnipRecord{FirstDroppedIndex: 2, FirstKeptIndex: 8, Note: "n", DroppedMessages: 6, DroppedTokens: 40}}}),
			`{"v":2,"type":"history_snip","seq":5,"runId":"r1","sessionId":"s1","tokensBefore":9,"tokensAfter":3,"snip":{"firstDroppedIndex":2,"firstKeptIndex":8,"note":"n","droppedMessages":6,"droppedTokens":40}}`},
		{with(Event{Type: EventRetry, Notice: &Notice{Reason: "overloaded", Delay: 1500 * time.Millisecond, Attempt: 1, Max: 3, Message: "retrying <soon> & again"}}),
			`{"v":2,"type":"retry","seq":5,"runId":"r1","sessionId":"s1","reason":"overloaded","text":"retrying <soon> & again","delayMs":1500,"attempt":1,"max":3}`},
		{with(Event{Type: EventLoopDetected, Loop: &loopguard.Event{Kind: loopguard.EventBlock, CallID: "c1", Tool: "bash", Detection: loopguard.Detection{Count: 4}},
			Notice: &Notice{Reason: "block", Message: "loop", Attempt: 4}}),
			`{"v":2,"type":"loop_detection","seq":5,"runId":"r1","sessionId":"s1","toolCallId":"c1","toolName":"bash","reason":"block","count":4,"text":"loop"}`},
		{with(Event{Type: EventRunStart, Start: &RunStart{Model: "faux/demo", Cwd: "/w", Lane: "main", Tools: []string{"read"}}}),
			`{"v":2,"type":"run_start","seq":5,"runId":"r1","sessionId":"s1","model":"faux/demo","cwd":"/w","lane":"main","tools":["read"]}`},
		{with(Event{Type: EventRunEnd, End: &Result{Reason: "overloaded", Message: "busy", Attempts: 2, Retries: 1, Err: &llm.ProviderError{Reason: llm.ReasonOverloaded, Message: "529"}}}),
			`{"v":2,"type":"run_end","seq":5,"runId":"r1","sessionId":"s1","reason":"overloaded","text":"busy","attempts":2,"retries":1,"error":": overloaded: 529","failure":"overloaded"}`},
	}
	for _, tt := range tests {
		b, err := llm.MarshalJSON(tt.e)
		if err != nil || string(b) != tt.want {
			t.Errorf("got  %s (%v)\nwant %s", b, err, tt.want)
		}
	}
}
