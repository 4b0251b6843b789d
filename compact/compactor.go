package compact

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// Config configures a Compactor. Window is required; zero values
// elsewhere mean the defaults.
type Config struct {
	// Window is the model's context window in tokens.
	Window int
	// ReserveTokens is the reserve setting (see NewBudget).
	ReserveTokens int
	// KeepRecentTokens overrides the recent history kept verbatim.
	KeepRecentTokens int
	// SystemPrompt and Tools are what every request carries besides the
	// messages; they count against the budget.
	SystemPrompt string
	Tools        []llm.ToolSpec
	// Summarizer writes summaries. Nil means no summaries: compaction
	// prunes old history instead (and reports the fallback). A zero
	// Summarizer.Window means Window.
	Summarizer *Summarizer
	// HistoryShare is the share of the window pruning leaves (default
	// DefaultHistoryShare).
	HistoryShare float64
	// Snip tunes the dropping of the middle of very old history, tried
	// before microcompact; DisableSnip turns it off.
	Snip        SnipOptions
	DisableSnip bool
	// Microcompact tunes the clearing of old tool results tried before a
	// summary; DisableMicrocompact turns it off.
	Microcompact        MicrocompactOptions
	DisableMicrocompact bool
	// Recorder persists compactions and truncations; nil keeps them in
	// memory only.
	Recorder Recorder
	// OnEvent receives events synchronously, in order; it must not block.
	OnEvent func(Event)
	// BeforeCompaction and AfterCompaction are hooks around every
	// compaction (the caller binds before_compaction, after_compaction,
	// PreCompact). They observe; they cannot cancel.
	BeforeCompaction func(ctx context.Context, start CompactionStart)
	AfterCompaction  func(ctx context.Context, rec CompactionRecord)
	// Now returns the time in Unix milliseconds, for the summary
	// message's timestamp; nil means llm.NowMillis.
	Now func() int64
}

// Compactor keeps one agent's context under budget. It remembers its
// decisions (the summary, where kept history starts, which tool results
// were shortened) and applies them to the full history the agent passes on
// every call, because the agent keeps the untouched history.
//
// A Compactor serves one conversation; its methods are safe for
// concurrent use but calls are serialised.
type Compactor struct {
	cfg     Config
	budget  Budget
	warning string

	mu     sync.Mutex
	warned bool
	st     state
}

type state struct {
	summary   string
	summaryTS int64
	files     FileLists
	// firstKept indexes the full history; keptKey identifies the message
	// there, to notice a history that was replaced.
	firstKept int
	keptKey   msgKey
	// usageFrom is the first full-history index whose reported usage
	// describes the context as it now is.
	usageFrom int
	// truncs maps the full-history index of a tool result to the content
	// the model sees instead. Not its call id: providers that number ids
	// per response reuse one id in every turn.
	truncs map[int][]llm.Content
	// A snip leaves out the full-history messages [snipFrom, snipTo) and
	// shows snipMsg, msgs[snipTo] with the note, in place of
	// msgs[snipTo]; snipTo is 0 when there is none. The hole always lies
	// after firstKept.
	snipFrom, snipTo int
	snipKey          msgKey
	snipMsg          llm.Message
}

type msgKey struct {
	role  llm.Role
	ts    int64
	id    string
	chars int
}

func keyOf(m *llm.Message) msgKey {
	return msgKey{m.Role, m.Timestamp, m.ToolCallID, MessageChars(m)}
}

// New returns a Compactor. It refuses a window under MinContextWindow with
// a *WindowError; a window under WarnContextWindow is reported once, as an
// EventWindowWarning on the first call, and by Warning.
func New(cfg Config) (*Compactor, error) {
	warning, err := CheckWindow(cfg.Window)
	if err != nil {
		return nil, err
	}
	if cfg.Summarizer != nil {
		s := *cfg.Summarizer
		if s.Window == 0 {
			s.Window = cfg.Window
		}
		b := NewBudget(cfg.Window, cfg.ReserveTokens)
		if s.Options.MaxTokens == 0 {
			s.Options.MaxTokens = b.Reserve * 4 / 5
		}
		cfg.Summarizer = &s
	}
	if cfg.HistoryShare <= 0 || cfg.HistoryShare > 1 {
		cfg.HistoryShare = DefaultHistoryShare
	}
	c := &Compactor{cfg: cfg, budget: NewBudget(cfg.Window, cfg.ReserveTokens), warning: warning}
	if cfg.KeepRecentTokens > 0 {
		c.budget.KeepRecent = cfg.KeepRecentTokens
	}
	c.st.truncs = map[int][]llm.Content{}
	return c, nil
}

