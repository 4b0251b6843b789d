package compact

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
)

// TestTransformSnips checks the snip step of the pipeline: very old history
// loses its middle before anything else is tried, the decision is recorded
// and applied again to the growing history, and a second snip widens the
// first hole rather than making another.
func TestTransformSnips(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, Config{Snip: SnipOptions{TailTokens: 5_000}}, &fakeModel{})
	msgs := conversation(100, 500) // 100 turns of about 1,000 tokens
	out, err := h.c.TransformContext(ctx, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.types(); !slices.Equal(got, []EventType{EventSnip}) {
		t.Fatalf("events %v; want only a snip", got)
	}
	if h.model.count() != 0 || len(h.rec.compactions) != 0 {
		t.Errorf("snip alone fits, yet the summariser was called %d times", h.model.count())
	}
	h.fits(t, out)
	if len(h.rec.snips) != 1 {
		t.Fatalf("%d snips recorded", len(h.rec.snips))
	}
	rec := h.rec.snips[0]
	// The head is the first turn; the tail the newest 5 turns (5,000 tokens).
	if rec.FirstDroppedIndex != 2 || rec.FirstKeptIndex != 190 || rec.DroppedMessages != 188 {
		t.Errorf("record %+v; want messages 2..190 dropped", rec)
	}
	wantStamps := append([]int64{1, 2}, stamps(msgs[190:])...)
	if !slices.Equal(stamps(out), wantStamps) {
		t.Errorf("kept %v, want %v", stamps(out), wantStamps)
	}
	if out[2].Content[0].Text != rec.Note || !strings.Contains(rec.Note, "188 earlier messages") {
		t.Errorf("note %q at the cut, record says %q", out[2].Content[0].Text, rec.Note)
	}
	if len(msgs[190].Content) != 1 {
		t.Error("the caller's message was modified")
	}
	if rec.TokensAfter >= rec.TokensBefore || rec.TokensAfter == 0 {
		t.Errorf("tokens %d → %d", rec.TokensBefore, rec.TokensAfter)
	}

	// The next call, with one more turn, applies the same decision.
	msgs = append(msgs, stamp(conversation(101, 500)...)[200:]...)
	again, err := h.c.TransformContext(ctx, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.events) != 1 || !slices.Equal(stamps(again[:len(out)]), stamps(out)) || len(again) != len(out)+2 {
		t.Fatalf("decision not reapplied: events %v, %d messages", h.types(), len(again))
	}

	// Ten more turns put it over budget again: the hole grows from the
	// same start, and the note counts every message left out.
	msgs = stamp(conversation(111, 500)...)
	if _, err := h.c.TransformContext(ctx, msgs[:202]); err != nil { // same history as before
		t.Fatal(err)
	}
	out, err = h.c.TransformContext(ctx, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.rec.snips) != 2 {
		t.Fatalf("%d snips recorded; want a second", len(h.rec.snips))
	}
	rec = h.rec.snips[1]
	if rec.FirstDroppedIndex != 2 || rec.FirstKeptIndex != 212 || !strings.Contains(rec.Note, "210 earlier messages") {
		t.Errorf("second record %+v; want 2..212", rec)
	}
	if !slices.Equal(stamps(out), append([]int64{1, 2}, stamps(msgs[212:])...)) {
		t.Errorf("kept %v", stamps(out))
	}
	if strings.Count(joinTexts(out), "earlier messages") != 1 {
		t.Error("two snip notes in one context")
	}
	h.fits(t, out)
}

