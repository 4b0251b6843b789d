//go:build unix

package hook

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// fixture is a temp agentloop home and workspace.
type fixture struct {
	home, ws string
	rec      *recorder
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("command hooks need a POSIX shell")
	}
	f := &fixture{home: t.TempDir(), ws: t.TempDir(), rec: &recorder{}}
	var err error
	if f.ws, err = filepath.EvalSymlinks(f.ws); err != nil {
		t.Fatal(err)
	}
	return f
}

func needJQ(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("jq is not installed (apt-get install -y jq)")
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// hooksJSON builds a settings file: event → matcher → commands.
type cmdSpec struct {
	matcher, command string
	timeout          float64
}

func settings(hooks map[string][]cmdSpec) map[string]any {
	out := map[string]any{}
	for event, specs := range hooks {
		var groups []any
		for _, s := range specs {
			c := map[string]any{"type": "command", "command": s.command}
			if s.timeout > 0 {
				c["timeout"] = s.timeout
			}
			groups = append(groups, map[string]any{"matcher": s.matcher, "hooks": []any{c}})
		}
		out[event] = groups
	}
	return map[string]any{"hooks": out}
}

func (f *fixture) user(t *testing.T, hooks map[string][]cmdSpec) {
	writeJSON(t, filepath.Join(f.home, SettingsFile), settings(hooks))
}

func (f *fixture) project(t *testing.T, hooks map[string][]cmdSpec) {
	writeJSON(t, filepath.Join(f.ws, ProjectDir, SettingsFile), settings(hooks))
}

func (f *fixture) load(t *testing.T, mod func(*LoadOptions)) (*Bus, []string) {
	t.Helper()
	opts := LoadOptions{Home: f.home, Workspace: f.ws, SessionID: "s-1", TranscriptPath: "/tmp/s-1.jsonl",
		BusOptions: &Options{Report: f.rec.report}}
	if mod != nil {
		mod(&opts)
	}
	b, warnings, err := Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	return b, warnings
}

func bashCall(command string) tool.Call {
	args, _ := json.Marshal(map[string]string{"command": command})
	return tool.Call{ID: "toolu_1", Name: "bash", Args: args}
}

func copyScript(t *testing.T, name, dst string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// A guard written for Claude Code, matching Bash and reading
// .tool_input.command with jq, blocks rm -rf in a trusted workspace, and
// the model reads exactly its stderr.
func TestClaudeCodeGuardBlocksRmRf(t *testing.T) {
	needJQ(t)
	f := newFixture(t)
	copyScript(t, "block-rm.sh", filepath.Join(f.ws, ProjectDir, "hooks", "block-rm.sh"))
	f.project(t, map[string][]cmdSpec{EventPreToolUse: {{matcher: "Bash", command: `"$CLAUDE_PROJECT_DIR"/.agentloop/hooks/block-rm.sh`}}})
	if _, err := Trust(f.home, f.ws); err != nil {
		t.Fatal(err)
	}
	b, warnings := f.load(t, nil)
	if len(warnings) != 0 {
		t.Fatalf("warnings %q", warnings)
	}
	seams := b.Seams(SeamsOptions{})

	call, res := seams.BeforeToolCall(ctx, bashCall("rm -rf build"))
	if res == nil {
		t.Fatal("rm -rf was not blocked")
	}
	want := "Blocked by project policy: rm -rf is not allowed here. Delete the specific files you mean instead."
	if !res.IsError || res.Text() != want {
		t.Errorf("the model reads %q (isError %v), want the hook's stderr %q", res.Text(), res.IsError, want)
	}
	if string(call.Args) != `{"command":"rm -rf build"}` {
		t.Errorf("call changed: %s", call.Args)
	}
	for _, ok := range []string{"ls -la", "rm notes.txt"} {
		if _, res := seams.BeforeToolCall(ctx, bashCall(ok)); res != nil {
			t.Errorf("%q blocked: %s", ok, res.Text())
		}
	}
	// The matcher is Bash: other tools are not guarded.
	if _, res := seams.BeforeToolCall(ctx, tool.Call{Name: "read", Args: json.RawMessage(`{"path":"rm -rf"}`)}); res != nil {
		t.Errorf("read blocked: %s", res.Text())
	}
	if ns := f.rec.all(); len(ns) != 0 {
		t.Errorf("notices %+v", ns)
	}
}

// processesInGroup lists live (not zombie) processes whose process group
// is pgid.
func processesInGroup(t *testing.T, pgid int) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc here")
	}
	var live []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(s[i+1:]) // state ppid pgrp ...
		if len(fields) < 3 || fields[0] == "Z" || fields[0] == "X" {
			continue
		}
		if g, _ := strconv.Atoi(fields[2]); g == pgid {
			live = append(live, e.Name()+" "+s[:i+1])
		}
	}
	return live
}

