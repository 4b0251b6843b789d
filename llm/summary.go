package llm

// SummaryPrefix and SummarySuffix wrap a compaction summary into the user
// message that stands for the compacted part of a conversation. The
// compactor writes it and the session store rebuilds it on load, so the
// model sees the same text before and after a reload.
const (
	SummaryPrefix = "[agentloop] Earlier parts of this conversation were compacted into the summary below.\n\n<summary>\n"
	SummarySuffix = "\n</summary>"
)

// SummaryMessage is the user message that stands for compacted history.
func SummaryMessage(summary string, ts int64) Message {
	return Message{Role: RoleUser, Content: []Content{Text(SummaryPrefix + summary + SummarySuffix)}, Timestamp: ts}
}
