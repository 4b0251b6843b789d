package hook

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agentloop/agentloop/tool"
)

// FuzzInterpret feeds arbitrary hook output to the reader: it never
// panics, exit codes other than 0 and 2 never change anything, and only
// events that can block do.
func FuzzInterpret(f *testing.F) {
	for _, s := range []string{
		``, `plain`, `{"continue":false}`, `{"decision":"block","reason":"r"}`,
		`{"hookSpecificOutput":{"permissionDecision":"deny","updatedInput":{"a":1}}}`,
		`{"hookSpecificOutput":null}`, `{"continue":"no"}`, `[1,2]`, `{"decision":7}`,
	} {
		for _, code := range []int{0, 1, 2} {
			f.Add(EventPreToolUse, code, s, "err")
			f.Add(EventStop, code, s, "")
		}
	}
	f.Fuzz(func(t *testing.T, event string, code int, stdout, stderr string) {
		v := interpret(event, code, stdout, stderr)
		if code != 0 && code != 2 && !reflect.DeepEqual(v, verdict{failed: true}) {
			t.Fatalf("exit %d changed something: %+v", code, v)
		}
		if v.block {
			switch event {
			case EventPreToolUse, EventStop, EventUserPromptSubmit:
			default:
				t.Fatalf("%s blocked", event)
			}
		}
	})
}

// FuzzTwin maps arbitrary arguments to the Claude Code names and back.
func FuzzTwin(f *testing.F) {
	for _, s := range []string{`{}`, `{"path":"a","edits":[{"oldText":"x","newText":"y"}]}`, `{"command":"ls"}`, `null`, `[`, `{"edits":"[{"}`} {
		for _, n := range []string{"bash", "read", "edit", "grep", "find", "write", "other"} {
			f.Add(n, s, `{"file_path":"/w/b","old_string":"z","command":"pwd"}`)
		}
	}
	f.Fuzz(func(t *testing.T, name, args, updated string) {
		call := tool.Call{Name: name, Args: json.RawMessage(args)}
		_, in := twin(call, "/w")
		if !json.Valid(in) {
			t.Fatalf("twin gave invalid JSON %q", in)
		}
		if out := untwin(call, json.RawMessage(updated), "/w"); out != nil && !json.Valid(out) {
			t.Fatalf("untwin gave invalid JSON %q", out)
		}
	})
}