func TestHangingHookIsKilledWithItsGroup(t *testing.T) {
	f := newFixture(t)
	pidFile := filepath.Join(f.ws, "pid")
	f.user(t, map[string][]cmdSpec{EventPreToolUse: {{
		command: `echo $$ > "$CLAUDE_PROJECT_DIR/pid"; sleep 60 & sleep 60 | cat; wait`,
		timeout: 0.5,
	}}})
	b, _ := f.load(t, nil)
	start := time.Now()
	out := b.BeforeToolCall(ctx, BeforeToolCallInput{Call: bashCall("ls")})
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the hook held the call for %v", d)
	}
	if out.Block {
		t.Errorf("a hook that timed out blocked the call: %+v", out)
	}
	ns := f.rec.all()
	if len(ns) != 1 || ns[0].Kind != NoticeTimeout || !strings.Contains(ns[0].Text, "was killed; the run goes on") {
		t.Fatalf("notices %+v, want one timeout warning", ns)
	}
	b2, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pgid, err := strconv.Atoi(strings.TrimSpace(string(b2)))
	if err != nil {
		t.Fatal(err)
	}
	// Orphans are reaped by init asynchronously; give it a moment.
	deadline := time.Now().Add(3 * time.Second)
	for {
		live := processesInGroup(t, pgid)
		if len(live) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hook's process group %d outlived it: %q", pgid, live)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestBackgroundChildOfFinishedHookIsKilled(t *testing.T) {
	f := newFixture(t)
	f.user(t, map[string][]cmdSpec{EventPostToolUse: {{
		command: `echo $$ > "$CLAUDE_PROJECT_DIR/pid"; (sleep 60 >/dev/null 2>&1 &); exit 0`,
	}}})
	b, _ := f.load(t, nil)
	b.ToolResultPersist(ctx, ToolResultPersistInput{Call: bashCall("ls"), Result: tool.TextResult("x")})
	raw, err := os.ReadFile(filepath.Join(f.ws, "pid"))
	if err != nil {
		t.Fatal(err)
	}
	pgid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	deadline := time.Now().Add(3 * time.Second)
	for len(processesInGroup(t, pgid)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("a background child of the hook outlived it: %q", processesInGroup(t, pgid))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A child that left the hook's process group with setsid is found by its
// tag and ended (and reaped) when the hook exits, not left running.
func TestSetsidChildOfFinishedHookIsKilled(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("finding setsid escapees needs Linux's /proc and subreaper")
	}
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid is not installed")
	}
	f := newFixture(t)
	f.user(t, map[string][]cmdSpec{EventPostToolUse: {{
		command: `setsid sh -c 'echo $$ > "$CLAUDE_PROJECT_DIR/escapee"; exec sleep 300' >/dev/null 2>&1 < /dev/null & sleep 0.2; exit 0`,
	}}})
	b, _ := f.load(t, nil)
	b.ToolResultPersist(ctx, ToolResultPersistInput{Call: bashCall("ls"), Result: tool.TextResult("x")})
	raw, err := os.ReadFile(filepath.Join(f.ws, "escapee"))
	if err != nil {
		t.Fatal(err)
	}
	waitGone(t, strings.TrimSpace(string(raw)), "the setsid child")
}

