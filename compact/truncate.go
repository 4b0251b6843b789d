package compact

import (
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentloop/agentloop/llm"
)

// Tool-result size limits, in characters.
const (
	// HardMaxToolResultChars caps any one tool result, whatever the window.
	HardMaxToolResultChars = 40_000
	// ToolResultWindowShare is the share of the window one result may use.
	ToolResultWindowShare = 0.3
	// DefaultMinKeepChars is the least a truncated result keeps.
	DefaultMinKeepChars = 2_000
	// maxTailChars caps the tail kept after the notice.
	maxTailChars = 4_000
	// minHeadTailChars is the least budget that is split into head and tail;
	// below it only the head is kept.
	minHeadTailChars = 1_000
)

// MaxToolResultChars returns the cap for one tool result in a window of
// window tokens: min(30% of the window × 4 chars, 40,000 chars).
func MaxToolResultChars(window int) int {
	return max(0, min(int(float64(window)*ToolResultWindowShare)*CharsPerToken, HardMaxToolResultChars))
}

// TruncateOptions tune TruncateText.
type TruncateOptions struct {
	// MinKeep is the least number of characters kept: 0 means
	// DefaultMinKeepChars, a negative value means no minimum.
	MinKeep int
	// Notice returns the marker that replaces the removed characters; nil
	// means TruncationNotice.
	Notice func(removed int) string
}

func (o TruncateOptions) minKeep() int {
	switch {
	case o.MinKeep < 0:
		return 0
	case o.MinKeep == 0:
		return DefaultMinKeepChars
	}
	return o.MinKeep
}

func (o TruncateOptions) notice(removed int) string {
	if o.Notice != nil {
		return o.Notice(removed)
	}
	return TruncationNotice(removed)
}

// TruncationNotice is the marker left where characters were removed.
func TruncationNotice(removed int) string {
	return "[... " + strconv.Itoa(removed) + " more characters truncated]"
}

// TruncateText shortens text to about maxChars characters, notice
// included, keeping at least the options' MinKeep. It keeps the head and
// the tail (up to 30% of the budget, at most 4,000 chars), so a tool's own
// closing lines (an error, a summary, how to read on) survive, and puts
// the notice between them. Cuts prefer line ends near the budget. It
// returns the text and the number of characters removed; text within
// maxChars comes back unchanged.
func TruncateText(text string, maxChars int, opts TruncateOptions) (string, int) {
	if len(text) <= maxChars {
		return text, 0
	}
	// The notice is sized for the most characters that can be removed, so
	// the result stays within maxChars whatever the cuts do.
	noticeLen := len(opts.notice(len(text))) + 4
	budget := max(opts.minKeep(), maxChars-noticeLen)
	if budget >= len(text) {
		return text, 0
	}
	tailLen := 0
	if budget >= minHeadTailChars {
		tailLen = min(budget*3/10, maxTailChars)
	}
	headLen := budget - tailLen

	head := text[:runeFloor(text, headLen)]
	if nl := strings.LastIndexByte(head, '\n'); nl >= 0 && nl >= headLen*8/10 {
		head = head[:nl]
	}
	tail := ""
	if tailLen > 0 {
		start := runeCeil(text, len(text)-tailLen)
		if nl := strings.IndexByte(text[start:], '\n'); nl >= 0 && nl < tailLen/5 {
			start += nl + 1
		}
		tail = text[start:]
	}
	removed := len(text) - len(head) - len(tail)
	var b strings.Builder
	b.Grow(len(head) + len(tail) + noticeLen)
	b.WriteString(head)
	if tail != "" {
		b.WriteString("\n\n")
		b.WriteString(opts.notice(removed))
		b.WriteString("\n\n")
		b.WriteString(tail)
	} else {
		if opts.Notice == nil {
			b.WriteByte('\n')
		}
		b.WriteString(opts.notice(removed))
	}
	return b.String(), removed
}

// runeFloor moves i back to the start of a UTF-8 sequence.
func runeFloor(s string, i int) int {
	if i >= len(s) {
		return len(s)
	}
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return max(i, 0)
}

// runeCeil moves i forward to the start of a UTF-8 sequence.
func runeCeil(s string, i int) int {
	i = max(i, 0)
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return i
}

// ToolResultTextChars returns the characters of a tool result's text
// blocks, and 0 for any other role.
func ToolResultTextChars(m *llm.Message) int {
	if m.Role != llm.RoleToolResult {
		return 0
	}
	n := 0
	for i := range m.Content {
		if m.Content[i].Type == llm.ContentText {
			n += len(m.Content[i].Text)
		}
	}
	return n
}

// TruncateContent shortens the text blocks of content to about maxChars
// characters in all, sharing the budget in proportion to their lengths.
// Other blocks (images) are kept. It returns a new slice, or content itself
// with 0 when nothing needed removing.
func TruncateContent(content []llm.Content, maxChars int, opts TruncateOptions) ([]llm.Content, int) {
	total := 0
	for i := range content {
		if content[i].Type == llm.ContentText {
			total += len(content[i].Text)
		}
	}
	if total <= maxChars {
		return content, 0
	}
	out := make([]llm.Content, len(content))
	copy(out, content)
	removed := 0
	for i := range out {
		if out[i].Type != llm.ContentText || out[i].Text == "" {
			continue
		}
		share := int(int64(maxChars) * int64(len(out[i].Text)) / int64(total))
		text, n := TruncateText(out[i].Text, share, opts)
		out[i].Text = text
		removed += n
	}
	if removed == 0 {
		return content, 0
	}
	return out, removed
}

