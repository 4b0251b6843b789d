package runner

import (
	"context"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/tool"
)

// A tool call reaches its run through ScopeOf: the session id, custom
// entries (messages are refused: they must be steered in), and events on
// the run's stream, never after run_end.
func TestScopeOfToolCall(t *testing.T) {
	store := session.NewJSONLStore(t.TempDir())
	r := testRunner(&Config{Store: store})
	defer r.Close()
	var scope *Scope
	probe := tool.New("probe", "probe", func(ctx context.Context, _ struct{}, _ func(tool.Partial)) (tool.Result, error) {
		scope = ScopeOf(ctx)
		if _, err := scope.Append(ctx, session.MessageEntry(llm.UserText("sneaky"))); err == nil {
			t.Error("Scope.Append took a message")
		}
		if _, err := scope.Append(ctx, session.CustomEntry("probe", []byte(`{"n":1}`))); err != nil {
			t.Error(err)
		}
		if !scope.Emit(Subagent{TaskID: "t_1", Agent: "general"}) {
			t.Error("Emit refused during the run")
		}
		return tool.TextResult("ok"), nil
	})
	reg, _ := tool.NewRegistry(probe)
	m := faux.New(faux.Call("", "probe", map[string]any{}), faux.Say("done"))
	var types []string
	res, err := r.Run(context.Background(), Request{Prompt: "go", Model: m, Info: m.ModelInfo(), Tools: reg,
		OnEvent: func(ev Event) { types = append(types, string(ev.Type)) }})
	if err != nil || !res.OK() {
		t.Fatal(res.Reason, err)
	}
	if scope == nil || scope.SessionID() != res.SessionID || ScopeOf(context.Background()) != nil {
		t.Fatal("no scope, or the wrong one")
	}
	found := false
	for _, ty := range types {
		found = found || ty == string(EventSubagentStart)
	}
	if !found || types[len(types)-1] != string(EventRunEnd) {
		t.Fatalf("events %v", types)
	}
	if scope.Emit(Subagent{TaskID: "t_1", Status: "completed"}) {
		t.Fatal("Emit sent an event after run_end")
	}
	tr, _ := store.Load(context.Background(), res.SessionID)
	n := 0
	for _, e := range tr.Entries {
		if e.CustomType == "probe" {
			n++
		}
		if e.Message != nil && e.Message.Text() == "sneaky" {
			t.Fatal("the refused message was written")
		}
	}
	if n != 1 {
		t.Fatalf("%d probe entries", n)
	}
}

// Resume runs from the session as it is: the caller appended the last
// user message, and the run adds no prompt of its own.
func TestResumeAddsNoPrompt(t *testing.T) {
	store := session.NewJSONLStore(t.TempDir())
	ctx := context.Background()
	sess, err := store.Create(ctx, session.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Append(ctx, session.MessageEntry(llm.UserText("delivered notification"))); err != nil {
		t.Fatal(err)
	}
	id := sess.ID()
	sess.Close()
	r := testRunner(&Config{Store: store})
	defer r.Close()
	m := faux.New(faux.Say("read it"))
	res, err := r.Run(ctx, Request{Resume: true, Prompt: "ignored", Model: m, Info: m.ModelInfo(), Session: SessionSpec{ID: id}})
	if err != nil || !res.OK() {
		t.Fatal(res.Reason, err)
	}
	req := m.Requests()[0]
	if len(req.Messages) != 1 || req.Messages[0].Text() != "delivered notification" {
		t.Fatalf("the model got %d messages: %v", len(req.Messages), req.Messages)
	}
	tr, _ := store.Load(ctx, id)
	users := 0
	for _, e := range tr.Entries {
		if e.Message != nil && e.Message.Role == llm.RoleUser {
			users++
		}
	}
	if users != 1 {
		t.Fatalf("%d user messages in the session, want 1", users)
	}
}