// SetRequest changes the system prompt and tool definitions counted
// against the budget, for a caller whose requests change between calls.
func (c *Compactor) SetRequest(system string, tools []llm.ToolSpec) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cfg.SystemPrompt, c.cfg.Tools = system, tools
}

// Budget returns the budget the Compactor works to.
func (c *Compactor) Budget() Budget {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.budget
}

// Window returns the context window the Compactor works to.
func (c *Compactor) Window() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cfg.Window
}

// SetWindow makes window the one the Compactor works to from now on: the
// window a server was seen to enforce, smaller than the one the model is
// declared with. The budget, the cap on tool results and the summariser's
// window follow it. It is not held to MinContextWindow: when the server
// offers no more, compacting under what it offers is the only way on.
//
// reply is the most a reply may take (the max tokens a request asks for),
// 0 when unknown. A window a server stated is exact, not a declaration
// with room for error, so the reserve is at most the reply and a tenth of
// the window: on a small window the usual reserve (half of it) would
// leave the prompt less room than the server gives.
func (c *Compactor) SetWindow(window, reply int) {
	if window <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cfg.Window = window
	keep := c.budget.KeepRecent
	c.budget = NewBudget(window, c.cfg.ReserveTokens)
	if reply > 0 {
		c.budget.Reserve = min(c.budget.Reserve, reply+window/10)
	}
	if c.cfg.KeepRecentTokens > 0 {
		c.budget.KeepRecent = min(keep, c.cfg.KeepRecentTokens, KeepRecentTokens(window))
	}
	if s := c.cfg.Summarizer; s != nil {
		own := *s
		own.Window = min(own.Window, window)
		own.Options.MaxTokens = min(own.Options.MaxTokens, max(1, c.budget.Reserve*4/5))
		c.cfg.Summarizer = &own
	}
}

// Warning returns the small-window warning, or "".
func (c *Compactor) Warning() string { return c.warning }

// SummaryPrefix starts the text of a summary message; it is
// llm.SummaryPrefix, shared with the session store.
const SummaryPrefix = llm.SummaryPrefix

// SummaryMessage is the user message that stands for compacted history
// (llm.SummaryMessage).
func SummaryMessage(summary string, ts int64) llm.Message { return llm.SummaryMessage(summary, ts) }

func (c *Compactor) emit(e Event) {
	if c.cfg.OnEvent != nil {
		c.cfg.OnEvent(e)
	}
}

func (c *Compactor) now() int64 {
	if c.cfg.Now != nil {
		return c.cfg.Now()
	}
	return llm.NowMillis()
}

// view is the context the model sees: msgs with the compaction, the snip
// and the truncations applied. off maps a view index v ≥ lead to the full
// index v - lead + off, plus hole from holeAt on.
type view struct {
	msgs []llm.Message
	lead int // 1 when a summary message leads the view
	off  int
	// holeAt is the view index of the message after a snip's hole (the
	// one carrying its note), hole the number of full messages left out.
	holeAt, hole int
}

func (v view) full(i int) int {
	f := i - v.lead + v.off
	if v.hole > 0 && i >= v.holeAt {
		f += v.hole
	}
	return f
}

// index maps a full index to the view; one inside a snip's hole maps to
// the message after the hole.
func (v view) index(full int) int {
	if v.hole > 0 {
		to := v.full(v.holeAt)
		switch {
		case full >= to:
			full -= v.hole
		case full >= to-v.hole:
			full = to - v.hole
		}
	}
	return full - v.off + v.lead
}

