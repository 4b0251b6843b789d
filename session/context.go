package session

import (
	"encoding/json"

	"github.com/agentloop/agentloop/llm"
)

// Path returns the entries from the root to leafID, in order. An unknown
// leaf gives nil; a missing parent ends the walk there (the branch then
// starts at the first entry whose parent is known to be missing).
func (t *Transcript) Path(leafID string) []*Entry {
	var rev []*Entry
	for id := leafID; id != ""; {
		i, ok := t.indexOf(id)
		if !ok {
			break
		}
		e := &t.Entries[i]
		rev = append(rev, e)
		id = e.ParentID
		if len(rev) > len(t.Entries) {
			// A cycle (only a hand-edited file has one; loading warns):
			// the path is the walk up to its first repeated entry.
			rev = firstLoop(rev)
			break
		}
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}

// firstLoop cuts a walk at its first repeated entry.
func firstLoop(walk []*Entry) []*Entry {
	seen := make(map[*Entry]bool, len(walk))
	for n, e := range walk {
		if seen[e] {
			return walk[:n]
		}
		seen[e] = true
	}
	return walk
}

// Children returns the ids of the entries whose parent is id ("" for the
// roots), in file order.
func (t *Transcript) Children(id string) []string {
	var out []string
	for i := range t.Entries {
		if t.Entries[i].ParentID == id {
			out = append(out, t.Entries[i].ID)
		}
	}
	return out
}

// Labels returns the current label of each labelled entry.
func (t *Transcript) Labels() map[string]string {
	labels := map[string]string{}
	for i := range t.Entries {
		if e := &t.Entries[i]; e.Type == EntryLabel {
			if e.Label == "" {
				delete(labels, e.TargetID)
			} else {
				labels[e.TargetID] = e.Label
			}
		}
	}
	return labels
}

// Context is what a model sees of a session at one leaf.
type Context struct {
	// Messages is the conversation, with compaction and truncation applied.
	Messages []llm.Message
	// EntryIDs[i] is the id of the entry Messages[i] came from.
	EntryIDs []string
	// Provider and ModelID are the last model on the path: from a
	// model_change entry or an assistant message, whichever came later.
	Provider, ModelID string
	// ThinkingLevel is the last thinking level set on the path.
	ThinkingLevel llm.ThinkingLevel
	// LeafID is the leaf the context was built at.
	LeafID string
}

// The compaction summary is wrapped as llm.SummaryMessage does, so a
// reloaded session shows the model the text the compactor showed it.
const (
	summaryPrefix = llm.SummaryPrefix
	summarySuffix = llm.SummarySuffix
	branchPrefix  = "A branch of this conversation that was left was summarised as follows.\n\n<summary>\n"
)

// SnipCustomType is the CustomType of a custom entry that records a snip:
// the middle of old history left out of the context. Unlike other custom
// entries it shapes what the model sees (see Transcript.Context).
const SnipCustomType = "snip"

// SnipData is the Data of a snip entry: the entries from
// FirstDroppedEntryID up to (not including) FirstKeptEntryID are left out,
// and Note is put before the content of the first kept entry's message.
type SnipData struct {
	FirstDroppedEntryID string `json:"firstDroppedEntryId"`
	FirstKeptEntryID    string `json:"firstKeptEntryId"`
	Note                string `json:"note"`
	DroppedMessages     int    `json:"droppedMessages,omitempty"`
	DroppedTokens       int    `json:"droppedTokens,omitempty"`
}

// SnipEntry returns a custom entry recording a snip.
func SnipEntry(d SnipData) Entry {
	data, _ := llm.MarshalJSON(d) // a struct of strings and ints always encodes
	return CustomEntry(SnipCustomType, data)
}

// Context builds the model's context at leafID ("" means the current
// leaf): the path from the root, through the latest compaction on it (its
// summary as a user message, then the entries from its FirstKeptEntryID up
// to it, then the entries after it), with every tool_result_truncation on
// the path replacing the content of the result it names (its TargetID, or
// the latest result of its call id before it). Every snip entry
// on the path leaves out the entries it names and puts its note before the
// first kept one (the latest note wins), when they are still in that
// context: a later compaction whose kept entries start after them has
// already taken them in. Snips join: a run resumed on a snipped context
// that snips again records only the new part.
func (t *Transcript) Context(leafID string) Context {
	if leafID == "" {
		leafID = t.Leaf
	}
	path := t.Path(leafID)
	ctx := Context{LeafID: leafID}
	compaction := -1
	var snips []int
	var truncated map[int][]llm.Content // path index of a result → its content now
	var results map[string]int          // call id → path index of its latest result
	var pos map[string]int              // entry id → path index, made at the first truncation naming one
	for i, e := range path {
		if pos != nil {
			pos[e.ID] = i
		}
		switch e.Type {
		case EntryCompaction:
			compaction = i
		case EntryCustom:
			if e.CustomType == SnipCustomType {
				snips = append(snips, i)
			}
		case EntryToolResultTruncate:
			// The entry names its result, or (older files) the call id,
			// whose latest result before it is meant.
			target, ok := results[e.ToolCallID]
			if e.TargetID != "" {
				if pos == nil {
					pos = make(map[string]int, i)
					for j, p := range path[:i] {
						pos[p.ID] = j
					}
				}
				if j, found := pos[e.TargetID]; found && j < i {
					target, ok = j, true
				}
			}
			if ok {
				if truncated == nil {
					truncated = map[int][]llm.Content{}
				}
				truncated[target] = e.Content
			}
		case EntryModelChange:
			ctx.Provider, ctx.ModelID = e.Provider, e.ModelID
		case EntryThinkingLevelChange:
			ctx.ThinkingLevel = e.ThinkingLevel
		case EntryMessage:
			if m := e.Message; m != nil && m.Role == llm.RoleAssistant && m.Model != "" {
				ctx.Provider, ctx.ModelID = m.Provider, m.Model
			}
			if m := e.Message; m != nil && m.Role == llm.RoleToolResult {
				if results == nil {
					results = map[string]int{}
				}
				results[m.ToolCallID] = i
			}
		}
	}
	// The context is path[from:compaction] after the summary, then
	// path[compaction+1:], or the whole path without a compaction.
	from, rest := 0, path
	if compaction >= 0 {
		c := path[compaction]
		from = compaction // nothing kept unless the first kept entry is found
		for i, e := range path[:compaction] {
			if e.ID == c.FirstKeptEntryID {
				from = i
				break
			}
		}
		rest = path[compaction+1:]
	}
	n := len(rest)
	if compaction >= 0 {
		n += 1 + compaction - from
	}
	dropped, notes := snipHoles(path, snips, from)
	ctx.Messages = make([]llm.Message, 0, n)
	ctx.EntryIDs = make([]string, 0, n)
	emit := func(i int, e *Entry) {
		if dropped != nil && dropped[i] {
			return
		}
		if m, ok := entryMessage(e); ok {
			if c, ok := truncated[i]; ok && m.Role == llm.RoleToolResult {
				m.Content = c
			}
			if note, ok := notes[i]; ok {
				m.Content = append([]llm.Content{llm.Text(note)}, m.Content...)
			}
			ctx.Messages = append(ctx.Messages, m)
			ctx.EntryIDs = append(ctx.EntryIDs, e.ID)
		}
	}
	if compaction >= 0 {
		// An empty summary records history dropped without one (a
		// compaction fallback): the kept entries alone remain.
		if c := path[compaction]; c.Summary != "" {
			ctx.Messages = append(ctx.Messages, llm.Message{
				Role:      llm.RoleUser,
				Content:   []llm.Content{llm.Text(summaryPrefix + c.Summary + summarySuffix)},
				Timestamp: c.Time().UnixMilli(),
			})
			ctx.EntryIDs = append(ctx.EntryIDs, c.ID)
		}
		for i := from; i < compaction; i++ {
			emit(i, path[i])
		}
	}
	for i := len(path) - len(rest); i < len(path); i++ {
		emit(i, path[i])
	}
	return ctx
}

// snipHoles applies the snip entries path[snips[k]]: dropped[i] says
// path[i] is left out, notes[i] is the note put before path[i]. A snip
// applies only when both entries it names come before it, in order, and
// the first dropped one is at or after from, the start of the kept
// history. Both are nil when no snip applies.
func snipHoles(path []*Entry, snips []int, from int) (dropped []bool, notes map[int]string) {
	if len(snips) == 0 {
		return nil, nil
	}
	index := make(map[string]int, snips[len(snips)-1])
	for i, e := range path[:snips[len(snips)-1]] {
		index[e.ID] = i
	}
	for _, s := range snips {
		var d SnipData
		if err := json.Unmarshal(path[s].Data, &d); err != nil {
			continue
		}
		holeFrom, ok1 := index[d.FirstDroppedEntryID]
		holeTo, ok2 := index[d.FirstKeptEntryID]
		if !ok1 || !ok2 || holeFrom < from || holeTo <= holeFrom || holeTo >= s {
			continue
		}
		if dropped == nil {
			dropped, notes = make([]bool, len(path)), map[int]string{}
		}
		for i := holeFrom; i < holeTo; i++ {
			dropped[i] = true
		}
		notes[holeTo] = d.Note
	}
	return dropped, notes
}

// EntryID finds the entry behind msgs[i], where msgs was derived from
// c.Messages by the repair pipeline or a compactor (messages inserted,
// dropped or edited, but kept in order, with their role, timestamp and
// tool call id). A message with no entry (a synthetic result, say) maps to
// the entry of the next message that has one. It is how a compaction's
// first kept message becomes its FirstKeptEntryID.
func (c *Context) EntryID(msgs []llm.Message, i int) (string, bool) {
	p := 0
	for j := 0; j < len(msgs); j++ {
		q := p
		for q < len(c.Messages) && !sameOrigin(&c.Messages[q], &msgs[j]) {
			q++
		}
		if q == len(c.Messages) {
			continue // not from the context
		}
		p = q + 1
		if j >= i {
			return c.EntryIDs[q], true
		}
	}
	return "", false
}

func sameOrigin(a, b *llm.Message) bool {
	return a.Role == b.Role && a.Timestamp == b.Timestamp && a.ToolCallID == b.ToolCallID
}

// entryMessage returns the message an entry contributes to the context.
func entryMessage(e *Entry) (llm.Message, bool) {
	switch e.Type {
	case EntryMessage:
		if e.Message == nil {
			return llm.Message{}, false
		}
		m := *e.Message
		switch m.Role {
		case llm.RoleUser, llm.RoleAssistant, llm.RoleToolResult:
		default:
			// pi's custom and hook messages reach the model as user text.
			m = llm.Message{Role: llm.RoleUser, Content: m.Content, Timestamp: m.Timestamp}
		}
		return m, true
	case EntryCustomMessage:
		return llm.Message{Role: llm.RoleUser, Content: e.Content, Timestamp: e.Time().UnixMilli()}, true
	case EntryBranchSummary:
		return llm.Message{
			Role:      llm.RoleUser,
			Content:   []llm.Content{llm.Text(branchPrefix + e.Summary + summarySuffix)},
			Timestamp: e.Time().UnixMilli(),
		}, true
	}
	return llm.Message{}, false
}

// Stats are the totals of a transcript, over every branch.
type Stats struct {
	Messages int
	// Tokens sums the total tokens of every assistant message's usage.
	Tokens int
	// Cost sums their cost in USD.
	Cost float64
	// Title is the start of the first user message, for listings.
	Title string
}

// Stats counts the transcript's messages, tokens and cost.
func (t *Transcript) Stats() Stats {
	var s Stats
	for i := range t.Entries {
		s.count(&t.Entries[i])
	}
	return s
}

// count adds an entry that comes after those counted.
func (s *Stats) count(e *Entry) {
	m := e.Message
	if e.Type != EntryMessage || m == nil {
		return
	}
	s.Messages++
	if m.Role == llm.RoleAssistant && m.Usage != nil {
		s.Tokens += m.Usage.Total
		s.Cost += m.Usage.Cost.Total
	}
	if s.Title == "" && m.Role == llm.RoleUser {
		s.Title = oneLine(m.Text(), 80)
	}
}

// oneLine flattens s to one line of at most n runes.
func oneLine(s string, n int) string {
	out := make([]rune, 0, n)
	space := false
	for _, r := range s {
		if r == '\n' || r == '\r' || r == '\t' || r == ' ' {
			space = len(out) > 0
			continue
		}
		if space {
			out = append(out, ' ')
			space = false
		}
		if len(out) >= n {
			out = append(out[:n-1], '…')
			break
		}
		out = append(out, r)
	}
	return string(out)
}
