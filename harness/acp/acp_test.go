package acp_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentloop/agentloop/harness"
	"github.com/agentloop/agentloop/harness/acp"
	"github.com/agentloop/agentloop/harness/harnesstest"
	"github.com/agentloop/agentloop/internal/fakeacp"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/tool"
)

// The test binary is also the fake ACP agent: started with
// AGENTLOOP_FAKEACP set to its script, it serves ACP on stdio.
func TestMain(m *testing.M) {
	if script := os.Getenv("AGENTLOOP_FAKEACP"); script != "" {
		var cfg fakeacp.Config
		if err := json.Unmarshal([]byte(script), &cfg); err != nil {
			panic(err)
		}
		fakeacp.Serve(cfg, os.Stdin, os.Stdout)
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

type env struct {
	h    *acp.Harness
	cfg  acp.Config
	sess session.Session
	dir  string // the agent's session store
	cwd  string
}

func newEnv(t *testing.T, turns ...[]fakeacp.Step) *env {
	dir := t.TempDir()
	script, _ := json.Marshal(fakeacp.Config{Dir: dir, Turns: turns})
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := acp.Config{Name: "fake", Command: self, Env: append(os.Environ(), "AGENTLOOP_FAKEACP="+string(script))}
	h := acp.New(cfg)
	st := session.NewJSONLStore(t.TempDir())
	cwd := t.TempDir()
	sess, err := st.Create(context.Background(), session.CreateOptions{Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return &env{h: h, cfg: cfg, sess: sess, dir: dir, cwd: cwd}
}

func (e *env) attempt(prompt string, ap *tool.Approval, b *harness.Binding) *harness.Attempt {
	return &harness.Attempt{SessionID: e.sess.ID(), RunID: "run-" + prompt, Attempt: 1, Prompt: llm.UserText(prompt),
		Cwd: e.cwd, Approval: ap, Binding: b, Mirror: harness.SessionMirror(e.sess)}
}

func lines(s session.Session) string {
	var out []string
	for _, m := range s.Context().Messages {
		l := string(m.Role) + ":" + m.Text()
		if cs := m.ToolCalls(); len(cs) > 0 {
			l = "call:" + cs[0].Name
		}
		if m.Role == llm.RoleToolResult {
			l = "result:" + m.Text()
		}
		out = append(out, l)
	}
	return strings.Join(out, " | ")
}

var touch = fakeacp.Step{Tool: &fakeacp.Tool{ID: "t1", Title: "touch a", Kind: "edit", Input: map[string]any{"path": "a"}, Permission: true, Touch: "a"}}

func deny(context.Context, tool.Call, bool) tool.Decision {
	return tool.Decision{Verdict: tool.VerdictDeny, Reason: "no"}
}

func TestPlainAnswerAndResume(t *testing.T) {
	e := newEnv(t, []fakeacp.Step{{Text: "hello "}, {Text: "there"}}, []fakeacp.Step{{Text: "again"}})
	r1, err := e.h.RunAttempt(context.Background(), e.attempt("hi", nil, nil))
	if err != nil || r1.Err != nil || r1.Text() != "hello there" || !r1.PromptPersisted || r1.SideEffects {
		t.Fatalf("first turn: %v %+v", err, r1)
	}
	if r1.Binding == nil || r1.Binding.NativeID == "" || r1.Binding.Harness != "acp:fake" || r1.Binding.Version != "0.1.0" {
		t.Fatalf("binding %+v", r1.Binding)
	}
	r2, err := e.h.RunAttempt(context.Background(), e.attempt("more", nil, r1.Binding))
	if err != nil || r2.Err != nil || r2.Text() != "again" || r2.Binding.NativeID != r1.Binding.NativeID {
		t.Fatalf("resumed turn: %v %+v", err, r2)
	}
	if got := lines(e.sess); got != "user:hi | assistant:hello there | user:more | assistant:again" {
		t.Errorf("transcript %s", got)
	}
}

func TestLostBinding(t *testing.T) {
	e := newEnv(t, []fakeacp.Step{{Text: "never"}})
	_, err := e.h.RunAttempt(context.Background(), e.attempt("hi", nil, &harness.Binding{Harness: "acp:fake", NativeID: "gone"}))
	if !errors.Is(err, harness.ErrBindingLost) || !strings.Contains(err.Error(), "sessions unbind") {
		t.Fatalf("err %v", err)
	}
	if lines(e.sess) != "" {
		t.Errorf("a lost binding wrote %s", lines(e.sess))
	}
}

func TestPermissionThroughApproval(t *testing.T) {
	e := newEnv(t, []fakeacp.Step{touch, {Text: "done"}})
	var tr harness.Tracker
	a := e.attempt("touch", &tool.Approval{}, nil)
	a.ObserveToolTerminal = tr.Observe
	res, err := e.h.RunAttempt(context.Background(), a)
	if err != nil || res.Err != nil || !res.SideEffects {
		t.Fatalf("allowed: %v %+v", err, res)
	}
	if _, err := os.Stat(filepath.Join(e.cwd, "a")); err != nil {
		t.Errorf("the allowed call did not run: %v", err)
	}
	if got := lines(e.sess); got != "user:touch | call:touch a | result:touch a done | assistant:done" {
		t.Errorf("transcript %s", got)
	}
	if tr.Reports() != 1 {
		t.Errorf("%d terminal reports", tr.Reports())
	}

	e2 := newEnv(t, []fakeacp.Step{touch, {Text: "ok"}})
	res, err = e2.h.RunAttempt(context.Background(), e2.attempt("touch", &tool.Approval{Policy: deny}, nil))
	if err != nil || res.Err != nil || res.SideEffects {
		t.Fatalf("denied: %v %+v", err, res)
	}
	if _, err := os.Stat(filepath.Join(e2.cwd, "a")); err == nil {
		t.Error("the refused call ran")
	}
	if got := lines(e2.sess); got != "user:touch | call:touch a | result:the user refused this call | assistant:ok" {
		t.Errorf("transcript %s", got)
	}
	if res.LastToolError == nil || res.LastToolError.ExecutionStarted {
		t.Errorf("last tool error %+v", res.LastToolError)
	}
}

func TestAbortMidTool(t *testing.T) {
	blocking := fakeacp.Step{Tool: &fakeacp.Tool{ID: "t1", Title: "wait", Kind: "execute", Input: map[string]any{}, Touch: "started", Block: true}}
	e := newEnv(t, []fakeacp.Step{blocking, {Text: "never"}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for {
			if _, err := os.Stat(filepath.Join(e.cwd, "started")); err == nil {
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond) // polling a child process's file
		}
	}()
	start := time.Now()
	res, err := e.h.RunAttempt(ctx, e.attempt("wait", nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > acp.AbortWait {
		t.Errorf("abort took %s", d)
	}
	if res.StopReason != llm.StopReasonAborted || !res.SideEffects {
		t.Errorf("stop %s side effects %v", res.StopReason, res.SideEffects)
	}
	if got := lines(e.sess); got != "user:wait | call:wait | result:cancelled while running" {
		t.Errorf("transcript %s: the cancelled call needs its result", got)
	}
}

func TestAgentCrashMidTurn(t *testing.T) {
	e := newEnv(t, []fakeacp.Step{touch, {Crash: true}})
	res, err := e.h.RunAttempt(context.Background(), e.attempt("touch", &tool.Approval{}, nil))
	if err != nil {
		t.Fatal(err)
	}
	var he *harness.Error
	if !errors.As(res.Err, &he) || !res.SideEffects {
		t.Fatalf("err %v side effects %v: a crash after a tool ran is a visible failure that is never replayed", res.Err, res.SideEffects)
	}
}

// TestIdleWarn: an agent that goes quiet mid-turn (no update, no answer)
// for IdleWarn gets one warning per quiet stretch, and the turn goes on; a
// permission question waiting on us is not the agent's silence.
func TestIdleWarn(t *testing.T) {
	const idle = 300 * time.Millisecond
	run := func(t *testing.T, ap *tool.Approval, steps ...fakeacp.Step) (*harness.Result, []string) {
		e := newEnv(t, steps)
		e.cfg.IdleWarn = idle
		h := acp.New(e.cfg)
		a := e.attempt("hi", ap, nil)
		var warns []string
		a.Warn = func(m string) { warns = append(warns, m) }
		res, err := h.RunAttempt(context.Background(), a)
		if err != nil || res.Err != nil {
			t.Fatalf("%v %+v", err, res)
		}
		return res, warns
	}
	t.Run("stall", func(t *testing.T) {
		res, warns := run(t, nil, fakeacp.Step{Text: "a"}, fakeacp.Step{PauseMS: 1000}, fakeacp.Step{Text: "b"})
		if res.Text() != "ab" {
			t.Errorf("text %q: the turn must go on after the warning", res.Text())
		}
		if len(warns) != 1 || !strings.Contains(warns[0], "no update and no answer") || !strings.Contains(warns[0], "acp:fake") {
			t.Errorf("warnings %q, want one", warns)
		}
	})
	t.Run("two stalls", func(t *testing.T) {
		_, warns := run(t, nil, fakeacp.Step{PauseMS: 500}, fakeacp.Step{Text: "a"}, fakeacp.Step{PauseMS: 500}, fakeacp.Step{Text: "b"})
		if len(warns) != 2 {
			t.Errorf("warnings %q, want one per quiet stretch", warns)
		}
	})
	t.Run("busy agent", func(t *testing.T) {
		var steps []fakeacp.Step
		for range 6 {
			steps = append(steps, fakeacp.Step{Text: "."}, fakeacp.Step{PauseMS: 100})
		}
		if _, warns := run(t, nil, steps...); len(warns) != 0 {
			t.Errorf("an agent that keeps talking was warned about: %q", warns)
		}
	})
	t.Run("our question", func(t *testing.T) {
		slow := &tool.Approval{Policy: func(context.Context, tool.Call, bool) tool.Decision {
			return tool.Decision{Verdict: tool.VerdictAsk}
		}, Ask: func(context.Context, tool.Call, string) (tool.Answer, error) {
			time.Sleep(3 * idle) // a person thinking
			return tool.AnswerYes, nil
		}}
		if _, warns := run(t, slow, touch, fakeacp.Step{Text: "done"}); len(warns) != 0 {
			t.Errorf("a question waiting on us was taken for the agent's silence: %q", warns)
		}
	})
}

// TestOurToolsOverMCP: an agent that takes HTTP MCP servers gets the run's
// tools in session/new; its call runs in our registry and is judged by our
// approval under our tool's name, also when the agent does not ask first,
// and an approval the agent did ask for is not asked again.
func TestOurToolsOverMCP(t *testing.T) {
	var ran []string
	reg := noteRegistry(t, &ran)
	call := func(permission bool) fakeacp.Step {
		return fakeacp.Step{Tool: &fakeacp.Tool{ID: "m1", Title: "note it", Kind: "edit", MCP: "note", Input: map[string]any{"text": "plum"}, Permission: permission}}
	}
	var asked []string
	asker := &tool.Approval{Policy: func(context.Context, tool.Call, bool) tool.Decision { return tool.Decision{Verdict: tool.VerdictAsk} },
		Ask: func(_ context.Context, c tool.Call, _ string) (tool.Answer, error) {
			asked = append(asked, c.Name)
			return tool.AnswerYes, nil
		}}
	cases := []struct {
		name      string
		noHTTP    bool
		step      fakeacp.Step
		ap        *tool.Approval
		result    string
		ran       int
		questions string
	}{
		{name: "allowed", step: call(false), ap: &tool.Approval{}, result: "result:noted", ran: 1},
		{name: "refused", step: call(false), ap: &tool.Approval{Policy: deny}, result: "result:no", ran: 0},
		// The agent's own question is about an edit (its kind), our MCP
		// server's is about our tool.
		{name: "asked once", step: call(true), ap: asker, result: "result:noted", ran: 1, questions: "edit"},
		{name: "asked by us", step: call(false), ap: asker, result: "result:noted", ran: 1, questions: "note"},
		{name: "no http mcp", noHTTP: true, step: call(false), ap: &tool.Approval{}, result: `result:no MCP server of the client offers "note"`, ran: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ran, asked = nil, nil
			e := newEnv(t, []fakeacp.Step{tc.step, {Text: "ok"}})
			if tc.noHTTP {
				script, _ := json.Marshal(fakeacp.Config{Dir: e.dir, Turns: [][]fakeacp.Step{{tc.step, {Text: "ok"}}}, NoHTTPMCP: true})
				e.cfg.Env = append(os.Environ(), "AGENTLOOP_FAKEACP="+string(script))
			}
			a := e.attempt("note", tc.ap, nil)
			a.Tools = reg
			res, err := acp.New(e.cfg).RunAttempt(context.Background(), a)
			if err != nil || res.Err != nil {
				t.Fatalf("%v %+v", err, res)
			}
			if want := "user:note | call:note it | " + tc.result + " | assistant:ok"; lines(e.sess) != want {
				t.Errorf("transcript\n got %s\nwant %s", lines(e.sess), want)
			}
			if len(ran) != tc.ran {
				t.Errorf("our tool ran %d times, want %d", len(ran), tc.ran)
			}
			if got := strings.Join(asked, ","); got != tc.questions {
				t.Errorf("questions %q, want %q", got, tc.questions)
			}
		})
	}
}

func TestParse(t *testing.T) {
	cfg, err := acp.Parse("acp:agentloop acp --model faux/demo")
	if err != nil || cfg.Command != "agentloop" || strings.Join(cfg.Args, " ") != "acp --model faux/demo" {
		t.Fatalf("%+v %v", cfg, err)
	}
	if acp.New(cfg).ID() != "acp:agentloop" {
		t.Error(acp.New(cfg).ID())
	}
	if _, err := acp.Parse("acp:"); err == nil {
		t.Error("an empty command was accepted")
	}
}

// Issue 25: an ACP call is judged as the tool of ours it is (its kind and
// rawInput), not under its title: an execute call is bash, so a run whose
// tools are read only refuses it before anyone is asked, and a permission
// rule written for bash (Bash(rm *)) refuses `rm -rf x` under --approve
// auto; the model-facing result says which.
func TestPermissionJudgedAsOurTool(t *testing.T) {
	rm := fakeacp.Step{Tool: &fakeacp.Tool{ID: "x1", Title: "Clean up", Kind: "execute", Input: map[string]any{"command": "rm -rf x"},
		Permission: true, Touch: "ran"}}
	rule, err := tool.ParsePermissionRule(tool.VerdictDeny, "Bash(rm *)", "settings.json")
	if err != nil {
		t.Fatal(err)
	}
	rules := &tool.PermissionRules{Rules: []tool.PermissionRule{rule}}
	for _, tc := range []struct {
		name   string
		policy *tool.Policy
		tools  []string
		ap     *tool.Approval
		ran    bool
		asked  string // the call the approval saw
		result string
	}{
		{"--tools read", &tool.Policy{Tools: []string{"read"}}, []string{"read"}, nil, false, "",
			"Denied: Clean up (bash here) is not in this run's tools (--tools read)"},
		{"deny rule", &tool.Policy{}, []string{"read", "bash"}, &tool.Approval{Policy: rules.Policy(tool.ApproveAuto)}, false,
			`bash {"command":"rm -rf x"}`, "the user refused this call"},
		{"allowed", &tool.Policy{}, []string{"read", "bash"}, &tool.Approval{}, true, `bash {"command":"rm -rf x"}`, "Clean up done"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, []fakeacp.Step{rm, {Text: "ok"}})
			a := e.attempt("clean", tc.ap, nil)
			a.Tools, a.ToolPolicy = harnesstest.Tools(t, tc.tools...), tc.policy
			asked := ""
			a.BeforeTool = func(ctx context.Context, c tool.Call) (tool.Call, *tool.Result) {
				asked = c.Name + " " + string(c.Args)
				if tc.ap == nil {
					return c, nil
				}
				if ok, reason := tc.ap.Approve(ctx, c); !ok {
					return c, &tool.Result{Content: []llm.Content{llm.Text(reason)}, IsError: true}
				}
				return c, nil
			}
			res, err := e.h.RunAttempt(context.Background(), a)
			if err != nil || res.Err != nil {
				t.Fatalf("%v %+v", err, res)
			}
			if _, err := os.Stat(filepath.Join(e.cwd, "ran")); (err == nil) != tc.ran {
				t.Errorf("the call ran: %v, want %v", err == nil, tc.ran)
			}
			if asked != tc.asked {
				t.Errorf("the approval saw %q, want %q", asked, tc.asked)
			}
			if got := lines(e.sess); !strings.Contains(got, "call:Clean up | result:"+tc.result) {
				t.Errorf("transcript %s, want the result %q", got, tc.result)
			}
		})
	}
}
