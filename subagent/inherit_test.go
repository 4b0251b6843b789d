package subagent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentloop/agentloop/hook"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/tool"
)

// touchTool changes something: its calls need approval.
func touchTool() tool.Tool {
	return tool.New("touch", "touch a file", func(ctx context.Context, in struct {
		Path string `json:"path"`
	}, _ func(tool.Partial)) (tool.Result, error) {
		return tool.TextResult("touched " + in.Path), nil
	})
}

// A child's calls are decided by the parent's approval policy and asked
// of the parent's asker, with the task named on the call's context.
func TestChildApprovalReachesParentAsker(t *testing.T) {
	child := script(func(req *llm.Request) faux.Step {
		if toolResults(req) == 0 {
			return faux.Call("", "touch", map[string]any{"path": "x"})
		}
		return faux.Say("child: " + req.Messages[len(req.Messages)-1].Text())
	})
	parent := script(func(req *llm.Request) faux.Step {
		if toolResults(req) == 0 {
			return faux.Call("", ToolAgent, agentArgs("touch it", "touch x", false))
		}
		return faux.Say("done")
	})
	e := newEnv(t, parent, child, nil, nil, touchTool())
	var mu sync.Mutex
	var asked []tool.Origin
	var askedSession string
	q := e.request(parent, "go", runner.SessionSpec{})
	q.Approval = &tool.Approval{Policy: tool.ApproveAsk, Ask: func(ctx context.Context, call tool.Call, _ string) (tool.Answer, error) {
		mu.Lock()
		defer mu.Unlock()
		if call.Name == "touch" {
			o, _ := tool.OriginOf(ctx)
			asked = append(asked, o)
			askedSession = runner.ScopeOf(ctx).SessionID()
		}
		return tool.AnswerYes, nil
	}}
	res, err := e.r.Run(context.Background(), q)
	if err != nil || !res.OK() {
		t.Fatal(res.Reason, err)
	}
	var d details
	for _, m := range res.Messages {
		if m.Role == llm.RoleToolResult && m.ToolName == ToolAgent {
			_ = json.Unmarshal(m.Details, &d)
		}
	}
	if len(asked) != 1 || asked[0].TaskID != d.TaskID || asked[0].Agent != GeneralAgent || asked[0].ParentToolCallID == "" || askedSession != d.ChildSessionID {
		t.Fatalf("asked %+v in session %s; task %+v", asked, askedSession, d)
	}
	if !strings.Contains(res.Messages[len(res.Messages)-2].Text(), "touched x") {
		t.Fatalf("the approved call did not run: %s", res.Messages[len(res.Messages)-2].Text())
	}
}

// SubagentStart and SubagentStop command hooks (Claude Code's format, in
// the user's settings) run on the parent's bus with Claude's fields.
func TestSubagentHooksGetClaudeFields(t *testing.T) {
	home := t.TempDir()
	log := filepath.Join(home, "hooks.log")
	settings := map[string]any{"hooks": map[string]any{
		"SubagentStart": []any{map[string]any{"matcher": "general", "hooks": []any{map[string]any{"type": "command", "command": "cat >> " + log + "; echo >> " + log}}}},
		"SubagentStop":  []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": "cat >> " + log + "; echo >> " + log}}}},
	}}
	b, _ := json.Marshal(settings)
	if err := os.WriteFile(filepath.Join(home, "settings.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	child := script(func(req *llm.Request) faux.Step { return faux.Say("hooked child") })
	parent := script(func(req *llm.Request) faux.Step {
		if toolResults(req) == 0 {
			return faux.Call("", ToolAgent, agentArgs("hooked", "go", false))
		}
		return faux.Say("done")
	})
	e := newEnvRunner(t, parent, child, runner.Config{Hooks: &hook.LoadOptions{Home: home, Workspace: home}}, nil)
	res := e.run(parent, "go", runner.SessionSpec{})
	if !res.OK() {
		t.Fatal(res.Reason, res.Err)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var events []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if l == "" {
			continue
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("hook input %q: %v", l, err)
		}
		events = append(events, v)
	}
	if len(events) != 2 {
		t.Fatalf("%d hook inputs: %s", len(events), data)
	}
	start, stop := events[0], events[1]
	if start["hook_event_name"] != "SubagentStart" || !strings.HasPrefix(start["agent_id"].(string), "t_") || start["agent_type"] != "general" || start["session_id"] != res.SessionID {
		t.Fatalf("SubagentStart input %v", start)
	}
	if stop["hook_event_name"] != "SubagentStop" || stop["agent_id"] != start["agent_id"] || stop["stop_hook_active"] != false ||
		stop["last_assistant_message"] != "hooked child" || !strings.HasSuffix(stop["agent_transcript_path"].(string), ".jsonl") {
		t.Fatalf("SubagentStop input %v", stop)
	}
}