// waitGone waits for the process pid to be gone and reaped.
func waitGone(t *testing.T, pid, what string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		stat, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			return // gone, and reaped
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s of a finished hook is still there: %s", what, pid, stat)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestOtherExitCodesAreReportedAndIgnored(t *testing.T) {
	f := newFixture(t)
	f.user(t, map[string][]cmdSpec{
		EventPreToolUse: {{command: `echo "Blocked!" >&2; exit 1`}},
		EventStop:       {{command: `exit 3`}},
	})
	b, _ := f.load(t, nil)
	seams := b.Seams(SeamsOptions{})
	if _, res := seams.BeforeToolCall(ctx, bashCall("rm -rf /")); res != nil {
		t.Errorf("exit 1 blocked the call: %s", res.Text())
	}
	if cont, _ := seams.Stop(ctx, llm.Message{Role: llm.RoleAssistant}); cont {
		t.Error("exit 3 kept the run going")
	}
	ns := f.rec.all()
	if len(ns) != 2 || ns[0].Kind != NoticeError || !strings.Contains(ns[0].Text, "exit status 1") || !strings.Contains(ns[0].Text, "Blocked!") {
		t.Errorf("notices %+v", ns)
	}
}

func TestPreToolUseJSON(t *testing.T) {
	f := newFixture(t)
	f.user(t, map[string][]cmdSpec{EventPreToolUse: {
		{matcher: "Bash", command: `cat >/dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"command":"ls -la"}}}'`},
		{matcher: "Write", command: `cat >/dev/null; echo '{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"generated files are read-only"}}'`},
		{matcher: "Grep", command: `cat >/dev/null; echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"searches secrets"}}'`},
		{matcher: "read", command: `cat >/dev/null; echo '{"continue":false,"stopReason":"reading is over for today"}'`},
	}})
	b, _ := f.load(t, nil)
	var halted string
	asked := ""
	approval := &tool.Approval{Policy: tool.ApproveAsk, Ask: func(_ context.Context, c tool.Call, reason string) (tool.Answer, error) {
		asked = c.Name + ": " + reason
		return tool.AnswerNo, nil
	}}
	seams := b.Seams(SeamsOptions{Approval: approval, Halt: func(r string) { halted = r }})

	// allow answers the question ask mode would have asked, and the rewrite lands in our names.
	call, res := seams.BeforeToolCall(ctx, tool.Call{Name: "bash", Args: json.RawMessage(`{"command":"ls","timeout":3}`)})
	if res != nil || string(call.Args) != `{"command":"ls -la","timeout":3}` || asked != "" {
		t.Errorf("bash: args %s, res %+v, asked %q", call.Args, res, asked)
	}
	// deny goes to the model.
	_, res = seams.BeforeToolCall(ctx, tool.Call{Name: "write", Args: json.RawMessage(`{"path":"gen.go","content":"x"}`)})
	if res == nil || res.Text() != "generated files are read-only" {
		t.Errorf("write: %+v", res)
	}
	// ask forces the question even for a read-only call, with the hook's reason.
	_, res = seams.BeforeToolCall(ctx, tool.Call{Name: "grep", Args: json.RawMessage(`{"pattern":"KEY"}`)})
	if res == nil || asked != "grep: searches secrets" || !strings.Contains(res.Text(), "Denied by the user") {
		t.Errorf("grep: asked %q, res %+v", asked, res)
	}
	// continue:false blocks and halts.
	_, res = seams.BeforeToolCall(ctx, tool.Call{Name: "read", Args: json.RawMessage(`{"path":"a"}`)})
	if res == nil || halted != "reading is over for today" {
		t.Errorf("read: halted %q, res %+v", halted, res)
	}
}