// Reduction is how much tool-result truncation could remove from a
// history.
type Reduction struct {
	// ToolResults counts the tool results.
	ToolResults int
	// Oversized counts the results over the per-result cap.
	Oversized int
	// TotalChars is the text of all tool results.
	TotalChars int
	// SingleReducible is what capping each result at the cap removes.
	SingleReducible int
	// AggregateReducible is what holding all results together to the cap
	// removes (only when there are two or more).
	AggregateReducible int
	// MaxReducible is the larger of the two.
	MaxReducible int
}

// ReductionPotential measures what truncating tool results to maxChars
// each, and to maxChars all together, could remove.
func ReductionPotential(msgs []llm.Message, maxChars int) Reduction {
	var r Reduction
	for i := range msgs {
		n := ToolResultTextChars(&msgs[i])
		if msgs[i].Role != llm.RoleToolResult {
			continue
		}
		r.ToolResults++
		r.TotalChars += n
		if n > maxChars {
			r.Oversized++
			r.SingleReducible += n - maxChars
		}
	}
	if r.ToolResults > 1 && r.TotalChars > maxChars {
		r.AggregateReducible = r.TotalChars - maxChars
	}
	r.MaxReducible = max(r.SingleReducible, r.AggregateReducible)
	return r
}

// Truncation records one tool result that was shortened (or cleared) to
// fit the context. The session stores it as a tool_result_truncation entry
// so a reload shows the model the same content.
type Truncation struct {
	// Index is the message's index in the slice the function was given.
	Index      int
	ToolCallID string
	ToolName   string
	// Content is the result's content as the model now sees it.
	Content []llm.Content
	// OriginalChars and KeptChars measure the text before and after.
	OriginalChars int
	KeptChars     int
	// Reason is "cap" (over the per-result cap), "budget" (shortened by the
	// precheck) or "microcompact" (an old result cleared).
	Reason string
}

// CapToolResults truncates every tool result whose text exceeds maxChars.
// It returns msgs itself when nothing changed, else a copy holding the
// shortened results, and one Truncation per shortened result.
func CapToolResults(msgs []llm.Message, maxChars int) ([]llm.Message, []Truncation) {
	var out []llm.Message
	var recs []Truncation
	for i := range msgs {
		n := ToolResultTextChars(&msgs[i])
		if n <= maxChars {
			continue
		}
		content, removed := TruncateContent(msgs[i].Content, maxChars, TruncateOptions{})
		if removed == 0 {
			continue
		}
		if out == nil {
			out = append([]llm.Message(nil), msgs...)
		}
		out[i].Content = content
		recs = append(recs, truncation(i, &out[i], n, "cap"))
	}
	if out == nil {
		return msgs, nil
	}
	return out, recs
}

func truncation(i int, m *llm.Message, original int, reason string) Truncation {
	return Truncation{
		Index: i, ToolCallID: m.ToolCallID, ToolName: m.ToolName, Content: m.Content,
		OriginalChars: original, KeptChars: ToolResultTextChars(m), Reason: reason,
	}
}

// ShrinkToolResults removes at least needChars characters from the tool
// results of msgs by capping them all at one common size, as large as
// possible, so the biggest results lose most and small ones are untouched.
// No result is cut below minKeep characters (0 means DefaultMinKeepChars).
// ok is false, and msgs comes back unchanged, when that cannot remove
// needChars.
func ShrinkToolResults(msgs []llm.Message, needChars, minKeep int) (out []llm.Message, recs []Truncation, ok bool) {
	if needChars <= 0 {
		return msgs, nil, true
	}
	if minKeep <= 0 {
		minKeep = DefaultMinKeepChars
	}
	var lens []int
	for i := range msgs {
		if msgs[i].Role == llm.RoleToolResult {
			lens = append(lens, ToolResultTextChars(&msgs[i]))
		}
	}
	// A result truncated to a cap c keeps at most c characters, notice
	// included, so it saves at least len−c.
	saved := func(c int) int {
		s := 0
		for _, n := range lens {
			if n > c {
				s += n - c
			}
		}
		return s
	}
	floor := minKeep + len(TruncationNotice(1<<30)) + 4
	if saved(floor) < needChars {
		return msgs, nil, false
	}
	sorted := append([]int(nil), lens...)
	sort.Ints(sorted)
	hi := sorted[len(sorted)-1]
	// The largest cap that still saves enough.
	c := sort.Search(hi-floor+1, func(k int) bool { return saved(hi-k) >= needChars })
	limit := hi - c
	out = append([]llm.Message(nil), msgs...)
	for i := range out {
		n := ToolResultTextChars(&out[i])
		if out[i].Role != llm.RoleToolResult || n <= limit {
			continue
		}
		content, removed := TruncateContent(out[i].Content, limit, TruncateOptions{MinKeep: minKeep})
		if removed == 0 {
			continue
		}
		out[i].Content = content
		recs = append(recs, truncation(i, &out[i], n, "budget"))
	}
	return out, recs, true
}