// TestSnipBeforeSummary checks the default: only history beyond two
// windows is snipped, and the summary that follows reads what is left,
// head and note included, and takes in the note, which ends the snip.
func TestSnipBeforeSummary(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, Config{DisableMicrocompact: true}, &fakeModel{})
	msgs := conversation(200, 500) // about 200,000 tokens on a 32,000 window
	out, err := h.c.TransformContext(ctx, msgs)
	if err != nil {
		t.Fatal(err)
	}
	types := h.types()
	if len(types) < 3 || types[0] != EventSnip || types[1] != EventCompactionStart {
		t.Fatalf("events %v; want a snip, then a compaction", types)
	}
	snip := h.rec.snips[0]
	if tail := MessagesTokens(msgs[snip.FirstKeptIndex:]); tail < 2*32_000 || tail > 2*32_000+1_000 {
		t.Errorf("the snip kept %d tokens of tail; want two windows", tail)
	}
	read := 0
	for _, req := range h.model.reqs {
		for _, m := range req.Messages {
			read += MessageChars(&m)
		}
	}
	if read/CharsPerToken > 3*32_000 {
		t.Errorf("the summariser read about %d tokens; the snip should have spared it most of 200,000", read/CharsPerToken)
	}
	if !strings.Contains(joinRequests(h.model.reqs), snip.Note) {
		t.Error("the summariser was not shown the snip's note")
	}
	if len(h.rec.compactions) != 1 || h.rec.compactions[0].FirstKeptIndex <= snip.FirstKeptIndex {
		t.Fatalf("compactions %+v", h.rec.compactions)
	}
	if strings.Contains(joinTexts(out[1:]), "earlier messages") {
		t.Error("the note is still shown after the summary took it in")
	}
	h.fits(t, out)
	again, err := h.c.TransformContext(ctx, msgs)
	if err != nil || len(again) != len(out) || len(h.rec.snips) != 1 {
		t.Errorf("second call: %v, %d messages (want %d), %d snips", err, len(again), len(out), len(h.rec.snips))
	}
}

func TestSnipDisabled(t *testing.T) {
	h := newHarness(t, Config{DisableSnip: true, Snip: SnipOptions{TailTokens: 5_000}}, &fakeModel{})
	if _, err := h.c.TransformContext(context.Background(), conversation(100, 500)); err != nil {
		t.Fatal(err)
	}
	if len(h.rec.snips) != 0 || len(h.rec.compactions) != 1 {
		t.Errorf("%d snips, %d compactions; want none and one", len(h.rec.snips), len(h.rec.compactions))
	}
}

func joinTexts(msgs []llm.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.Text())
		b.WriteByte('\n')
	}
	return b.String()
}

func joinRequests(reqs []*llm.Request) string {
	var b strings.Builder
	for _, r := range reqs {
		b.WriteString(joinTexts(r.Messages))
	}
	return b.String()
}

func TestRestoreSnip(t *testing.T) {
	ctx := context.Background()
	msgs := conversation(100, 500)
	h := newHarness(t, Config{Snip: SnipOptions{TailTokens: 5_000}}, &fakeModel{})
	want, err := h.c.TransformContext(ctx, msgs)
	if err != nil || len(h.rec.snips) != 1 {
		t.Fatalf("setup: %v, %d snips", err, len(h.rec.snips))
	}
	fresh := newHarness(t, Config{Snip: SnipOptions{TailTokens: 5_000}}, &fakeModel{})
	if err := fresh.c.RestoreSnip(msgs, h.rec.snips[0]); err != nil {
		t.Fatal(err)
	}
	got, err := fresh.c.TransformContext(ctx, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if len(fresh.events) != 0 || joinTexts(got) != joinTexts(want) || !slices.Equal(stamps(got), stamps(want)) {
		t.Errorf("restored view differs: %d messages (want %d), events %v", len(got), len(want), fresh.types())
	}
	for _, bad := range []SnipRecord{{FirstDroppedIndex: 0, FirstKeptIndex: 4}, {FirstDroppedIndex: 4, FirstKeptIndex: 4}, {FirstDroppedIndex: 2, FirstKeptIndex: 200}} {
		if err := fresh.c.RestoreSnip(msgs, bad); err == nil {
			t.Errorf("record %+v accepted", bad)
		}
	}
}

// TestCompactSnipsFirst checks that a summary asked for directly (manual,
// or after an overflow) does not read very old history either.
func TestCompactSnipsFirst(t *testing.T) {
	for _, manual := range []bool{true, false} {
		h := newHarness(t, Config{DisableMicrocompact: true}, &fakeModel{})
		msgs := conversation(200, 500)
		var err error
		if manual {
			_, err = h.c.Compact(context.Background(), msgs, "focus")
		} else {
			_, err = h.c.Recover(context.Background(), msgs)
		}
		if err != nil {
			t.Fatal(err)
		}
		types := h.types()
		if len(types) < 2 || types[0] != EventSnip || types[1] != EventCompactionStart || len(h.rec.compactions) != 1 {
			t.Errorf("manual %v: events %v", manual, types)
		}
		if read := len(joinRequests(h.model.reqs)) / CharsPerToken; read > 3*32_000 {
			t.Errorf("manual %v: the summariser read about %d tokens of a 200,000-token history", manual, read)
		}
	}
}
