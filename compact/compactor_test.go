package compact

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// conversation returns n turns of user text and assistant text, each turn
// about 2×tokens tokens, timestamps 1..2n.
func conversation(n, tokens int) []llm.Message {
	var msgs []llm.Message
	for range n {
		msgs = append(msgs, user(rep("u", tokens*4)), assistant(rep("a", tokens*4)))
	}
	return stamp(msgs...)
}

// toolTurns returns n turns, each a user line, a read call and a result
// of size chars.
func toolTurns(n, chars int) []llm.Message {
	var msgs []llm.Message
	for i := range n {
		id := "call" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		msgs = append(msgs, user("next"), assistant("", call(id, "read", `{"path":"f.txt"}`)),
			result(id, "read", rep("line of output\n", chars/15)))
	}
	msgs = append(msgs, assistant("done"))
	return stamp(msgs...)
}

type harness struct {
	c      *Compactor
	model  *fakeModel
	rec    *recorder
	events []Event
	before []CompactionStart
	after  []CompactionRecord
}

func newHarness(t *testing.T, cfg Config, model *fakeModel) *harness {
	t.Helper()
	h := &harness{model: model, rec: &recorder{}}
	if cfg.Window == 0 {
		cfg.Window = 32_000
	}
	if model != nil {
		cfg.Summarizer = &Summarizer{Model: model, Sleep: (&sleeps{}).sleep, Jitter: half}
	}
	cfg.Recorder = h.rec
	cfg.OnEvent = func(e Event) { h.events = append(h.events, e) }
	cfg.BeforeCompaction = func(_ context.Context, s CompactionStart) { h.before = append(h.before, s) }
	cfg.AfterCompaction = func(_ context.Context, r CompactionRecord) { h.after = append(h.after, r) }
	cfg.Now = func() int64 { return 999 }
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.c = c
	return h
}

func (h *harness) types() []EventType {
	var out []EventType
	for _, e := range h.events {
		out = append(out, e.Type)
	}
	return out
}

func (h *harness) fits(t *testing.T, msgs []llm.Message) {
	t.Helper()
	d := Precheck(h.c.prompt(view{msgs: msgs}), h.c.Budget())
	if d.Route != RouteFits {
		t.Errorf("result does not fit: %d tokens > %d", d.Estimated.Tokens, d.PromptBudget)
	}
	if msg := checkPairing(msgs); msg != "" {
		t.Error(msg)
	}
}