func (c *Compactor) view(msgs []llm.Message) view {
	st := &c.st
	if (st.summary != "" && (st.firstKept > len(msgs) ||
		(st.firstKept < len(msgs) && keyOf(&msgs[st.firstKept]) != st.keptKey))) ||
		(st.snipTo > 0 && (st.snipTo >= len(msgs) || keyOf(&msgs[st.snipTo]) != st.snipKey)) {
		// The history was replaced (a new run from a stored session whose
		// context already holds the summary or the snip): start afresh.
		c.st = state{truncs: map[int][]llm.Content{}}
	}
	v := view{msgs: msgs}
	if st.summary != "" || st.snipTo > 0 {
		if st.summary != "" {
			v.lead, v.off = 1, st.firstKept
		}
		n := len(msgs) - v.off + v.lead
		if st.snipTo > 0 {
			v.hole = st.snipTo - st.snipFrom
			n -= v.hole
		}
		out := make([]llm.Message, 0, n)
		if v.lead == 1 {
			out = append(out, SummaryMessage(st.summary, st.summaryTS))
		}
		if st.snipTo > 0 {
			out = append(out, msgs[v.off:st.snipFrom]...)
			v.holeAt = len(out)
			out = append(out, st.snipMsg)
			out = append(out, msgs[st.snipTo+1:]...)
		} else {
			out = append(out, msgs[v.off:]...)
		}
		v.msgs = out
	}
	if len(st.truncs) == 0 {
		return v
	}
	copied := v.lead == 1 || v.hole > 0
	for i := range v.msgs {
		m := &v.msgs[i]
		if m.Role != llm.RoleToolResult {
			continue
		}
		if content, ok := st.truncs[v.full(i)]; ok {
			if !copied {
				v.msgs = append([]llm.Message(nil), v.msgs...)
				m = &v.msgs[i]
				copied = true
			}
			m.Content = content
		}
	}
	return v
}

func (c *Compactor) prompt(v view) Prompt {
	from := c.st.usageFrom
	if v.lead == 1 || v.hole > 0 {
		from = max(v.lead, v.index(from))
	}
	return Prompt{System: c.cfg.SystemPrompt, Tools: c.cfg.Tools, Messages: v.msgs, UsageFrom: from}
}

// keepTruncations stores truncations made on v and records them, with
// their indices mapped to the full history. reset says whether usage
// reported before now no longer describes the context.
func (c *Compactor) keepTruncations(ctx context.Context, v view, recs []Truncation, fullLen int, reset bool) {
	if len(recs) == 0 {
		return
	}
	for i := range recs {
		recs[i].Index = v.full(recs[i].Index)
		c.st.truncs[recs[i].Index] = recs[i].Content
	}
	if reset {
		c.st.usageFrom = fullLen
	}
	verb := "shortened"
	if recs[0].Reason == "microcompact" {
		verb = "cleared"
	}
	c.emit(Event{Type: EventTruncation, Truncated: len(recs), Records: recs,
		Message: fmt.Sprintf("%s %d tool result(s) to fit the context window", verb, len(recs))})
	if c.cfg.Recorder != nil {
		if err := c.cfg.Recorder.RecordTruncations(ctx, recs); err != nil {
			c.emit(Event{Type: EventRecordError, Err: err, Message: "could not store the tool-result truncation: " + err.Error()})
		}
	}
}

// Restore gives a new Compactor the decisions a stored session recorded,
// for a caller that resumes with the full history rather than with the
// compacted context: the last compaction (nil for none) and the
// truncations recorded since. msgs is the history the records' indices
// refer to.
func (c *Compactor) Restore(msgs []llm.Message, rec *CompactionRecord, truncs []Truncation) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rec != nil {
		if rec.FirstKeptIndex <= 0 || rec.FirstKeptIndex >= len(msgs) {
			return fmt.Errorf("compact: restore: first kept message %d is outside the history of %d messages; pass the history the record was made on",
				rec.FirstKeptIndex, len(msgs))
		}
		c.st.summary = rec.Summary
		c.st.summaryTS = c.now()
		c.st.files = rec.Files
		c.st.firstKept = rec.FirstKeptIndex
		c.st.keptKey = keyOf(&msgs[rec.FirstKeptIndex])
	}
	for _, t := range truncs {
		if t.Index < 0 || t.Index >= len(msgs) || msgs[t.Index].Role != llm.RoleToolResult || msgs[t.Index].ToolCallID != t.ToolCallID {
			return fmt.Errorf("compact: restore: truncation of result %q at message %d does not match the history of %d messages; pass the history the records were made on",
				t.ToolCallID, t.Index, len(msgs))
		}
		c.st.truncs[t.Index] = t.Content
	}
	if rec != nil || len(truncs) > 0 {
		c.st.usageFrom = len(msgs)
	}
	return nil
}

