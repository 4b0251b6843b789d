package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/hook"
)

// writePostHooks writes a project settings file in Claude Code's format:
// the rm -rf guard of writeGuard as PreToolUse, and PostToolUse and
// PostToolUseFailure scripts that log each firing (event, tool_use_id and
// error) to post.log beside the workspace and tell the model they ran.
func writePostHooks(t *testing.T, ws, log string) {
	t.Helper()
	guard := `cmd=$(jq -r '.tool_input.command'); case "$cmd" in *"rm -rf"*) echo "destructive command refused by policy: $cmd" >&2; exit 2;; esac; exit 0`
	post := `in=$(cat); echo "$(printf '%s' "$in" | jq -r '[.hook_event_name, .tool_use_id, (.error // "")] | join(" ")')" >> ` + log +
		`; echo "$(printf '%s' "$in" | jq -r .hook_event_name) hook saw the call" >&2; exit 2`
	entry := func(cmd string) []any {
		return []any{map[string]any{"matcher": "Bash", "hooks": []any{map[string]any{"type": "command", "command": cmd}}}}
	}
	settings, _ := json.Marshal(map[string]any{"hooks": map[string]any{
		"PreToolUse": entry(guard), "PostToolUse": entry(post), "PostToolUseFailure": entry(post)}})
	writeFile(t, filepath.Join(ws, ".agentloop", "settings.json"), string(settings))
}

// Issue 16.5: with real hook scripts, PostToolUse fires only after a call
// that ran and succeeded, PostToolUseFailure only after one that ran and
// failed; a call refused by a PreToolUse hook, by the approval or by loop
// detection fires neither, and the model never reads their feedback for it.
func TestE2EPostToolUseOnlyAfterTheToolRan(t *testing.T) {
	tests := []struct {
		name       string
		mock       []string
		args       []string
		post, fail int // firings of each event
		code       int
	}{
		{name: "ran and succeeded", mock: []string{"-rounds", "1", "-cmd", "echo hi"}, post: 1},
		{name: "ran and failed", mock: []string{"-rounds", "1", "-cmd", "echo oops >&2; exit 3"}, fail: 1},
		{name: "refused by PreToolUse", mock: []string{"-rounds", "1", "-cmd", "rm -rf build"}},
		{name: "refused by the approval", mock: []string{"-rounds", "1", "-cmd", "touch made"}, args: []string{"--approve", "never"}},
		// Calls 1-19 run, 20 and 21 are refused by loop detection.
		{name: "refused by loop detection", mock: []string{"-rounds", "21", "-cmd", "echo same"}, post: 19},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			capture := filepath.Join(t.TempDir(), "requests.jsonl")
			base := mockLLM(t, append(tc.mock, "-capture", capture)...)
			home, ws := t.TempDir(), t.TempDir()
			log := filepath.Join(t.TempDir(), "post.log")
			writePostHooks(t, ws, log)
			if err := os.MkdirAll(filepath.Join(ws, "build"), 0o755); err != nil {
				t.Fatal(err)
			}
			if _, err := hook.Trust(home, ws); err != nil {
				t.Fatal(err)
			}
			code, _, errs := runProc(t, home, ws, base, append([]string{"--no-session"}, append(tc.args, "go")...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", code, tc.code, tail(errs, 2000))
			}
			data, _ := os.ReadFile(log)
			lines := strings.Split(strings.TrimSpace(string(data)), "\n")
			if len(data) == 0 {
				lines = nil
			}
			post, fail := 0, 0
			for _, l := range lines {
				switch {
				case strings.HasPrefix(l, "PostToolUse "):
					post++
				case strings.HasPrefix(l, "PostToolUseFailure "):
					fail++
					if !strings.Contains(l, "oops") {
						t.Errorf("PostToolUseFailure input lacks the error: %q", l)
					}
				}
			}
			if post != tc.post || fail != tc.fail {
				t.Errorf("PostToolUse fired %d times, PostToolUseFailure %d; want %d and %d\nlog:\n%s\nstderr:\n%s", post, fail, tc.post, tc.fail, data, tail(errs, 1500))
			}
			reqs := readLines(t, capture)
			results := toolResultTexts(t, reqs[len(reqs)-1])
			saw := 0
			for _, r := range results {
				saw += strings.Count(r, "hook saw the call")
			}
			if saw != tc.post+tc.fail {
				t.Errorf("the model read the post hooks' feedback %d times, want %d", saw, tc.post+tc.fail)
			}
		})
	}
}
