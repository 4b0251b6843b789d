package wire

import "strconv"

// CallIDs chooses the tool-call ids one request sends. Providers that
// number ids per response (Kimi K2 on Groq sends functions.weather:0 every
// turn; several OpenAI-compatible servers restart at call_0) repeat ids
// across turns, and ids from another provider may fold together once
// sanitised, while Anthropic and the Responses API want each id once in a
// request. A result answers a call of the assistant message before it, so
// ids need only be told apart within that span: CallIDs keeps the first
// use of an id as it is and gives a later one a numbered suffix, and hands
// each result the id sent for its call. The transcript keeps the
// originals; only the request changes.
//
// Use one CallIDs per request, in history order: Turn at every assistant
// message, Call for each of its calls, Result for each tool result.
type CallIDs struct {
	max  int // longest id the wire takes; 0 means no limit and no sanitising
	used map[string]bool
	open map[string][]string // original id → sent ids of the current turn's unanswered calls
}

// NewCallIDs returns a CallIDs for a wire whose ids must fit
// [A-Za-z0-9_-]{1,max} (see SanitizeID); max 0 sends ids as they are,
// only made unique.
func NewCallIDs(max int) *CallIDs {
	return &CallIDs{max: max, used: map[string]bool{}, open: map[string][]string{}}
}

// Turn starts the span of a new assistant message: results from here on
// answer its calls.
func (c *CallIDs) Turn() { clear(c.open) }

// Call returns the id to send for a call of the current assistant message.
func (c *CallIDs) Call(id string) string {
	sent := c.fit(id)
	if c.used[sent] {
		for n := 2; ; n++ {
			suffix := "_" + strconv.Itoa(n)
			base := sent
			if c.max > 0 && len(base)+len(suffix) > c.max {
				base = base[:max(0, c.max-len(suffix))]
			}
			if cand := base + suffix; !c.used[cand] {
				sent = cand
				break
			}
		}
	}
	c.used[sent] = true
	c.open[id] = append(c.open[id], sent)
	return sent
}

// Result returns the id to send for a tool result answering the call with
// the given original id: the id sent for the first unanswered call of the
// current turn that has it. A result that answers no call there (pairing
// repair leaves none) keeps its fitted id.
func (c *CallIDs) Result(id string) string {
	q := c.open[id]
	if len(q) == 0 {
		return c.fit(id)
	}
	c.open[id] = q[1:]
	return q[0]
}

func (c *CallIDs) fit(id string) string {
	if c.max == 0 {
		return id
	}
	return SanitizeID(id, c.max)
}