// RestoreSnip gives a new Compactor a snip a stored session recorded, as
// Restore does for a compaction (call Restore first when there is both).
// A snip whose kept message lies behind the restored summary is ignored:
// the summary has taken it in.
func (c *Compactor) RestoreSnip(msgs []llm.Message, rec SnipRecord) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	start := 0
	if c.st.summary != "" {
		start = c.st.firstKept
		if rec.FirstKeptIndex <= start {
			return nil
		}
	}
	if rec.FirstDroppedIndex <= start || rec.FirstKeptIndex <= rec.FirstDroppedIndex || rec.FirstKeptIndex >= len(msgs) {
		return fmt.Errorf("compact: restore: the snip of messages %d to %d does not fit the history of %d messages kept from %d; pass the history the record was made on",
			rec.FirstDroppedIndex, rec.FirstKeptIndex, len(msgs), start)
	}
	st := &c.st
	st.snipFrom, st.snipTo, st.snipKey = rec.FirstDroppedIndex, rec.FirstKeptIndex, keyOf(&msgs[rec.FirstKeptIndex])
	st.snipMsg = withNote(&msgs[rec.FirstKeptIndex], rec.Note)
	st.usageFrom = len(msgs)
	return nil
}

// TransformContext is the hook the agent loop calls before every model
// request. It caps oversized tool results, runs the precheck and takes its
// route: shorten tool results, clear old ones, summarise old history, and
// as a last resort prune it, until the prompt fits its budget. It returns
// the messages to send; msgs is not modified. It fails only when ctx ends
// or the window is refused.
func (c *Compactor) TransformContext(ctx context.Context, msgs []llm.Message) ([]llm.Message, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.warned && c.warning != "" {
		c.warned = true
		c.emit(Event{Type: EventWindowWarning, Message: c.warning})
	}
	return c.fit(ctx, msgs, TriggerThreshold, false, "")
}

// Compact summarises the older history now, whatever the budget, with
// instructions as extra focus for the summary, and returns the new
// context. Very old history is snipped first, as TransformContext does,
// so the summariser does not read it. It returns ErrNothingToCompact when
// all of the history is recent.
func (c *Compactor) Compact(ctx context.Context, msgs []llm.Message, instructions string) ([]llm.Message, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := c.snipFirst(ctx, msgs)
	if _, err := c.compact(ctx, msgs, v, TriggerManual, instructions); err != nil {
		return nil, err
	}
	return c.fit(ctx, msgs, TriggerManual, true, instructions)
}

// Recover compacts after a provider refused the prompt as too long (a
// context-overflow error), then fits the context to its budget as
// TransformContext does. The runner calls it before retrying; the
// decisions are kept, so the agent's next TransformContext applies them
// too, and the returned messages are for callers that send them directly.
func (c *Compactor) Recover(ctx context.Context, msgs []llm.Message) ([]llm.Message, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := c.snipFirst(ctx, msgs)
	if _, err := c.compact(ctx, msgs, v, TriggerOverflow, ""); err != nil && !errors.Is(err, ErrNothingToCompact) {
		return nil, err
	}
	return c.fit(ctx, msgs, TriggerOverflow, true, "")
}

// snipFirst returns the view after snipping very old history, as fit does
// before anything else, so a summary asked for directly does not read it
// either.
func (c *Compactor) snipFirst(ctx context.Context, msgs []llm.Message) view {
	v := c.view(msgs)
	if !c.cfg.DisableSnip && c.snip(ctx, msgs, v) {
		v = c.view(msgs)
	}
	return v
}