func TestParallelHooksMerge(t *testing.T) {
	f := newFixture(t)
	f.user(t, map[string][]cmdSpec{EventPreToolUse: {
		{command: `cat >/dev/null; echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}'`},
		{command: `cat >/dev/null; echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"check"}}'`},
		{command: `cat >/dev/null; echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"check"}}'`}, // same command: runs once
		{command: `cat >/dev/null; echo first >&2; exit 2`},
		{command: `cat >/dev/null; echo second >&2; exit 2`},
	}})
	b, _ := f.load(t, nil)
	out := b.BeforeToolCall(ctx, BeforeToolCallInput{Call: bashCall("x")})
	if !out.Block || out.Reason != "first\nsecond" {
		t.Errorf("deny beats ask beats allow, reasons joined: %+v", out)
	}

	f2 := newFixture(t)
	f2.user(t, map[string][]cmdSpec{EventPreToolUse: {
		{command: `cat >/dev/null; echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}'`},
		{command: `cat >/dev/null; echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"check"}}'`},
	}})
	b2, _ := f2.load(t, nil)
	// Without anyone to ask, a hook's ask is refused.
	_, res := b2.Seams(SeamsOptions{}).BeforeToolCall(ctx, bashCall("x"))
	if res == nil || !strings.Contains(res.Text(), "no one to ask") {
		t.Errorf("ask without an asker: %+v", res)
	}
}

func TestNeverPolicyBeatsHookAllow(t *testing.T) {
	f := newFixture(t)
	f.user(t, map[string][]cmdSpec{EventPreToolUse: {{command: `cat >/dev/null; echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}'`}}})
	b, _ := f.load(t, nil)
	seams := b.Seams(SeamsOptions{Approval: &tool.Approval{Policy: tool.ApproveNever}})
	if _, res := seams.BeforeToolCall(ctx, bashCall("rm x")); res == nil || !strings.Contains(res.Text(), "only allows calls that read") {
		t.Errorf("a hook's allow overrode --approve never: %+v", res)
	}
}

func TestRewriteIsRevalidated(t *testing.T) {
	f := newFixture(t)
	f.user(t, map[string][]cmdSpec{EventPreToolUse: {{command: `cat >/dev/null; echo '{"hookSpecificOutput":{"updatedInput":{"command":42}}}'`}}})
	b, _ := f.load(t, nil)
	reg, err := tool.NewRegistry(&tool.Func{ToolName: "bash",
		Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`),
		Run: func(context.Context, tool.Call, func(tool.Partial)) (tool.Result, error) {
			return tool.TextResult(""), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	_, res := b.Seams(SeamsOptions{Registry: reg}).BeforeToolCall(ctx, bashCall("ls"))
	if res == nil || !res.IsError || !strings.Contains(res.Text(), `Invalid arguments for tool "bash"`) {
		t.Errorf("a rewrite that breaks the schema ran: %+v", res)
	}
}

// A rewrite of an engine's own call (Claude Code's Bash, no tool of the
// run's registry) is handed back to the engine, which checks its own
// arguments, instead of being refused as an unknown tool.
func TestRewriteOfAnEnginesCall(t *testing.T) {
	f := newFixture(t)
	f.user(t, map[string][]cmdSpec{EventPreToolUse: {{matcher: "Bash", command: `cat >/dev/null; echo '{"hookSpecificOutput":{"updatedInput":{"command":"echo rewritten"}}}'`}}})
	b, _ := f.load(t, nil)
	reg, err := tool.NewRegistry(&tool.Func{ToolName: "bash", Run: func(context.Context, tool.Call, func(tool.Partial)) (tool.Result, error) {
		return tool.TextResult(""), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	call, res := b.Seams(SeamsOptions{Registry: reg}).BeforeToolCall(ctx, tool.Call{ID: "toolu_1", Name: "Bash", Args: json.RawMessage(`{"command":"echo original"}`)})
	if res != nil || string(call.Args) != `{"command":"echo rewritten"}` {
		t.Errorf("the engine's call: args %s, res %+v, want the rewrite", call.Args, res)
	}
}

func TestPostToolUseFeedbackReachesTheModel(t *testing.T) {
	f := newFixture(t)
	f.user(t, map[string][]cmdSpec{EventPostToolUse: {
		{matcher: "Write|Edit", command: `cat >/dev/null; echo "gofmt: x.go is not formatted" >&2; exit 2`},
		{matcher: "Write", command: `cat >/dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"x.go is generated"}}'`},
	}})
	b, _ := f.load(t, nil)
	seams := b.Seams(SeamsOptions{})
	orig := tool.TextResult("Successfully wrote 3 bytes to x.go")
	got := seams.ToolResultPersist(ctx, tool.Call{Name: "write", Args: json.RawMessage(`{"path":"x.go","content":"abc"}`)}, orig)
	if len(got.Content) != 2 || got.Content[0].Text != orig.Content[0].Text ||
		got.Content[1].Text != PostToolUseFeedbackPrefix+"gofmt: x.go is not formatted\nx.go is generated" {
		t.Errorf("result %+v", got)
	}
	if len(orig.Content) != 1 {
		t.Error("the original result was modified")
	}
	if got := seams.ToolResultPersist(ctx, bashCall("ls"), orig); len(got.Content) != 1 {
		t.Errorf("an unmatched tool's result changed: %+v", got)
	}
}

