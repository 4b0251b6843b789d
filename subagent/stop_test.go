package subagent

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/runner"
)

// agent_stop on a depth-1 orchestrator (MaxDepth 2) stops its own
// background child first; both report cancelled, the orchestrator's
// notification names the child it stopped, and nothing is left running.
func TestStopCascadesOverTwoLevels(t *testing.T) {
	never := make(chan struct{})
	child := script(func(req *llm.Request) faux.Step {
		if strings.Contains(req.SystemPrompt, "(depth 2/2)") {
			return faux.Say("grandchild never ends").WithHold(never)
		}
		if toolResults(req) == 0 {
			return faux.Call("", ToolAgent, agentArgs("grandchild", "dig deeper", true))
		}
		return faux.Call("", "block", map[string]any{})
	})
	var e *env
	parent := script(func(req *llm.Request) faux.Step {
		switch {
		case hasNotification(req):
			return faux.Say("the orchestrator was stopped")
		case toolResults(req) == 0:
			return faux.Call("", ToolAgent, agentArgs("orchestrate", "split the work", true))
		case toolResults(req) == 1:
			// Stop the orchestrator once its grandchild runs.
			waitFor(t, "two live tasks", func() bool { return len(e.m.Live()) == 2 })
			ids := taskIDOf(t, req.Messages)
			return faux.Call("", ToolStop, map[string]any{"taskId": ids[0]})
		}
		return faux.Say("waiting for the notification")
	})
	e = newEnv(t, parent, child, nil, func(c *Config) { c.MaxDepth = 2 }, blockTool())
	res := e.run(parent, "go", runner.SessionSpec{})
	e.m.Wait()
	if !res.OK() {
		t.Fatal(res.Reason, res.Err)
	}
	if len(e.m.Live()) != 0 {
		t.Fatalf("tasks still live: %v", e.m.Live())
	}
	ids := taskIDOf(t, res.Messages)
	orch := ids[0]
	var grand string
	for _, c := range e.childEvents(string(runner.EventSubagentStart)) {
		grand = c.ev.Subagent.TaskID // on the orchestrator's own stream
	}
	if grand == "" {
		t.Fatal("the orchestrator started no child")
	}
	stopText := ""
	for _, m := range res.Messages {
		if m.Role == llm.RoleToolResult && m.ToolName == ToolStop {
			stopText = m.Text()
		}
	}
	if !strings.Contains(stopText, "stopped (cancelled)") || !strings.Contains(stopText, grand) {
		t.Fatalf("agent_stop said %q", stopText)
	}
	// The grandchild's run ended before the orchestrator's.
	var order []string
	for _, c := range e.childEvents(string(runner.EventRunEnd)) {
		if c.task.ID == orch || c.task.ID == grand {
			order = append(order, c.task.ID)
		}
	}
	if len(order) != 2 || order[0] != grand {
		t.Fatalf("run_end order %v, want the grandchild %s first", order, grand)
	}
	tr := e.load(res.SessionID)
	var rec ResultRecord
	for _, en := range tr.Entries {
		if en.CustomType == ResultType {
			_ = json.Unmarshal(en.Data, &rec)
		}
	}
	if rec.Status != StatusCancelled || len(rec.Stopped) != 1 || rec.Stopped[0] != grand || countNotifications(tr, orch) != 1 {
		t.Fatalf("orchestrator's result %+v, %d notifications", rec, countNotifications(tr, orch))
	}
	// The grandchild's cancelled result is in the orchestrator's session.
	var orchSession string
	for _, c := range e.childEvents(string(runner.EventRunEnd)) {
		if c.task.ID == orch {
			orchSession = c.task.SessionID
		}
	}
	otr := e.load(orchSession)
	grec := ResultRecord{}
	for _, en := range otr.Entries {
		if en.CustomType == ResultType {
			_ = json.Unmarshal(en.Data, &grec)
		}
	}
	if grec.TaskID != grand || grec.Status != StatusCancelled || countCustom(otr, ResultType) != 1 {
		t.Fatalf("grandchild's result in the orchestrator's session: %+v", grec)
	}
	checkPairing(t, messages(tr))
	checkPairing(t, messages(otr))
}