// fit applies the precheck's routes until the prompt fits or nothing more
// can be removed.
func (c *Compactor) fit(ctx context.Context, msgs []llm.Message, trigger Trigger, compacted bool, instructions string) ([]llm.Message, error) {
	v := c.view(msgs)
	if capped, recs := CapToolResults(v.msgs, MaxToolResultChars(c.cfg.Window)); len(recs) > 0 {
		v.msgs = capped
		c.keepTruncations(ctx, v, recs, len(msgs), false)
	}
	snipDone, microDone, pruned := c.cfg.DisableSnip, c.cfg.DisableMicrocompact, false
	for {
		d := Precheck(c.prompt(v), c.budget)
		if d.Route == RouteFits {
			return v.msgs, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !snipDone {
			// Very old history goes first and whole, so the summary
			// never has to read it.
			snipDone = true
			if c.snip(ctx, msgs, v) {
				v = c.view(msgs)
				continue
			}
		}
		if !microDone {
			// Clearing old results first keeps what the model saw
			// before stable (and cached); each result is cleared once.
			microDone = true
			opts := c.cfg.Microcompact
			if opts.KeepTokens == 0 {
				// Bulky recent results would otherwise fill the budget and
				// force a summary on nearly every call of a small window.
				opts.KeepTokens = c.budget.KeepRecent
			}
			if out, recs := Microcompact(v.msgs, opts); len(recs) > 0 {
				v.msgs = out
				c.keepTruncations(ctx, v, recs, len(msgs), true)
				continue
			}
		}
		if d.Route == RouteTruncate || compacted {
			// Free a tenth of the budget more than needed, so the next
			// calls do not shorten every result again by a little.
			headroom := d.PromptBudget / 10 * CharsPerToken
			out, recs, ok := ShrinkToolResults(v.msgs, d.NeedChars+headroom, 0)
			if !ok {
				out, recs, ok = ShrinkToolResults(v.msgs, d.NeedChars, 0)
			}
			if ok && len(recs) > 0 {
				v.msgs = out
				c.keepTruncations(ctx, v, recs, len(msgs), true)
				continue
			}
		}
		if !compacted {
			compacted = true
			if _, err := c.compact(ctx, msgs, v, trigger, instructions); err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				if !errors.Is(err, ErrNothingToCompact) {
					return nil, err
				}
			}
			v = c.view(msgs)
			continue
		}
		if !pruned {
			pruned = true
			if c.prune(ctx, msgs, v, trigger, nil) {
				v = c.view(msgs)
				continue
			}
		}
		c.emit(Event{Type: EventOverBudget, TokensBefore: d.Estimated.Tokens, Route: d.Route,
			Message: fmt.Sprintf("the prompt (about %d tokens) is still over its budget of %d tokens; sending it anyway",
				d.Estimated.Tokens, d.PromptBudget)})
		return v.msgs, nil
	}
}

// snip drops the middle of very old history from the view: all but its
// head and its newest Snip.TailTokens. It reports whether anything was
// dropped. An earlier snip's hole is widened, never doubled: a new snip
// that would leave the old note in place is not made.
func (c *Compactor) snip(ctx context.Context, msgs []llm.Message, v view) bool {
	tail := c.cfg.Snip.TailTokens
	if tail <= 0 {
		tail = DefaultSnipTailWindows * c.cfg.Window
	}
	a, b, ok := snipRange(v.msgs, c.cfg.Snip.HeadTokens, tail)
	if !ok || a < v.lead {
		return false
	}
	from, to := v.full(a), v.full(b)
	if v.hole > 0 {
		if a > v.holeAt || v.holeAt >= b {
			return false
		}
		if a == v.holeAt {
			from -= v.hole
		}
	}
	before := Estimate(c.prompt(v)).Tokens
	tokens := MessagesTokens(msgs[from:to])
	note := SnipNote(to-from, tokens)
	st := &c.st
	st.snipFrom, st.snipTo, st.snipKey = from, to, keyOf(&msgs[to])
	st.snipMsg = withNote(&msgs[to], note)
	st.usageFrom = len(msgs)
	rec := &SnipRecord{FirstDroppedIndex: from, FirstKeptIndex: to, Note: note, DroppedMessages: to - from,
		DroppedTokens: tokens, TokensBefore: before, TokensAfter: Estimate(c.prompt(c.view(msgs))).Tokens}
	c.emit(Event{Type: EventSnip, TokensBefore: before, TokensAfter: rec.TokensAfter, Snip: rec,
		Message: fmt.Sprintf("left out %d messages of very old history (about %d tokens)", rec.DroppedMessages, tokens)})
	if sr, ok := c.cfg.Recorder.(SnipRecorder); ok {
		if err := sr.RecordSnip(ctx, *rec); err != nil {
			c.emit(Event{Type: EventRecordError, Err: err, Message: "could not store the snip: " + err.Error()})
		}
	}
	return true
}