func TestUserPromptSubmitHooks(t *testing.T) {
	f := newFixture(t)
	f.user(t, map[string][]cmdSpec{EventUserPromptSubmit: {
		// Claude Code ignores matchers on events without a tool or source to
		// match; a copied matcher must not silence the hook.
		{matcher: "Bash", command: `echo "The sprint ends Friday."`},
		{command: `p=$(cat); case "$p" in *sk-live*) echo "Your prompt contains an API key; remove it." >&2; exit 2;; esac`},
	}})
	b, _ := f.load(t, nil)
	out := b.UserPromptSubmit(ctx, UserPromptSubmitInput{Prompt: "plan the week"})
	if out.Block || out.Context != "The sprint ends Friday." {
		t.Errorf("plain prompt: %+v", out)
	}
	out = b.UserPromptSubmit(ctx, UserPromptSubmitInput{Prompt: "use sk-live-123"})
	if !out.Block || out.Reason != "Your prompt contains an API key; remove it." {
		t.Errorf("prompt with a key: %+v", out)
	}
}

func TestStopHookContinuesExactlyOnce(t *testing.T) {
	needJQ(t)
	f := newFixture(t)
	script := filepath.Join(f.home, "stop-once.sh")
	copyScript(t, "stop-once.sh", script)
	f.user(t, map[string][]cmdSpec{EventStop: {{command: script}}})
	b, _ := f.load(t, nil)
	seams := b.Seams(SeamsOptions{})
	last := llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text("done")}}
	cont, inject := seams.Stop(ctx, last)
	if !cont || len(inject) != 1 || inject[0].Role != llm.RoleUser ||
		inject[0].Text() != StopFeedbackPrefix+"Before you stop, run the tests and report the result." {
		t.Fatalf("first stop: cont %v inject %+v", cont, inject)
	}
	if cont, inject := seams.Stop(ctx, last); cont || inject != nil {
		t.Errorf("second stop continued again: %v %+v", cont, inject)
	}
	// A new run starts afresh.
	if cont, _ := b.Seams(SeamsOptions{}).Stop(ctx, last); !cont {
		t.Error("a new run's first stop did not continue")
	}
}

