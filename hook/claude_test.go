package hook

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/tool"
)

func TestInterpretExitCodes(t *testing.T) {
	tests := []struct {
		name   string
		event  string
		code   int
		stdout string
		stderr string
		want   verdict
	}{
		// Exit 0 passes.
		{"pre 0 silent", EventPreToolUse, 0, "", "", verdict{}},
		{"pre 0 plain stdout is ignored", EventPreToolUse, 0, "checked", "", verdict{}},
		{"prompt 0 stdout is context", EventUserPromptSubmit, 0, "  today is Monday\n", "", verdict{context: "today is Monday"}},
		{"session start 0 stdout is context", EventSessionStart, 0, "branch main\n", "", verdict{context: "branch main"}},
		{"stop 0 stdout ignored", EventStop, 0, "done", "", verdict{}},
		{"post 0 stdout ignored", EventPostToolUse, 0, "formatted", "", verdict{}},
		// Exit 2 blocks where the event can.
		{"pre 2 blocks, stderr to model", EventPreToolUse, 2, `{"decision":"approve"}`, "no rm -rf\n", verdict{block: true, feedback: "no rm -rf"}},
		{"post 2 stderr to model", EventPostToolUse, 2, "", "lint: 3 errors", verdict{feedback: "lint: 3 errors"}},
		{"prompt 2 refuses, stderr to user", EventUserPromptSubmit, 2, "", "no secrets", verdict{block: true, user: "no secrets"}},
		{"stop 2 continues, stderr to model", EventStop, 2, "", "tests fail", verdict{block: true, feedback: "tests fail"}},
		{"session start 2 to user only", EventSessionStart, 2, "ctx", "oops", verdict{user: "oops"}},
		{"pre compact 2 to user only", EventPreCompact, 2, "", "not now", verdict{user: "not now"}},
		{"session end 2 to user only", EventSessionEnd, 2, "", "bye", verdict{user: "bye"}},
		// Other codes are reported and ignored.
		{"pre 1 is not a block", EventPreToolUse, 1, "", "Blocked!", verdict{failed: true}},
		{"stop 127", EventStop, 127, "", "not found", verdict{failed: true}},
		{"killed", EventPreToolUse, -1, "", "", verdict{failed: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := interpret(tt.event, tt.code, tt.stdout, tt.stderr)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(verdict{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestInterpretJSON(t *testing.T) {
	tests := []struct {
		name   string
		event  string
		stdout string
		want   verdict
	}{
		{"deny", EventPreToolUse,
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"use trash, not rm"}}`,
			verdict{block: true, feedback: "use trash, not rm"}},
		{"allow", EventPreToolUse,
			`{"hookSpecificOutput":{"permissionDecision":"allow","permissionDecisionReason":"safe"}}`,
			verdict{permission: PermissionAllow, permReason: "safe"}},
		{"ask", EventPreToolUse,
			`{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"touches prod"}}`,
			verdict{permission: PermissionAsk, permReason: "touches prod"}},
		{"updated input", EventPreToolUse,
			`{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"command":"ls -la"}}}`,
			verdict{permission: PermissionAllow, updated: json.RawMessage(`{"command":"ls -la"}`)}},
		{"legacy block", EventPreToolUse, `{"decision":"block","reason":"legacy no"}`, verdict{block: true, feedback: "legacy no"}},
		{"legacy approve", EventPreToolUse, `{"decision":"approve","reason":"fine"}`, verdict{permission: PermissionAllow, permReason: "fine"}},
		{"new fields beat legacy", EventPreToolUse,
			`{"decision":"approve","hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"no"}}`,
			verdict{block: true, feedback: "no"}},
		{"continue false halts", EventPreToolUse, `{"continue":false,"stopReason":"budget spent"}`, verdict{halt: "budget spent"}},
		{"continue false without reason", EventStop, `{"continue":false}`, verdict{halt: "A Stop hook stopped the run."}},
		{"continue true is nothing", EventStop, `{"continue":true}`, verdict{}},
		{"system message to user", EventPostToolUse, `{"systemMessage":"formatted 2 files"}`, verdict{user: "formatted 2 files"}},
		{"post block reason to model", EventPostToolUse, `{"decision":"block","reason":"fix the lint"}`, verdict{feedback: "fix the lint"}},
		{"post additional context", EventPostToolUse, `{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"file is generated"}}`,
			verdict{context: "file is generated"}},
		{"prompt block reason to user", EventUserPromptSubmit, `{"decision":"block","reason":"contains a key"}`, verdict{block: true, user: "contains a key"}},
		{"prompt context", EventUserPromptSubmit, `{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"sprint 4"}}`,
			verdict{context: "sprint 4"}},
		{"stop block continues", EventStop, `{"decision":"block","reason":"run the tests first"}`, verdict{block: true, feedback: "run the tests first"}},
		{"stop undefined decision stops", EventStop, `{"reason":"ignored"}`, verdict{}},
		{"session start context", EventSessionStart, `{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"3 open issues"}}`,
			verdict{context: "3 open issues"}},
		{"invalid JSON is plain text", EventUserPromptSubmit, `{not json`, verdict{context: "{not json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := interpret(tt.event, 0, tt.stdout, "")
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(verdict{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestTwin(t *testing.T) {
	tests := []struct {
		name, tool, args string
		wantName         string
		wantInput        string
	}{
		{"bash", "bash", `{"command":"rm -rf /","timeout":5}`, "Bash", `{"command":"rm -rf /"}`},
		{"read relative", "read", `{"path":"a/b.go","offset":3,"limit":10}`, "Read", `{"file_path":"/ws/a/b.go","limit":10,"offset":3}`},
		{"read absolute", "read", `{"path":"/etc/hosts"}`, "Read", `{"file_path":"/etc/hosts"}`},
		{"write", "write", `{"path":"x.txt","content":"hi"}`, "Write", `{"content":"hi","file_path":"/ws/x.txt"}`},
		{"edit edits", "edit", `{"path":"x","edits":[{"oldText":"a","newText":"b"},{"oldText":"c","newText":"d"}]}`, "Edit",
			`{"file_path":"/ws/x","new_string":"b","old_string":"a"}`},
		{"edit legacy", "edit", `{"path":"x","oldText":"a","newText":"b"}`, "Edit", `{"file_path":"/ws/x","new_string":"b","old_string":"a"}`},
		{"edit string edits", "edit", `{"path":"x","edits":"[{\"oldText\":\"a\",\"newText\":\"b\"}]"}`, "Edit", `{"file_path":"/ws/x","new_string":"b","old_string":"a"}`},
		{"grep", "grep", `{"pattern":"TODO","path":"src","glob":"*.go","ignoreCase":true}`, "Grep", `{"glob":"*.go","path":"src","pattern":"TODO"}`},
		{"find", "find", `{"pattern":"**/*.md","limit":3}`, "Glob", `{"pattern":"**/*.md"}`},
		{"no twin", "mcp__gh__list", `{"repo":"x"}`, "mcp__gh__list", `{"repo":"x"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name, in := twin(tool.Call{Name: tt.tool, Args: json.RawMessage(tt.args)}, "/ws")
			if name != tt.wantName || string(in) != tt.wantInput {
				t.Errorf("twin = %s %s, want %s %s", name, in, tt.wantName, tt.wantInput)
			}
		})
	}
}

func TestUntwin(t *testing.T) {
	tests := []struct {
		name, tool, args, updated, want string
	}{
		{"bash keeps timeout", "bash", `{"command":"rm -rf /","timeout":5}`, `{"command":"echo no"}`, `{"command":"echo no","timeout":5}`},
		{"read keeps the relative path when unchanged", "read", `{"path":"a.go"}`, `{"file_path":"/ws/a.go","limit":5}`, `{"limit":5,"path":"a.go"}`},
		{"read path changed", "read", `{"path":"a.go"}`, `{"file_path":"/ws/b.go"}`, `{"path":"/ws/b.go"}`},
		{"edit first edit replaced, others kept", "edit", `{"path":"x","edits":[{"oldText":"a","newText":"b"},{"oldText":"c","newText":"d"}]}`,
			`{"file_path":"/ws/x","old_string":"a","new_string":"B"}`,
			`{"edits":[{"newText":"B","oldText":"a"},{"newText":"d","oldText":"c"}],"path":"x"}`},
		{"edit legacy becomes edits", "edit", `{"path":"x","oldText":"a","newText":"b"}`, `{"file_path":"/ws/x","old_string":"A","new_string":"b"}`,
			`{"edits":[{"newText":"b","oldText":"A"}],"path":"x"}`},
		{"no twin replaces", "other", `{"a":1,"b":2}`, `{"a":3}`, `{"a":3}`},
		{"not an object", "bash", `{"command":"x"}`, `"nope"`, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := untwin(tool.Call{Name: tt.tool, Args: json.RawMessage(tt.args)}, json.RawMessage(tt.updated), "/ws")
			if string(got) != tt.want {
				t.Errorf("untwin = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestMatcher(t *testing.T) {
	tests := []struct {
		matcher string
		names   []string
		want    bool
	}{
		{"", []string{"Bash"}, true},
		{"*", []string{"anything"}, true},
		{"Bash", []string{"Bash", "bash"}, true},
		{"bash", []string{"Bash", "bash"}, true}, // our own name matches too
		{"Bash", []string{"Read", "read"}, false},
		{"Write", []string{"TodoWrite"}, false}, // anchored
		{"Edit|Write", []string{"Write", "write"}, true},
		{"Edit|Write", []string{"Bash", "bash"}, false},
		{"mcp__.*", []string{"mcp__github__list"}, true},
		{"Notebook.*", []string{"Read"}, false},
	}
	for _, tt := range tests {
		re, err := compileMatcher(tt.matcher)
		if err != nil {
			t.Fatal(err)
		}
		h := &ShellHook{re: re}
		if got := h.matches(tt.names...); got != tt.want {
			t.Errorf("matcher %q over %v = %v, want %v", tt.matcher, tt.names, got, tt.want)
		}
	}
	if _, err := compileMatcher("Bash("); err == nil {
		t.Error("a broken matcher compiled")
	}
}
