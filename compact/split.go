package compact

import "github.com/agentloop/agentloop/llm"

// Chunking constants.
const (
	// BaseChunkRatio is the share of the window one summarised chunk may
	// take when messages are small.
	BaseChunkRatio = 0.4
	// MinChunkRatio is the least share, reached as messages grow.
	MinChunkRatio = 0.15
	// SummarizationOverheadTokens is set aside in every summariser call
	// for its instructions and the previous summary.
	SummarizationOverheadTokens = 4096
	// DefaultParts is how many parts history is split into for staged
	// summarisation and pruning.
	DefaultParts = 2
	// DefaultHistoryShare is the share of the window pruning leaves to
	// history.
	DefaultHistoryShare = 0.5
)

func normalizeParts(parts, n int) int {
	if parts <= 1 {
		return 1
	}
	return min(parts, max(1, n))
}

// toolCallIDs returns the ids of the tool calls an assistant message opens:
// none for other roles and for failed (error, aborted) messages, whose
// calls were never run.
func toolCallIDs(m *llm.Message) []string {
	if m.Role != llm.RoleAssistant || m.StopReason.Failed() {
		return nil
	}
	var ids []string
	for i := range m.Content {
		if m.Content[i].Type == llm.ContentToolCall {
			ids = append(ids, m.Content[i].ID)
		}
	}
	return ids
}

// SplitByTokenShare splits msgs into at most parts chunks of about equal
// estimated tokens. A tool call and its results always land in the same
// chunk, and no chunk is empty. Empty input gives no chunks.
func SplitByTokenShare(msgs []llm.Message, parts int) [][]llm.Message {
	if len(msgs) == 0 {
		return nil
	}
	parts = normalizeParts(parts, len(msgs))
	if parts <= 1 {
		return [][]llm.Message{msgs}
	}
	tokens := make([]int, len(msgs))
	total := 0
	for i := range msgs {
		tokens[i] = MessageTokens(&msgs[i])
		total += tokens[i]
	}
	target := float64(total) / float64(parts)

	var chunks [][]llm.Message
	start, cur := 0, 0 // the open chunk is msgs[start:i]
	pending := map[string]bool{}
	turnStart := -1 // where the open tool-call turn began
	splitAt := func(at int) {
		chunks = append(chunks, msgs[start:at])
		for k := start; k < at; k++ {
			cur -= tokens[k]
		}
		start = at
	}
	for i := range msgs {
		m := &msgs[i]
		if len(pending) == 0 && len(chunks) < parts-1 && i > start && float64(cur+tokens[i]) > target {
			splitAt(i)
		}
		if ids := toolCallIDs(m); len(ids) > 0 {
			if len(pending) == 0 {
				turnStart = i
			}
			for _, id := range ids {
				pending[id] = true
			}
		}
		cur += tokens[i]
		if m.Role == llm.RoleToolResult && len(pending) > 0 {
			if m.ToolCallID == "" {
				clear(pending)
			} else {
				delete(pending, m.ToolCallID)
			}
			if len(pending) == 0 {
				if float64(cur) > target && len(chunks) < parts-1 && turnStart > start {
					splitAt(turnStart)
				}
				turnStart = -1
			}
		}
	}
	if len(pending) > 0 && float64(cur) > target && len(chunks) < parts-1 && turnStart > start {
		splitAt(turnStart)
	}
	if start < len(msgs) {
		chunks = append(chunks, msgs[start:])
	}
	return chunks
}

// ChunkByMaxTokens packs msgs greedily into chunks of at most
// maxTokens/1.2 estimated tokens (the safety margin). A message larger than
// that closes its chunk, so it sits alone or at the end of one.
func ChunkByMaxTokens(msgs []llm.Message, maxTokens int) [][]llm.Message {
	if len(msgs) == 0 {
		return nil
	}
	limit := max(1, maxTokens*5/6)
	var chunks [][]llm.Message
	start, cur := 0, 0
	for i := range msgs {
		t := MessageTokens(&msgs[i])
		if i > start && cur+t > limit {
			chunks = append(chunks, msgs[start:i])
			start, cur = i, 0
		}
		cur += t
		if t > limit {
			chunks = append(chunks, msgs[start:i+1])
			start, cur = i+1, 0
		}
	}
	if start < len(msgs) {
		chunks = append(chunks, msgs[start:])
	}
	return chunks
}

// AdaptiveChunkRatio returns the share of the window one summarised chunk
// may take: BaseChunkRatio, lowered towards MinChunkRatio when the average
// message (with the safety margin) is more than a tenth of the window.
func AdaptiveChunkRatio(msgs []llm.Message, window int) float64 {
	if len(msgs) == 0 || window <= 0 {
		return BaseChunkRatio
	}
	avg := float64(MessagesTokens(msgs)) / float64(len(msgs)) * SafetyMargin
	share := avg / float64(window)
	if share <= 0.1 {
		return BaseChunkRatio
	}
	return max(MinChunkRatio, BaseChunkRatio-min(2*share, BaseChunkRatio-MinChunkRatio))
}

