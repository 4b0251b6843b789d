package runner

import (
	"context"
	"errors"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/tool"
)

type readOnlyTool struct{ tool.Tool }

func (readOnlyTool) ReadOnly() bool { return true }

// Request.BeforeTool sees each call just before it runs, with whether it
// only reads and the run's Scope: an entry it appends lands between the
// call and its result, and an error it returns refuses the call.
func TestBeforeTool(t *testing.T) {
	store := session.NewJSONLStore(t.TempDir())
	r := testRunner(&Config{Store: store})
	defer r.Close()
	ran := map[string]int{}
	mk := func(name string) tool.Tool {
		return tool.New(name, name, func(ctx context.Context, _ struct{}, _ func(tool.Partial)) (tool.Result, error) {
			ran[name]++
			return tool.TextResult("ok"), nil
		})
	}
	reg, _ := tool.NewRegistry(mk("write"), readOnlyTool{mk("look")}, mk("refused"))
	m := faux.New(faux.Call("", "write", map[string]any{}), faux.Call("", "look", map[string]any{}),
		faux.Call("", "refused", map[string]any{}), faux.Say("done"))
	seen := map[string]bool{}
	res, err := r.Run(context.Background(), Request{Prompt: "go", Model: m, Info: m.ModelInfo(), Tools: reg,
		BeforeTool: func(ctx context.Context, call tool.Call, readOnly bool, sc *Scope) error {
			seen[call.Name] = readOnly
			if call.Name == "refused" {
				return errors.New("the lease is lost")
			}
			_, err := sc.Append(ctx, session.CustomEntry("started", []byte(`{"call":"`+call.ID+`"}`)))
			return err
		}})
	if err != nil || !res.OK() {
		t.Fatal(res.Reason, err)
	}
	if len(seen) != 3 || seen["write"] || !seen["look"] || ran["write"] != 1 || ran["look"] != 1 || ran["refused"] != 0 {
		t.Fatalf("seen %v, ran %v", seen, ran)
	}
	tr, err := store.Load(context.Background(), res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	path := tr.Path(tr.Leaf)
	started := 0
	for i, e := range path {
		if e.Type != session.EntryCustom || e.CustomType != "started" {
			continue
		}
		started++
		prev, next := path[i-1].Message, path[i+1].Message
		if prev == nil || prev.Role != llm.RoleAssistant || next == nil || next.Role != llm.RoleToolResult {
			t.Fatalf("the started entry is not between a call and its result: %+v / %+v", prev, next)
		}
	}
	if started != 2 {
		t.Fatalf("%d started entries, want 2 (write, look)", started)
	}
	var refused *llm.Message
	for _, e := range path {
		if e.Message != nil && e.Message.Role == llm.RoleToolResult && e.Message.ToolName == "refused" {
			refused = e.Message
		}
	}
	if refused == nil || !refused.IsError || refused.Text() != "The call was not run: the lease is lost" {
		t.Fatalf("the refused call's result: %+v", refused)
	}
}
