package runner

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/compact"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/mcp"
)

// A tool whose name a provider would refuse (an MCP name with a dot) is
// offered under its wire-safe name, called back by that name, and runs
// under its own; the history sent later uses the wire name too.
func TestRunMapsToolNames(t *testing.T) {
	const name = "mcp__docs__search.v2"
	ran := 0
	reg, err := tool.NewRegistry(&tool.Func{ToolName: name, Run: func(context.Context, tool.Call, func(tool.Partial)) (tool.Result, error) {
		ran++
		return tool.TextResult("found it"), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	wire := tool.NewNameMap([]string{name}).Wire(name)
	if wire == name || !tool.IsWireSafe(wire) {
		t.Fatalf("wire name %q", wire)
	}
	m := faux.New(faux.Func(func(_ context.Context, req *llm.Request) faux.Step {
		if len(req.Tools) != 1 || req.Tools[0].Name != wire {
			return faux.Say("tools offered: " + req.Tools[0].Name)
		}
		return faux.Call("", wire, map[string]any{})
	}), faux.Say("done"))
	res, err := testRunner(nil).runParams(t.Context(), params{Prompt: "search", Model: m, Tools: reg})
	if err != nil || !res.OK() {
		t.Fatal(err, res)
	}
	if ran != 1 {
		t.Fatalf("the tool ran %d times; messages %+v", ran, res.Messages)
	}
	if res.Messages[1].Content[0].Name != name {
		t.Errorf("the transcript names the call %q, want the tool's own name", res.Messages[1].Content[0].Name)
	}
	second := m.Requests()[1]
	if second.Messages[1].Content[0].Name != wire || second.Messages[2].ToolName != wire {
		t.Errorf("the history sent back uses %q / %q, want the wire name", second.Messages[1].Content[0].Name, second.Messages[2].ToolName)
	}
}

// An MCP server that cannot start is reported and the run goes on.
func TestRunMCPServerFailureIsAWarning(t *testing.T) {
	ev := &events{}
	cfg := mcp.Config{Servers: map[string]mcp.ServerConfig{"broken": {Command: "/nonexistent/mcp-server"}}}
	res, err := testRunner(nil).runParams(t.Context(), params{Prompt: "hi", Model: faux.New(faux.Say("hello")), ToolSources: []tool.Source{&mcp.Source{Config: cfg}}, OnEvent: ev.add})
	if err != nil || !res.OK() {
		t.Fatal(err, res)
	}
	w := ev.notices(EventWarning)
	if len(w) != 1 || !strings.Contains(w[0].Message, "MCP server broken") {
		t.Errorf("warnings %+v", w)
	}
}

// Loop detection is bound: the 10th identical call is warned, the 20th
// blocked, and the model sees both in the results it is sent.
func TestRunLoopGuardBound(t *testing.T) {
	reg, m := pollingModel(25)
	ev := &events{}
	res, err := testRunner(nil).runParams(t.Context(), params{Prompt: "wait for job 7", Model: m, Tools: reg, OnEvent: ev.add})
	if err != nil || !res.OK() {
		t.Fatal(err, res)
	}
	results := func(call int) string { // the result of the n-th call, as the next request sends it
		msgs := m.Requests()[call].Messages
		data, _ := json.Marshal(msgs[len(msgs)-1].Content)
		return string(data)
	}
	if r := results(10); strings.Contains(results(9), "WARNING") || !strings.Contains(r, "WARNING") {
		t.Errorf("9th result %s\n10th result %s", results(9), r)
	}
	if r := results(20); !strings.Contains(r, "blocked") || strings.Contains(results(19), "blocked") {
		t.Errorf("20th result %s", r)
	}
	kinds := map[string]int{}
	for _, n := range ev.notices(EventLoopDetected) {
		kinds[n.Reason]++
	}
	if kinds["warning"] == 0 || kinds["block"] == 0 {
		t.Errorf("loop detection events %v", kinds)
	}
}

// Compaction's decisions are recorded in the session, so a resumed session
// shows the model the same shortened context.
func TestRunRecordsCompactionInSession(t *testing.T) {
	store := session.NewJSONLStore(t.TempDir())
	cwd := t.TempDir()
	reg, _ := tool.NewRegistry(&tool.Func{ToolName: "dump", Run: func(_ context.Context, call tool.Call, _ func(tool.Partial)) (tool.Result, error) {
		return tool.TextResult(strings.Repeat(string(call.Args), 1500)), nil // about 20 KB
	}})
	var steps []faux.Step
	for i := range 6 {
		steps = append(steps, faux.Call("", "dump", map[string]any{"part": i}))
	}
	m := faux.New(append(steps, faux.Say("all dumped"))...)
	m.Info.ContextWindow = 32_000
	ev := &events{}
	res, err := testRunner(nil).runParams(t.Context(), params{Prompt: "dump it all", Model: m, Info: m.ModelInfo(), Tools: reg,
		Store: store, Session: SessionSpec{Cwd: cwd}, OnEvent: ev.add})
	if err != nil || !res.OK() {
		t.Fatal(err, res)
	}
	tr, err := store.Load(t.Context(), res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[session.EntryType]int{}
	for _, e := range tr.Entries {
		kinds[e.Type]++
	}
	if kinds[session.EntryToolResultTruncate]+kinds[session.EntryCompaction] == 0 {
		t.Fatalf("no compaction or truncation entries: %v", kinds)
	}
	sess, err := store.Open(t.Context(), res.SessionID, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	resumed := 0
	for _, msg := range sess.Context().Messages {
		resumed += len(msg.Text())
	}
	last := m.Requests()[len(m.Requests())-1]
	sent := 0
	for _, msg := range last.Messages {
		sent += len(msg.Text())
	}
	t.Logf("entries %v; resumed %d chars, last request %d", kinds, resumed, sent)
	if resumed > sent+len("all dumped")+100 {
		t.Errorf("the resumed context holds %d chars, the last request %d: decisions were not recorded", resumed, sent)
	}
	if err := session.CheckPairing(sess.Context().Messages); err != nil {
		t.Error(err)
	}
}

// A model whose window is too small to work in is refused before any call.
func TestRunRefusesTinyWindow(t *testing.T) {
	m := faux.New(faux.Say("hi"))
	_, err := testRunner(nil).runParams(t.Context(), params{Prompt: "hi", Model: m, Info: llm.ModelInfo{ContextWindow: 8_000}})
	if !errors.Is(err, compact.ErrWindowTooSmall) || m.Calls() != 0 {
		t.Fatalf("err %v after %d calls, want the window refused", err, m.Calls())
	}
}

// Without a hook bus, approval is still asked after loop detection: a call
// the guard refuses is never put to the user.
func TestRunLoopGuardBeforeApproval(t *testing.T) {
	reg, m := pollingModel(20)
	asked := 0
	approval := &tool.Approval{Policy: tool.ApproveAsk, Ask: func(context.Context, tool.Call, string) (tool.Answer, error) {
		asked++
		return tool.AnswerYes, nil
	}}
	res, err := testRunner(nil).runParams(t.Context(), params{Prompt: "wait for job 7", Model: m, Tools: reg, Approval: approval})
	if err != nil || !res.OK() {
		t.Fatal(err, res)
	}
	if asked != 19 {
		t.Errorf("the user was asked %d times, want 19: the 20th call is the loop guard's to refuse", asked)
	}
}

// pollingModel is a model stuck polling: n identical calls of a status tool
// that never changes its answer, then a give-up reply.
func pollingModel(n int) (*tool.Registry, *faux.Model) {
	reg, _ := tool.NewRegistry(&tool.Func{ToolName: "status", Run: func(context.Context, tool.Call, func(tool.Partial)) (tool.Result, error) {
		return tool.TextResult("still pending"), nil
	}})
	var steps []faux.Step
	for range n {
		steps = append(steps, faux.Call("", "status", map[string]any{"job": 7}))
	}
	return reg, faux.New(append(steps, faux.Say("giving up"))...)
}

// Issue 16.4: Params.ToolPolicy filters the caller's own tools as it does
// MCP tools, and an approval without a classifier is given the run's
// registry's, so a read-only tool is not asked about.
func TestRunToolPolicyAndApprovalReadOnly(t *testing.T) {
	yes := func(context.Context, tool.Call, func(tool.Partial)) (tool.Result, error) {
		return tool.TextResult("ok"), nil
	}
	reg, _ := tool.NewRegistry(
		&tool.Func{ToolName: "deploy", Run: yes},
		&tool.Func{ToolName: "status", Run: yes, Concurrent: true}, // concurrency-safe: counts as read-only
	)
	m := faux.New(faux.Call("", "status", map[string]any{}), faux.Call("", "deploy", map[string]any{}), faux.Say("done"))
	approval := &tool.Approval{Policy: tool.ApproveNever}
	res, err := testRunner(nil).runParams(t.Context(), params{Prompt: "go", Model: m, Tools: reg, Approval: approval,
		ToolPolicy: &tool.Policy{Tools: []string{"status", "deploy"}}})
	if err != nil || !res.OK() {
		t.Fatal(err, res)
	}
	reqs := m.Requests()
	if len(reqs[0].Tools) != 2 {
		t.Fatalf("offered %d tools", len(reqs[0].Tools))
	}
	msgs := reqs[len(reqs)-1].Messages
	if r := msgs[2]; r.IsError {
		t.Errorf("the read-only status call was refused: %s", r.Text())
	}
	if r := msgs[4]; !r.IsError || !strings.Contains(r.Text(), "never") {
		t.Errorf("the deploy call was not refused by the approval: %v %s", r.IsError, r.Text())
	}

	m = faux.New(faux.Say("no tools"))
	if _, err := testRunner(nil).runParams(t.Context(), params{Prompt: "go", Model: m, Tools: reg, ToolPolicy: &tool.Policy{NoTools: true}}); err != nil {
		t.Fatal(err)
	}
	if n := len(m.Requests()[0].Tools); n != 0 {
		t.Errorf("NoTools offered %d tools", n)
	}
}