// MaxChunkTokens returns the token budget of one summariser input chunk
// for a window: the adaptive ratio of the window less the summariser's
// overhead, at least 1.
func MaxChunkTokens(msgs []llm.Message, window int) int {
	return max(1, int(float64(window)*AdaptiveChunkRatio(msgs, window))-SummarizationOverheadTokens)
}

// IsOversizedForSummary reports whether a message, with the safety margin,
// is over half the window: too big to summarise, so it is replaced by an
// omission note instead.
func IsOversizedForSummary(m *llm.Message, window int) bool {
	return float64(MessageTokens(m))*SafetyMargin > 0.5*float64(window)
}

// PruneResult is what Prune kept and dropped.
type PruneResult struct {
	Messages []llm.Message
	// Dropped lists the messages of the dropped chunks, oldest first.
	// Tool results orphaned by a drop are counted in DroppedMessages but
	// not listed.
	Dropped         []llm.Message
	DroppedChunks   int
	DroppedMessages int
	// DroppedTokens and KeptTokens are estimates without margin;
	// DroppedTokens counts the dropped chunks.
	DroppedTokens int
	KeptTokens    int
	BudgetTokens  int
}

// Prune drops the oldest history until what is left fits share of the
// window (0 means DefaultHistoryShare): while over budget it splits the
// history into parts (0 means DefaultParts) by token share and drops the
// first, then drops tool results whose call went with it. It stops when a
// split yields one chunk.
func Prune(msgs []llm.Message, window int, share float64, parts int) PruneResult {
	if share <= 0 {
		share = DefaultHistoryShare
	}
	if parts <= 0 {
		parts = DefaultParts
	}
	r := PruneResult{Messages: msgs, BudgetTokens: max(1, int(float64(window)*share))}
	tokens := MessagesTokens(msgs)
	for tokens > r.BudgetTokens {
		chunks := SplitByTokenShare(r.Messages, parts)
		if len(chunks) <= 1 {
			break
		}
		first := chunks[0]
		rest, orphans := dropOrphanResults(r.Messages[len(first):])
		r.Dropped = append(r.Dropped, first...)
		r.DroppedChunks++
		r.DroppedMessages += len(first) + orphans
		r.DroppedTokens += MessagesTokens(first)
		r.Messages = rest
		tokens = MessagesTokens(rest)
	}
	r.KeptTokens = tokens
	return r
}

// dropOrphanResults removes tool results whose call is not in msgs before
// them. It returns msgs itself when none are orphaned.
func dropOrphanResults(msgs []llm.Message) ([]llm.Message, int) {
	calls := map[string]bool{}
	var out []llm.Message
	dropped := 0
	for i := range msgs {
		m := &msgs[i]
		for j := range m.Content {
			if m.Role == llm.RoleAssistant && m.Content[j].Type == llm.ContentToolCall {
				calls[m.Content[j].ID] = true
			}
		}
		if m.Role == llm.RoleToolResult && !calls[m.ToolCallID] {
			if out == nil {
				out = append(make([]llm.Message, 0, len(msgs)), msgs[:i]...)
			}
			dropped++
			continue
		}
		if out != nil {
			out = append(out, *m)
		}
	}
	if out == nil {
		return msgs, 0
	}
	return out, dropped
}

// validCuts marks the indices where history may be cut: not a tool result,
// and no tool call before it still waiting for its result. Keeping
// msgs[i:] for a valid i keeps every call with its results.
func validCuts(msgs []llm.Message) []bool {
	ok := make([]bool, len(msgs))
	pending := map[string]bool{}
	for i := range msgs {
		m := &msgs[i]
		if m.Role == llm.RoleUser {
			// A user message ends a turn; a call still unanswered here has
			// lost its result and pairing repair answers it.
			clear(pending)
		}
		ok[i] = m.Role != llm.RoleToolResult && len(pending) == 0
		for _, id := range toolCallIDs(m) {
			pending[id] = true
		}
		if m.Role == llm.RoleToolResult {
			delete(pending, m.ToolCallID)
		}
	}
	return ok
}

// FindCutPoint returns where to cut msgs so that msgs[cut:] keeps at least
// keepRecent estimated tokens of the newest history, starting at a valid
// cut (never between a tool call and its result). It returns 0 when all of
// msgs must be kept.
func FindCutPoint(msgs []llm.Message, keepRecent int) int {
	if len(msgs) == 0 {
		return 0
	}
	ok := validCuts(msgs)
	i, sum := len(msgs), 0
	for i > 0 && sum < keepRecent {
		i--
		sum += MessageTokens(&msgs[i])
	}
	if sum < keepRecent {
		return 0
	}
	for j := i; j < len(msgs); j++ {
		if ok[j] {
			return j
		}
	}
	for j := i - 1; j > 0; j-- {
		if ok[j] {
			return j
		}
	}
	return 0
}
