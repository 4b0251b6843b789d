package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/compact"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
)

// TestSessionRecorderReload checks that what a Compactor decided, recorded
// through SessionRecorder, reloads as the context the Compactor showed:
// a snip alone, a snip taken in by a summary, and tool results capped
// on the way.
func TestSessionRecorderReload(t *testing.T) {
	tests := []struct {
		name       string
		turns      int
		bigAt      int // the turn with a tool result over the cap
		snip       compact.SnipOptions
		wantTypes  []session.EntryType
		wantCustom string
		sameID     bool // every turn calls a tool with one id, as Kimi K2 numbers them per response
	}{
		{"snip alone", 100, 50, compact.SnipOptions{TailTokens: 5_000}, []session.EntryType{session.EntryToolResultTruncate, session.EntryCustom}, session.SnipCustomType, false},
		{"snip, then a summary past it", 200, 198, compact.SnipOptions{}, []session.EntryType{session.EntryToolResultTruncate, session.EntryCustom, session.EntryCompaction}, session.SnipCustomType, false},
		{"one call id in every turn", 100, 50, compact.SnipOptions{TailTokens: 5_000}, []session.EntryType{session.EntryToolResultTruncate, session.EntryCustom}, session.SnipCustomType, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			st := session.NewJSONLStore(t.TempDir())
			s, err := st.Create(ctx, session.CreateOptions{Cwd: "/w"})
			if err != nil {
				t.Fatal(err)
			}
			ts := int64(0)
			add := func(m llm.Message) {
				ts++
				m.Timestamp = ts
				if _, err := s.Append(ctx, session.MessageEntry(m)); err != nil {
					t.Fatal(err)
				}
			}
			bigID := "big"
			if tt.sameID {
				bigID = "functions.read:0"
			}
			for i := range tt.turns {
				add(llm.UserText(strings.Repeat("u", 400)))
				if i == tt.bigAt {
					call := llm.ToolCall(bigID, "read", json.RawMessage(`{}`))
					add(llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{call}, StopReason: llm.StopReasonToolUse})
					add(llm.Message{Role: llm.RoleToolResult, ToolCallID: bigID, ToolName: "read",
						Content: []llm.Content{llm.Text(strings.Repeat("line\n", 10_000))}})
				} else if tt.sameID {
					call := llm.ToolCall(bigID, "read", json.RawMessage(`{}`))
					add(llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{call}, StopReason: llm.StopReasonToolUse})
					add(llm.Message{Role: llm.RoleToolResult, ToolCallID: bigID, ToolName: "read",
						Content: []llm.Content{llm.Text(fmt.Sprintf("small result %d", i))}})
				}
				add(llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text(strings.Repeat("a", 3_600))}, StopReason: llm.StopReasonStop})
			}
			history := s.Context()
			summariser := faux.New(faux.Say("## Goal\nkeep going"))
			summariser.Repeat = true
			c, err := compact.New(compact.Config{Window: 32_000, Snip: tt.snip, DisableMicrocompact: true,
				Summarizer: &compact.Summarizer{Model: summariser},
				Recorder:   &runner.SessionRecorder{Session: s, EntryIDs: func() []string { return history.EntryIDs }}})
			if err != nil {
				t.Fatal(err)
			}
			shown, err := c.TransformContext(ctx, history.Messages)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			tr, err := st.Load(ctx, s.ID())
			if err != nil {
				t.Fatal(err)
			}
			var types []session.EntryType
			for _, e := range tr.Entries {
				if e.Type != session.EntryMessage {
					types = append(types, e.Type)
					if e.Type == session.EntryCustom && e.CustomType != tt.wantCustom {
						t.Errorf("custom entry %q", e.CustomType)
					}
				}
			}
			if d := cmp.Diff(tt.wantTypes, types); d != "" {
				t.Fatalf("recorded entries (-want +got):\n%s", d)
			}
			reloaded := tr.Context("").Messages
			// The summary's time is when it was made, not when it was stored.
			for _, m := range [][]llm.Message{shown, reloaded} {
				if len(m) > 0 && strings.HasPrefix(m[0].Text(), llm.SummaryPrefix) {
					m[0].Timestamp = 0
				}
			}
			if d := cmp.Diff(shown, reloaded); d != "" {
				t.Errorf("reloaded context differs from the one shown (-shown +reloaded):\n%s", d)
			}
			// A second Compactor on the reloaded context has nothing to do.
			c2, _ := compact.New(compact.Config{Window: 32_000, DisableMicrocompact: true})
			again, err := c2.TransformContext(ctx, tr.Context("").Messages)
			if err != nil || len(again) != len(reloaded) {
				t.Errorf("the reloaded context was compacted again: %v, %d → %d messages", err, len(reloaded), len(again))
			}
		})
	}
}