func TestHookInputAndEnvironment(t *testing.T) {
	f := newFixture(t)
	f.user(t, map[string][]cmdSpec{EventPreToolUse: {{matcher: "Edit", command: `cat > "$CLAUDE_PROJECT_DIR/in.json"; printf '%s\n%s\n%s\n' "$PWD" "$AGENTLOOP_PROJECT_DIR" "$CLAUDE_PROJECT_DIR" > "$CLAUDE_PROJECT_DIR/env.txt"`}}})
	b, _ := f.load(t, nil)
	args := `{"path":"src/x.go","edits":[{"oldText":"a","newText":"b"},{"oldText":"c","newText":"d"}]}`
	b.BeforeToolCall(ctx, BeforeToolCallInput{Call: tool.Call{ID: "toolu_9", Name: "edit", Args: json.RawMessage(args)}})
	env, err := os.ReadFile(filepath.Join(f.ws, "env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if want := f.ws + "\n" + f.ws + "\n" + f.ws + "\n"; string(env) != want {
		t.Errorf("cwd and env %q, want %q", env, want)
	}
	raw, err := os.ReadFile(filepath.Join(f.ws, "in.json"))
	if err != nil {
		t.Fatal(err)
	}
	var in map[string]any
	if err := json.Unmarshal(raw, &in); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"session_id": "s-1", "transcript_path": "/tmp/s-1.jsonl", "cwd": f.ws, "hook_event_name": "PreToolUse",
		"tool_name": "Edit", "tool_use_id": "toolu_9",
		"tool_input":          map[string]any{"file_path": filepath.Join(f.ws, "src/x.go"), "old_string": "a", "new_string": "b"},
		"agentloop_tool_name": "edit",
	}
	for k, v := range want {
		got, _ := json.Marshal(in[k])
		exp, _ := json.Marshal(v)
		if string(got) != string(exp) {
			t.Errorf("stdin %s = %s, want %s", k, got, exp)
		}
	}
	ours, _ := json.Marshal(in["agentloop_tool_input"])
	var a, b2 any
	_ = json.Unmarshal(ours, &a)
	_ = json.Unmarshal([]byte(args), &b2)
	if x, y := mustJSON(a), mustJSON(b2); x != y {
		t.Errorf("agentloop_tool_input %s, want all edits %s", x, y)
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestSessionAndCompactionHooks(t *testing.T) {
	f := newFixture(t)
	f.user(t, map[string][]cmdSpec{
		EventSessionStart: {
			{matcher: "startup", command: `echo "fresh start"`},
			{matcher: "resume", command: `echo '{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"welcome back"}}'`},
		},
		EventPreCompact:  {{matcher: "manual", command: `jq -r .custom_instructions >&2; exit 2`}},
		EventSessionEnd:  {{command: `cat > "$CLAUDE_PROJECT_DIR/end.json"`}},
		EventPostCompact: {{command: `echo '{"systemMessage":"compacted"}'`}},
	})
	b, _ := f.load(t, nil)
	if got := b.SessionStart(ctx, SessionStartInput{Source: "startup"}); got.Context != "fresh start" {
		t.Errorf("startup context %q", got.Context)
	}
	if got := b.SessionStart(ctx, SessionStartInput{Source: "resume"}); got.Context != "welcome back" {
		t.Errorf("resume context %q", got.Context)
	}
	if _, err := exec.LookPath("jq"); err == nil {
		b.BeforeCompaction(ctx, CompactionEvent{Trigger: "manual", Instructions: "keep the API notes"})
		b.BeforeCompaction(ctx, CompactionEvent{Trigger: "auto"}) // no match
		ns := f.rec.all()
		if len(ns) != 1 || ns[0].Kind != NoticeMessage || ns[0].Text != "keep the API notes" || ns[0].Point != BeforeCompaction {
			t.Errorf("pre-compact notices %+v", ns)
		}
	}
	b.AfterCompaction(ctx, CompactionEvent{Trigger: "auto", Summary: "s"})
	if ns := f.rec.all(); len(ns) == 0 || ns[len(ns)-1].Text != "compacted" {
		t.Errorf("post-compact notices %+v", ns)
	}
	b.SessionEnd(ctx, SessionEndEvent{Reason: "exit"})
	raw, err := os.ReadFile(filepath.Join(f.ws, "end.json"))
	if err != nil || !strings.Contains(string(raw), `"reason":"exit"`) || !strings.Contains(string(raw), `"hook_event_name":"SessionEnd"`) {
		t.Errorf("session end input %s (%v)", raw, err)
	}
}

func TestCancelledRunKillsHook(t *testing.T) {
	f := newFixture(t)
	fifo := filepath.Join(f.ws, "started")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no named pipes here:", err)
	}
	f.user(t, map[string][]cmdSpec{EventStop: {{command: `echo up > "$CLAUDE_PROJECT_DIR/started"; sleep 60`}}})
	b, _ := f.load(t, nil)
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan StopOutput)
	go func() { done <- b.Stop(cctx, StopInput{}) }()
	// Cancel once the hook is running (it has opened the pipe); Stop must
	// come back promptly.
	if _, err := os.ReadFile(fifo); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case out := <-done:
		if out.Continue {
			t.Errorf("cancelled stop hook continued: %+v", out)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not return after the run was cancelled")
	}
	if ns := f.rec.all(); len(ns) != 0 {
		t.Errorf("notices for a cancelled run: %+v", ns)
	}
}

