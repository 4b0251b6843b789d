package claudecode

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/agentloop/agentloop/harness"
	"github.com/agentloop/agentloop/tool"
)

// Claude Code's own calls are judged as the calls of ours they amount to:
// the tool, the fields permission rules read, and whether they only read.
func TestEquivalent(t *testing.T) {
	for _, tc := range []struct {
		name, args   string
		as, asArgs   string
		readOnly, ok bool
	}{
		{"Read", `{"file_path":"/w/.env","offset":2}`, "read", `{"offset":2,"path":"/w/.env"}`, true, true},
		{"Bash", `{"command":"ls -la","description":"list"}`, "bash", `{"command":"ls -la"}`, true, true},
		{"Bash", `{"command":"echo hi > made.txt"}`, "bash", `{"command":"echo hi > made.txt"}`, false, true},
		{"Bash", `{}`, "bash", `{}`, false, true},
		{"Monitor", `{"description":"d","timeout_ms":5000,"command":"rm -rf x"}`, "bash", `{"command":"rm -rf x"}`, false, true},
		{"Monitor", `{"description":"d","timeout_ms":5000,"command":"tail -f log"}`, "bash", `{"command":"tail -f log"}`, true, true},
		{"Write", `{"file_path":"/w/a","content":"x"}`, "write", `{"content":"x","path":"/w/a"}`, false, true},
		{"Edit", `{"file_path":"/w/a","old_string":"a","new_string":"b"}`, "edit", `{"path":"/w/a"}`, false, true},
		{"Glob", `{"pattern":"**/*.go","path":"/w"}`, "find", `{"path":"/w","pattern":"**/*.go"}`, true, true},
		{"Grep", `{"pattern":"x","path":"src","output_mode":"content"}`, "grep", `{"path":"src","pattern":"x"}`, true, true},
		{"LS", `{"path":"/w"}`, "ls", `{"path":"/w"}`, true, true},
		{"TodoWrite", `{"todos":[]}`, "TodoWrite", `{"todos":[]}`, true, true},
		{"Read", `"not an object"`, "read", `{}`, true, true},
		{"WebFetch", `{"url":"https://example.com"}`, "", "", false, false},
		{"mcp__fs__read_file", `{"path":"a"}`, "", "", false, false},
	} {
		as, ro, ok := equivalent(tool.Call{ID: "c", Name: tc.name, Args: json.RawMessage(tc.args)})
		if ok != tc.ok || ro != tc.readOnly || as.Name != tc.as || ok && (!sameJSON(as.Args, tc.asArgs) || as.ID != "c") {
			t.Errorf("%s %s: %s %s (read-only %v, ok %v), want %s %s (%v, %v)", tc.name, tc.args, as.Name, as.Args, ro, ok, tc.as, tc.asArgs, tc.readOnly, tc.ok)
		}
	}
}

// The flag settings make every call ask and turn Claude Code's own hooks
// off, and they are on every attempt's command line.
func TestFlagSettings(t *testing.T) {
	var s struct {
		Permissions struct {
			Ask []string `json:"ask"`
		} `json:"permissions"`
		DisableAllHooks bool `json:"disableAllHooks"`
	}
	if err := json.Unmarshal([]byte(flagSettings), &s); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Permissions.Ask, []string{"*"}) || !s.DisableAllHooks {
		t.Errorf("flag settings %s", flagSettings)
	}
	if a := settingsArgs(); len(a) != 2 || a[0] != "--settings" || a[1] != flagSettings {
		t.Errorf("settings args %q", a)
	}
}

func sameJSON(a json.RawMessage, b string) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
}

// The tools whose arguments are renamed for our approval have a
// counterpart in the harness's one table, which --tools is built from
// too: the two can never disagree about what Claude Code's tool is.
func TestNativesHaveCounterparts(t *testing.T) {
	for _, n := range natives {
		if n.fields != nil && harness.ClaudeCodeTool(n.name).Tool == "" {
			t.Errorf("%s maps fields but harness.ClaudeCodeTool knows no counterpart of it", n.name)
		}
	}
}