// TestRunSnipsVeryOldHistory runs on a session far longer than the window:
// the run snips the very old middle before summarising, so the summariser
// never reads it, and the transcript records the snip and the summary.
func TestRunSnipsVeryOldHistory(t *testing.T) {
	ctx := context.Background()
	st := session.NewJSONLStore(t.TempDir())
	s, err := st.Create(ctx, session.CreateOptions{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 { // about 200,000 tokens
		for _, m := range []llm.Message{
			llm.UserText(fmt.Sprintf("turn-%03d %s", i, strings.Repeat("u", 400))),
			{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text(strings.Repeat("a", 3_600))}, StopReason: llm.StopReasonStop},
		} {
			if _, err := s.Append(ctx, session.MessageEntry(m)); err != nil {
				t.Fatal(err)
			}
		}
	}
	id := s.ID()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	model := faux.New(faux.Say("ok"))
	info := model.ModelInfo()
	info.ContextWindow = 32_000
	summariser := faux.New(faux.Say("## Goal\nkeep going"))
	summariser.Repeat = true
	r, err := runner.New(runner.Config{Store: st, Compaction: &runner.CompactionSpec{Summarizer: &compact.Summarizer{Model: summariser}}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	res, err := r.Run(ctx, runner.Request{Prompt: "go on", Model: model, Info: info, Session: runner.SessionSpec{ID: id}})
	if err != nil || res.Reason != runner.ReasonStop {
		t.Fatalf("run: %v %+v", err, res)
	}
	for _, req := range summariser.Requests() {
		for _, m := range req.Messages {
			if strings.Contains(m.Text(), "turn-100 ") {
				t.Fatal("the summariser read history the snip should have left out")
			}
		}
	}
	tr, err := st.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range tr.Entries {
		switch e.Type {
		case session.EntryCustom, session.EntryCompaction:
			kinds = append(kinds, string(e.Type)+":"+e.CustomType)
		}
	}
	if d := cmp.Diff([]string{"custom:snip", "compaction:"}, kinds); d != "" {
		t.Errorf("recorded (-want +got):\n%s", d)
	}
	if reqs := model.Requests(); len(reqs) != 1 || !strings.HasPrefix(reqs[0].Messages[0].Text(), llm.SummaryPrefix) {
		t.Errorf("the model was not sent the compacted context")
	}
}

// TestSessionRecorderResumedSnip checks that a run resumed on a snipped
// context, snipping again, records a snip that joins the first one: the
// reloaded context is what the second Compactor showed.
func TestSessionRecorderResumedSnip(t *testing.T) {
	ctx := context.Background()
	st := session.NewJSONLStore(t.TempDir())
	s, err := st.Create(ctx, session.CreateOptions{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	addTurns := func(s session.Session, from, n int) {
		for i := from; i < from+n; i++ {
			for _, m := range []llm.Message{
				llm.UserText(fmt.Sprintf("turn-%03d %s", i, strings.Repeat("u", 400))),
				{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text(strings.Repeat("a", 3_600))}, StopReason: llm.StopReasonStop},
			} {
				if _, err := s.Append(ctx, session.MessageEntry(m)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	compactOnce := func(s session.Session) []llm.Message {
		history := s.Context()
		c, err := compact.New(compact.Config{Window: 32_000, Snip: compact.SnipOptions{TailTokens: 5_000},
			Recorder: &runner.SessionRecorder{Session: s, EntryIDs: func() []string { return history.EntryIDs }}})
		if err != nil {
			t.Fatal(err)
		}
		shown, err := c.TransformContext(ctx, history.Messages)
		if err != nil {
			t.Fatal(err)
		}
		return shown
	}
	addTurns(s, 0, 100)
	compactOnce(s)
	id := s.ID()
	s.Close()

	s, err = st.Open(ctx, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	addTurns(s, 100, 20)
	shown := compactOnce(s)
	s.Close()
	tr, err := st.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	snips := 0
	for _, e := range tr.Entries {
		if e.Type == session.EntryCustom && e.CustomType == session.SnipCustomType {
			snips++
		}
	}
	if snips != 2 {
		t.Fatalf("%d snip entries; want one per run", snips)
	}
	if d := cmp.Diff(shown, tr.Context("").Messages); d != "" {
		t.Errorf("reloaded context differs from the one shown (-shown +reloaded):\n%s", d)
	}
	if got := shown[2].Text(); !strings.Contains(got, "turn-115") || strings.Count(joinText(shown), "earlier messages") != 1 {
		t.Errorf("after the second snip the context reads %.200q", joinText(shown))
	}
}

func joinText(msgs []llm.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.Text())
	}
	return b.String()
}