// A settings file as a Claude Code project carries it, copied unchanged
// into .agentloop: the guard and the stop hook work; untrusted, both are
// skipped with one warning.
func TestClaudeCodeSettingsFileUnchanged(t *testing.T) {
	needJQ(t)
	f := newFixture(t)
	raw, err := os.ReadFile(filepath.Join("testdata", "claude-settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(f.ws, ProjectDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.ws, ProjectDir, SettingsFile), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	copyScript(t, "block-rm.sh", filepath.Join(f.ws, ProjectDir, "hooks", "block-rm.sh"))
	copyScript(t, "stop-once.sh", filepath.Join(f.ws, ProjectDir, "hooks", "stop-once.sh"))

	b, warnings := f.load(t, nil)
	if len(warnings) != 1 || !strings.Contains(warnings[0], "PreToolUse[Bash]") || !strings.Contains(warnings[0], "Stop `") {
		t.Fatalf("untrusted: warnings %q", warnings)
	}
	if _, res := b.Seams(SeamsOptions{}).BeforeToolCall(ctx, bashCall("rm -rf /")); res != nil {
		t.Fatal("an untrusted project's hook ran")
	}

	b, warnings = f.load(t, func(o *LoadOptions) { o.Trust = true })
	if len(warnings) != 0 {
		t.Fatalf("trusted: warnings %q", warnings)
	}
	seams := b.Seams(SeamsOptions{})
	if _, res := seams.BeforeToolCall(ctx, bashCall("cd build && rm -rf *")); res == nil || !strings.HasPrefix(res.Text(), "Blocked by project policy") {
		t.Errorf("guard: %+v", res)
	}
	last := llm.Message{Role: llm.RoleAssistant}
	c1, _ := seams.Stop(ctx, last)
	c2, _ := seams.Stop(ctx, last)
	if !c1 || c2 {
		t.Errorf("stop hook continued %v then %v, want once", c1, c2)
	}
}

// A bus shared by many runs: each run's Load adds the command hooks of its
// own session to a derived bus, never to the shared one, so they neither
// pile up nor fire with another run's session id.
func TestLoadOnASharedBus(t *testing.T) {
	f := newFixture(t)
	f.user(t, map[string][]cmdSpec{EventUserPromptSubmit: {{command: `sed 's/.*"session_id":"\([^"]*\)".*/\1/'`}}})
	shared := New(&Options{Report: f.rec.report})
	shared.OnUserPromptSubmit(Spec{Name: "go"}, func(context.Context, UserPromptSubmitInput) (UserPromptSubmitOutput, error) {
		return UserPromptSubmitOutput{Context: "from go"}, nil
	})
	for _, sid := range []string{"run-1", "run-2"} {
		b, _ := f.load(t, func(o *LoadOptions) { o.Bus, o.SessionID = shared, sid })
		if b == shared {
			t.Fatal("Load registered on the shared bus itself")
		}
		out := b.UserPromptSubmit(ctx, UserPromptSubmitInput{Prompt: "hi"})
		if want := "from go\n\n" + sid; out.Context != want {
			t.Errorf("%s: context %q, want %q", sid, out.Context, want)
		}
	}
	if n := shared.Len(UserPromptSubmit); n != 1 {
		t.Errorf("the shared bus holds %d user_prompt_submit hooks after two runs, want its own 1", n)
	}
}
