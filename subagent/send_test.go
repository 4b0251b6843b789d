package subagent

import (
	"strings"
	"sync"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/runner"
)

// agent_send steers a running background child: it reads the message at
// its next turn boundary. A task the session did not start, or one that
// is not running, is refused.
func TestSendSteersRunningChild(t *testing.T) {
	hold := make(chan struct{})
	var once sync.Once
	child := script(func(req *llm.Request) faux.Step {
		if strings.Contains(lastUserText(req), "banana") {
			return faux.Say("banana!")
		}
		return faux.Say("first").WithHold(hold)
	})
	parent := script(func(req *llm.Request) faux.Step {
		switch toolResults(req) {
		case 0:
			return faux.Call("", ToolAgent, agentArgs("fruit", "name a fruit", true))
		case 1:
			waitFor(t, "the child to stream", func() bool { return child.Calls() > 0 })
			return faux.Reply(faux.ToolCall(ToolSend, map[string]any{"taskId": taskIDOf(t, req.Messages)[0], "message": "say banana"}),
				faux.ToolCall(ToolSend, map[string]any{"taskId": "t_nope", "message": "x"}))
		}
		once.Do(func() { close(hold) })
		return faux.Say("sent")
	})
	e := newEnv(t, parent, child, nil, nil)
	res := e.run(parent, "go", runner.SessionSpec{})
	e.m.Wait()
	var sent, refused string
	for _, m := range res.Messages {
		if m.Role == llm.RoleToolResult && m.ToolName == ToolSend {
			if m.IsError {
				refused = m.Text()
			} else {
				sent = m.Text()
			}
		}
	}
	if !strings.HasPrefix(sent, "sent to task t_") || !strings.Contains(refused, `no running task "t_nope"`) {
		t.Fatalf("send %q, refusal %q", sent, refused)
	}
	var rec ResultRecord
	tr := e.load(res.SessionID)
	for id, r := range readLedger(tr).results {
		_ = id
		rec = r
	}
	if rec.Status != StatusCompleted || rec.Result != "banana!" {
		t.Fatalf("the child did not read the steer: %+v", rec)
	}
}
