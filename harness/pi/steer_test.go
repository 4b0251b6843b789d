package pi

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/harness"
	"github.com/agentloop/agentloop/llm"
)

// steeredPi is a pi in rpc mode that answers, takes one steer line, and
// then either delivers it (echoes it as a user message, as pi does at its
// next model call) or ends its run without it (a steer that came after
// pi's last check of its queue).
const steeredPi = `#!/bin/sh
read start; read prompt
echo '{"type":"response","id":"start","command":"get_state","success":true,"data":{"sessionFile":"/nonexistent/s.jsonl"}}'
echo '{"type":"message_end","message":{"role":"user","content":[{"type":"text","text":"go"}],"timestamp":1}}'
echo '{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"working"}],"stopReason":"stop","timestamp":2}}'
read steer
if [ "$DELIVER" = 1 ]; then
  echo '{"type":"message_end","message":{"role":"user","content":[{"type":"text","text":"and the docs"}],"timestamp":3}}'
  echo '{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"docs too"}],"stopReason":"stop","timestamp":4}}'
fi
echo '{"type":"agent_end"}'
read state
echo '{"type":"response","id":"state","command":"get_state","success":true,"data":{"sessionFile":"/nonexistent/s.jsonl"}}'
`

// A steer pi took but never delivered (its run ended first) is not lost
// silently: the attempt warns that it was not delivered. One pi delivered
// is mirrored and not warned about; after agent_end a steer is refused.
func TestSteerNotDeliveredIsWarned(t *testing.T) {
	for _, deliver := range []bool{false, true} {
		dir := t.TempDir()
		bin := filepath.Join(dir, "pi")
		if err := os.WriteFile(bin, []byte(steeredPi), 0o755); err != nil {
			t.Fatal(err)
		}
		env := os.Environ()
		if deliver {
			env = append(env, "DELIVER=1")
		}
		var steer func(llm.Message) bool
		var warnings []string
		var sent, late bool
		a := &harness.Attempt{RunID: "r1", Prompt: llm.UserText("go"), Cwd: dir,
			SetSteer: func(d func(llm.Message) bool) {
				if d == nil && steer != nil {
					late = steer(llm.UserText("too late"))
				}
				steer = d
			},
			Warn: func(m string) { warnings = append(warnings, m) },
			Emit: func(ev agent.Event) {
				if ev.Type == agent.EventMessageEnd && ev.Message.Text() == "working" {
					sent = steer(llm.UserText("and the docs"))
				}
			}}
		res, err := New(&Config{Command: bin, Env: env}).RunAttempt(context.Background(), a)
		if err != nil || res.Err != nil {
			t.Fatalf("deliver=%v: %v %v", deliver, err, res.Err)
		}
		if !sent {
			t.Fatalf("deliver=%v: the steer was not taken", deliver)
		}
		if late {
			t.Errorf("deliver=%v: a steer after pi's run ended was taken", deliver)
		}
		warned := len(warnings) == 1 && strings.Contains(warnings[0], "not delivered") && strings.Contains(warnings[0], "and the docs")
		if deliver == warned {
			t.Errorf("deliver=%v: warnings %q", deliver, warnings)
		}
	}
}