// compact summarises the view's history before the cut point and moves
// the state past it. A failed summary falls back to pruning, reported.
func (c *Compactor) compact(ctx context.Context, msgs []llm.Message, v view, trigger Trigger, instructions string) (*CompactionRecord, error) {
	body := v.msgs[v.lead:]
	// Keep the recent tokens verbatim, but no more than fits beside the
	// system prompt, the tools and a summary.
	keep := max(1, min(c.budget.KeepRecent, c.room()-summaryAllowance))
	cut := FindCutPoint(body, keep)
	if cut == 0 {
		return nil, ErrNothingToCompact
	}
	before := Estimate(c.prompt(v)).Tokens
	c.emit(Event{Type: EventCompactionStart, Trigger: trigger, TokensBefore: before})
	if c.cfg.BeforeCompaction != nil {
		c.cfg.BeforeCompaction(ctx, CompactionStart{Trigger: trigger, Messages: len(v.msgs), TokensBefore: before})
	}
	var summary string
	var err error
	if c.cfg.Summarizer == nil {
		err = errors.New("no summariser is configured")
	} else {
		s := *c.cfg.Summarizer
		if instructions != "" {
			s.Instructions.Focus = joinNonEmpty(s.Instructions.Focus, instructions)
		}
		summary, err = s.Summarize(ctx, body[:cut], StripFiles(c.st.summary))
	}
	if err != nil {
		if ctx.Err() != nil {
			c.emit(Event{Type: EventCompactionEnd, Trigger: trigger, TokensBefore: before, Err: ctx.Err(),
				Message: "compaction aborted"})
			return nil, ctx.Err()
		}
		if c.prune(ctx, msgs, v, trigger, err) {
			return nil, nil
		}
		c.emit(Event{Type: EventCompactionEnd, Trigger: trigger, TokensBefore: before, Err: err,
			Message: "compaction failed and nothing could be pruned: " + err.Error()})
		return nil, nil
	}
	files := FileOps(body[:cut], c.st.files)
	rec := c.commit(msgs, v, cut, withFiles(summary, files), files)
	rec.Trigger, rec.TokensBefore = trigger, before
	c.finish(ctx, rec)
	return rec, nil
}

// commit moves the state so that view index lead+cut is the first kept
// message, with summary standing for everything before.
func (c *Compactor) commit(msgs []llm.Message, v view, cut int, summary string, files FileLists) *CompactionRecord {
	first := v.full(v.lead + cut)
	c.st.summary = summary
	c.st.summaryTS = c.now()
	c.st.files = files
	c.st.firstKept = first
	c.st.keptKey = keyOf(&msgs[first])
	c.st.usageFrom = len(msgs)
	if c.st.snipTo > 0 && first >= c.st.snipTo {
		// The summary took in the snip's head and its note.
		c.st.snipFrom, c.st.snipTo, c.st.snipMsg = 0, 0, llm.Message{}
	}
	// Truncations of results now behind the summary are no longer needed.
	for i := range c.st.truncs {
		if i < first {
			delete(c.st.truncs, i)
		}
	}
	after := Estimate(c.prompt(c.view(msgs))).Tokens
	return &CompactionRecord{Summary: summary, FirstKeptIndex: first, TokensAfter: after, Files: files, DroppedMessages: cut}
}