func TestNewWindowGuard(t *testing.T) {
	if _, err := New(Config{Window: 8_000}); !errors.Is(err, ErrWindowTooSmall) {
		t.Fatalf("8K window: err %v", err)
	}
	h := newHarness(t, Config{Window: 20_000}, nil)
	if h.c.Warning() == "" {
		t.Fatal("no warning for a 20K window")
	}
	for range 2 {
		if _, err := h.c.TransformContext(context.Background(), []llm.Message{user("hi")}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(h.events); n != 1 || h.events[0].Type != EventWindowWarning {
		t.Errorf("events %v: want one warning", h.types())
	}
}

func TestTransformFits(t *testing.T) {
	h := newHarness(t, Config{}, &fakeModel{})
	msgs := conversation(5, 100)
	out, err := h.c.TransformContext(context.Background(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(msgs) || &out[0] != &msgs[0] {
		t.Error("a context that fits should pass through untouched")
	}
	if h.model.count() != 0 || len(h.events) != 0 {
		t.Errorf("calls %d events %v", h.model.count(), h.types())
	}
}

func TestTransformCompacts(t *testing.T) {
	h := newHarness(t, Config{SystemPrompt: rep("s", 4_000)}, &fakeModel{})
	msgs := conversation(30, 300) // 18,000 tokens > 12,000
	out, err := h.c.TransformContext(context.Background(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	h.fits(t, out)
	if h.model.count() == 0 || len(h.rec.compactions) != 1 || len(h.before) != 1 || len(h.after) != 1 {
		t.Fatalf("calls %d records %d hooks %d/%d", h.model.count(), len(h.rec.compactions), len(h.before), len(h.after))
	}
	rec := h.rec.compactions[0]
	if !strings.HasPrefix(out[0].Text(), SummaryPrefix) || !strings.Contains(out[0].Text(), "## Goal") {
		t.Errorf("first message is not the summary: %.100q", out[0].Text())
	}
	if out[1].Timestamp != msgs[rec.FirstKeptIndex].Timestamp || len(out) != len(msgs)-rec.FirstKeptIndex+1 {
		t.Errorf("kept from %d, view has %d messages", rec.FirstKeptIndex, len(out))
	}
	if rec.TokensAfter >= rec.TokensBefore || rec.Trigger != TriggerThreshold || rec.Fallback {
		t.Errorf("record %+v", rec)
	}
	if kept := MessagesTokens(out[1:]); kept < h.c.Budget().KeepRecent {
		t.Errorf("kept %d tokens, want at least %d", kept, h.c.Budget().KeepRecent)
	}
	if got := h.types(); len(got) != 2 || got[0] != EventCompactionStart || got[1] != EventCompactionEnd {
		t.Errorf("events %v", got)
	}

	// The next call, with one more turn, reuses the compaction.
	calls := h.model.count()
	more := append(msgs, stamp(append(conversation(31, 10)[60:], user("and now?"))...)...)
	out2, err := h.c.TransformContext(context.Background(), more)
	if err != nil {
		t.Fatal(err)
	}
	if h.model.count() != calls || out2[0].Text() != out[0].Text() || len(out2) != len(out)+3 {
		t.Errorf("second call: %d summariser calls (was %d), %d messages", h.model.count(), calls, len(out2))
	}
}

func TestStaleUsageDoesNotRecompact(t *testing.T) {
	h := newHarness(t, Config{}, &fakeModel{})
	msgs := conversation(30, 300)
	for i := range msgs {
		if msgs[i].Role == llm.RoleAssistant {
			// Each reply reports the whole, growing context it saw.
			msgs[i].Usage = &llm.Usage{Input: 300 * (i + 1), Total: 300 * (i + 2)}
		}
	}
	if _, err := h.c.TransformContext(context.Background(), msgs); err != nil {
		t.Fatal(err)
	}
	if len(h.rec.compactions) != 1 {
		t.Fatalf("%d compactions", len(h.rec.compactions))
	}
	next := append(msgs, user("go on"))
	out, err := h.c.TransformContext(context.Background(), next)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.rec.compactions) != 1 {
		t.Errorf("usage from before the compaction caused %d compactions", len(h.rec.compactions))
	}
	// A reply produced after it reports the compacted context and is used.
	reply := assistant("ok")
	reply.Usage = &llm.Usage{Input: 9_000, Output: 100, Total: 9_100}
	next = append(next, reply, user("more"))
	d := Precheck(h.c.prompt(h.c.view(next)), h.c.Budget())
	if d.Estimated.Reported != 9_100 {
		t.Errorf("fresh usage not used: %+v (view has %d messages, out %d)", d.Estimated, len(h.c.view(next).msgs), len(out))
	}
}

func TestTransformTruncatesOnly(t *testing.T) {
	// On a 32K window the aggregate cap (38,400 chars) is nearly the whole
	// prompt budget, so truncation alone never suffices there; on 128K it
	// does.
	h := newHarness(t, Config{Window: 128_000, DisableMicrocompact: true}, &fakeModel{})
	msgs := toolTurns(10, 39_000) // 390,000 chars ≈ 117,000 tokens with margin > 108,000
	out, err := h.c.TransformContext(context.Background(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	h.fits(t, out)
	if h.model.count() != 0 || len(h.rec.compactions) != 0 {
		t.Errorf("truncation route called the summariser %d times", h.model.count())
	}
	if len(h.rec.truncations) == 0 {
		t.Fatal("no truncations recorded")
	}
	for _, r := range h.rec.truncations {
		if msgs[r.Index].ToolCallID != r.ToolCallID || r.Reason != "budget" {
			t.Errorf("record %+v does not point at its result", r)
		}
		if m := (llm.Message{Content: r.Content}); !strings.Contains(m.Text(), "more characters truncated]") {
			t.Error("truncated content has no notice")
		}
	}
	// The same truncation is applied again, not recorded again.
	n := len(h.rec.truncations)
	out2, err := h.c.TransformContext(context.Background(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.rec.truncations) != n || out2[2].Text() != out[2].Text() {
		t.Errorf("second call recorded %d more", len(h.rec.truncations)-n)
	}
}

func TestTransformMicrocompacts(t *testing.T) {
	h := newHarness(t, Config{}, &fakeModel{})
	msgs := toolTurns(12, 4_000) // 48,000 chars of results
	out, err := h.c.TransformContext(context.Background(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	h.fits(t, out)
	if h.model.count() != 0 {
		t.Errorf("summariser called %d times", h.model.count())
	}
	cleared := 0
	for _, r := range h.rec.truncations {
		if r.Reason == "microcompact" {
			cleared++
		}
	}
	if cleared == 0 {
		t.Fatalf("no results cleared: %+v", h.rec.truncations)
	}
	last := out[len(out)-2]
	if last.Role != llm.RoleToolResult || strings.Contains(last.Text(), "cleared") {
		t.Error("the newest result was cleared")
	}
}

func TestTransformFallback(t *testing.T) {
	boom := &llm.ProviderError{Provider: "p", Reason: llm.ReasonServer, Status: 500, Message: "internal error"}
	tests := []struct {
		name  string
		model *fakeModel
		calls int
	}{
		{"summariser always fails", &fakeModel{always: true, err: boom}, 3},
		{"no summariser", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Config{}, tt.model)
			msgs := conversation(30, 300)
			out, err := h.c.TransformContext(context.Background(), msgs)
			if err != nil {
				t.Fatal(err)
			}
			if msg := checkPairing(out); msg != "" {
				t.Error(msg)
			}
			if tt.model != nil && tt.model.count() != tt.calls {
				t.Errorf("%d summariser calls, want %d", tt.model.count(), tt.calls)
			}
			var fallback *Event
			for i := range h.events {
				if h.events[i].Type == EventFallback {
					fallback = &h.events[i]
				}
			}
			if fallback == nil {
				t.Fatalf("no fallback event: %v", h.types())
			}
			if tt.model != nil && !errors.Is(fallback.Err, boom) {
				t.Errorf("fallback error %v does not carry the cause", fallback.Err)
			}
			if len(h.rec.compactions) != 1 || !h.rec.compactions[0].Fallback {
				t.Fatalf("records %+v", h.rec.compactions)
			}
			if !strings.Contains(out[0].Text(), "dropped") || len(out) >= len(msgs) {
				t.Errorf("no pruning note, %d of %d messages", len(out), len(msgs))
			}
			if MessagesTokens(out[1:]) > h.c.Window()*1/2 {
				t.Errorf("kept %d tokens, over half the window", MessagesTokens(out[1:]))
			}
		})
	}
}

func TestTransformSummaryFailsTwiceThenSucceeds(t *testing.T) {
	h := newHarness(t, Config{}, &fakeModel{fail: 2, err: errors.New("flaky")})
	out, err := h.c.TransformContext(context.Background(), conversation(30, 300))
	if err != nil {
		t.Fatal(err)
	}
	h.fits(t, out)
	if len(h.rec.compactions) != 1 || h.rec.compactions[0].Fallback || h.model.count() < 3 {
		t.Errorf("records %+v after %d calls", h.rec.compactions, h.model.count())
	}
	for _, e := range h.events {
		if e.Type == EventFallback {
			t.Error("fell back although the third try succeeded")
		}
	}
}

func TestCompactManual(t *testing.T) {
	h := newHarness(t, Config{}, &fakeModel{})
	if _, err := h.c.Compact(context.Background(), conversation(2, 10), ""); !errors.Is(err, ErrNothingToCompact) {
		t.Errorf("short history: err %v", err)
	}
	msgs := conversation(20, 300) // 12,000 tokens: the precheck alone would not compact
	out, err := h.c.Compact(context.Background(), msgs, "Keep the API decisions.")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.model.lastPrompt(), "Additional focus:") || !strings.Contains(h.model.lastPrompt(), "Keep the API decisions.") {
		t.Error("instructions not passed to the summariser")
	}
	if len(h.rec.compactions) != 1 || h.rec.compactions[0].Trigger != TriggerManual || len(out) >= len(msgs) {
		t.Errorf("records %+v, %d messages", h.rec.compactions, len(out))
	}
	if _, err := h.c.Recover(context.Background(), append(msgs, conversation(20, 300)...)); err != nil {
		t.Fatal(err)
	}
	if n := len(h.rec.compactions); n != 2 || h.rec.compactions[1].Trigger != TriggerOverflow {
		t.Errorf("recover: records %+v", h.rec.compactions)
	}
}

func TestTransformAbort(t *testing.T) {
	h := newHarness(t, Config{}, &fakeModel{block: true})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := h.c.TransformContext(ctx, conversation(30, 300))
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if len(h.rec.compactions) != 0 {
		t.Error("an aborted compaction was recorded")
	}
}

func TestHistoryReplacedResetsState(t *testing.T) {
	h := newHarness(t, Config{}, &fakeModel{})
	if _, err := h.c.TransformContext(context.Background(), conversation(30, 300)); err != nil {
		t.Fatal(err)
	}
	fresh := stamp(user("a new conversation"), assistant("yes"))
	for i := range fresh {
		fresh[i].Timestamp += 5000
	}
	out, err := h.c.TransformContext(context.Background(), fresh)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || out[0].Text() != "a new conversation" {
		t.Errorf("stale summary applied to a new history: %d messages", len(out))
	}
}

func TestRecorderErrorIsReported(t *testing.T) {
	h := newHarness(t, Config{}, &fakeModel{})
	h.rec.err = errors.New("disk full")
	out, err := h.c.TransformContext(context.Background(), conversation(30, 300))
	if err != nil || len(out) == 0 {
		t.Fatalf("a recorder failure must not fail the call: %v", err)
	}
	found := false
	for _, e := range h.events {
		found = found || (e.Type == EventRecordError && errors.Is(e.Err, h.rec.err))
	}
	if !found {
		t.Errorf("no record error event: %v", h.types())
	}
}

func TestPersistToolResult(t *testing.T) {
	h := newHarness(t, Config{}, nil)
	res := h.c.PersistToolResult(context.Background(), tool.Call{ID: "c"}, tool.TextResult(rep("x\n", 30_000)))
	if n := len(res.Text()); n > MaxToolResultChars(32_000) || !strings.Contains(res.Text(), "more characters truncated]") {
		t.Errorf("persisted %d chars", n)
	}
	small := tool.TextResult("ok")
	if got := h.c.PersistToolResult(context.Background(), tool.Call{}, small); got.Text() != "ok" {
		t.Error("small result changed")
	}
}

func TestRestore(t *testing.T) {
	h := newHarness(t, Config{DisableMicrocompact: true}, &fakeModel{})
	msgs := append(conversation(30, 300), user("go"), assistant("", call("x", "read", `{}`)),
		result("x", "read", rep("r\n", 25_000)))
	want, err := h.c.TransformContext(context.Background(), msgs)
	if err != nil || len(h.rec.compactions) != 1 || len(h.rec.truncations) == 0 {
		t.Fatalf("setup: %v, %d compactions, %d truncations", err, len(h.rec.compactions), len(h.rec.truncations))
	}
	fresh := newHarness(t, Config{DisableMicrocompact: true}, &fakeModel{})
	if err := fresh.c.Restore(msgs, &h.rec.compactions[0], h.rec.truncations); err != nil {
		t.Fatal(err)
	}
	got, err := fresh.c.TransformContext(context.Background(), msgs)
	if err != nil {
		t.Fatal(err)
	}
	if fresh.model.count() != 0 || len(got) != len(want) {
		t.Fatalf("restored view: %d messages (want %d), %d summariser calls", len(got), len(want), fresh.model.count())
	}
	for i := range got {
		if got[i].Text() != want[i].Text() {
			t.Errorf("message %d differs", i)
		}
	}
	if err := fresh.c.Restore(msgs[:3], &h.rec.compactions[0], nil); err == nil {
		t.Error("a record outside the history must be refused")
	}
}