func (c *Compactor) finish(ctx context.Context, rec *CompactionRecord) {
	if c.cfg.Recorder != nil {
		if err := c.cfg.Recorder.RecordCompaction(ctx, *rec); err != nil {
			c.emit(Event{Type: EventRecordError, Err: err, Message: "could not store the compaction: " + err.Error()})
		}
	}
	c.emit(Event{Type: EventCompactionEnd, Trigger: rec.Trigger, TokensBefore: rec.TokensBefore,
		TokensAfter: rec.TokensAfter, Record: rec, Err: rec.FallbackErr,
		Message: fmt.Sprintf("compacted %d messages: about %d tokens before, %d after", rec.DroppedMessages,
			rec.TokensBefore, rec.TokensAfter)})
	if c.cfg.AfterCompaction != nil {
		c.cfg.AfterCompaction(ctx, *rec)
	}
}

// prune drops the oldest history of the view to fit the history share,
// without a summary: the fallback when summarisation fails (cause) or
// when compaction was not enough (cause nil). It reports whether anything
// was dropped.
func (c *Compactor) prune(ctx context.Context, msgs []llm.Message, v view, trigger Trigger, cause error) bool {
	body := v.msgs[v.lead:]
	// What is left must fit both the history share and, beside the
	// summary and a note, the prompt budget.
	target := int(float64(c.cfg.Window) * c.cfg.HistoryShare)
	target = max(1, min(target, c.room()-MessagesTokens(v.msgs[:v.lead])-noteAllowance))
	r := Prune(body, target, 1, DefaultParts)
	cut := len(r.Dropped)
	if cut == 0 || cut >= len(body) {
		return false
	}
	before := Estimate(c.prompt(v)).Tokens
	if cause == nil {
		// Not a fallback inside compact, which has announced itself.
		c.emit(Event{Type: EventCompactionStart, Trigger: trigger, TokensBefore: before})
		if c.cfg.BeforeCompaction != nil {
			c.cfg.BeforeCompaction(ctx, CompactionStart{Trigger: trigger, Messages: len(v.msgs), TokensBefore: before})
		}
	}
	note := fmt.Sprintf("[agentloop] %d older messages (about %d tokens) were dropped without a summary to fit the context window.",
		cut, r.DroppedTokens)
	if cause != nil {
		note = fmt.Sprintf("[agentloop] Summarising older history failed (%v), so %d older messages (about %d tokens) were dropped to fit the context window.",
			cause, cut, r.DroppedTokens)
	}
	files := FileOps(body[:cut], c.st.files)
	summary := withFiles(joinNonEmpty(StripFiles(c.st.summary), note), files)
	rec := c.commit(msgs, v, cut, summary, files)
	rec.Trigger, rec.TokensBefore, rec.Fallback, rec.FallbackErr = trigger, before, true, cause
	msg := fmt.Sprintf("pruned %d older messages without a summary", cut)
	if cause != nil {
		msg = "summarisation failed (" + cause.Error() + "); " + msg
	}
	c.emit(Event{Type: EventFallback, Trigger: trigger, TokensBefore: before, TokensAfter: rec.TokensAfter, Err: cause,
		Record: rec, Message: msg})
	c.finish(ctx, rec)
	return true
}

// Allowances, in tokens, for what compaction adds to the prompt.
const (
	summaryAllowance = 1_000
	noteAllowance    = 100
)

// room is the tokens of the prompt budget left for messages, without the
// safety margin, once the system prompt and the tools are counted.
func (c *Compactor) room() int {
	return c.budget.PromptBudget()*5/6 - SystemTokens(c.cfg.SystemPrompt) - ToolsTokens(c.cfg.Tools)
}

func joinNonEmpty(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n\n" + b
}

// StripFiles removes the file lists a summary carries at its end, so they
// are not repeated when a summary is carried into the next one or shown
// beside its record's Files.
func StripFiles(summary string) string {
	for _, tag := range []string{"\n\n<read-files>", "\n\n<modified-files>"} {
		if i := strings.Index(summary, tag); i >= 0 {
			summary = summary[:i]
		}
	}
	return summary
}

// PersistToolResult caps a tool result before it is stored, with the
// signature of the agent's ToolResultPersist hook: a result over
// MaxToolResultChars keeps its head and tail and a notice.
func (c *Compactor) PersistToolResult(_ context.Context, _ tool.Call, res tool.Result) tool.Result {
	content, removed := TruncateContent(res.Content, MaxToolResultChars(c.cfg.Window), TruncateOptions{})
	if removed > 0 {
		res.Content = content
	}
	return res
}
