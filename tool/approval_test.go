package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
)

type roTool struct {
	Func
	ro bool
}

func (t *roTool) ReadOnly() bool { return t.ro }

// shell is read-only per call, like bash.
type shell struct{ Func }

func (*shell) ReadOnlyCall(c Call) bool { return string(c.Args) == `{"command":"ls"}` }

func approvalRegistry(t *testing.T) *Registry {
	t.Helper()
	run := func(context.Context, Call, func(Partial)) (Result, error) { return TextResult("ok"), nil }
	reg, err := NewRegistry(
		&roTool{Func: Func{ToolName: "read", Run: run}, ro: true},
		&roTool{Func: Func{ToolName: "write", Run: run}, ro: false},
		&Func{ToolName: "bash", Run: run}, // exclusive, no ReadOnly
		&Func{ToolName: "grep", Run: run, Concurrent: true},
		&shell{Func{ToolName: "sh", Run: run}},
	)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func TestRegistryReadOnly(t *testing.T) {
	reg := approvalRegistry(t)
	for _, tt := range []struct {
		name, args string
		want       bool
	}{
		{"read", `{}`, true}, {"write", `{}`, false}, {"bash", `{}`, false}, {"grep", `{}`, true}, {"nope", `{}`, false},
		{"sh", `{"command":"ls"}`, true}, {"sh", `{"command":"rm x"}`, false},
	} {
		if got := reg.ReadOnly(Call{Name: tt.name, Args: json.RawMessage(tt.args)}); got != tt.want {
			t.Errorf("ReadOnly(%s %s) = %v, want %v", tt.name, tt.args, got, tt.want)
		}
	}
}

func TestApproval(t *testing.T) {
	reg := approvalRegistry(t)
	yes := func(context.Context, Call, string) (Answer, error) { return AnswerYes, nil }
	no := func(context.Context, Call, string) (Answer, error) { return AnswerNo, nil }
	broken := func(context.Context, Call, string) (Answer, error) { return AnswerNo, errors.New("stdin closed") }
	tests := []struct {
		name      string
		mode      string
		ask       Asker
		call      string
		allow     bool
		reasonHas string
		wantAsked bool
	}{
		{"auto allows writes", "auto", nil, "write", true, "", false},
		{"default is auto", "", nil, "bash", true, "", false},
		{"never allows reads", "never", nil, "read", true, "", false},
		{"never allows concurrency-safe", "never", nil, "grep", true, "", false},
		{"never denies writes", "never", nil, "write", false, `approval mode "never"`, false},
		{"never denies bash", "never", yes, "bash", false, "only allows calls that read", false},
		{"ask allows reads without asking", "ask", yes, "read", true, "", false},
		{"ask asks for writes: yes", "ask", yes, "write", true, "", true},
		{"ask asks for writes: no", "ask", no, "write", false, "Denied by the user", true},
		{"ask without a terminal denies", "ask", nil, "bash", false, "no one to ask", false},
		{"asker failing denies", "ask", broken, "bash", false, "stdin closed", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			policy, err := ApprovalPolicyFor(tt.mode)
			if err != nil {
				t.Fatal(err)
			}
			asked := false
			var ask Asker
			if tt.ask != nil {
				ask = func(ctx context.Context, c Call, r string) (Answer, error) {
					asked = true
					return tt.ask(ctx, c, r)
				}
			}
			a := &Approval{Policy: policy, Ask: ask, ReadOnly: reg.ReadOnly}
			allow, reason := a.Approve(context.Background(), Call{ID: "1", Name: tt.call, Args: json.RawMessage(`{}`)})
			if allow != tt.allow {
				t.Errorf("allow = %v, want %v (reason %q)", allow, tt.allow, reason)
			}
			if !strings.Contains(reason, tt.reasonHas) {
				t.Errorf("reason %q does not contain %q", reason, tt.reasonHas)
			}
			if allow && reason != "" {
				t.Errorf("an allowed call has reason %q", reason)
			}
			if asked != tt.wantAsked {
				t.Errorf("asked = %v, want %v", asked, tt.wantAsked)
			}
		})
	}
}

func TestApprovalModeUnknown(t *testing.T) {
	if _, err := ApprovalPolicyFor("sometimes"); err == nil || !strings.Contains(err.Error(), "auto, ask or never") {
		t.Fatalf("err = %v", err)
	}
}

func TestApprovalAlwaysIsRememberedPerTool(t *testing.T) {
	var mu sync.Mutex
	asked := map[string]int{}
	a := &Approval{Policy: ApproveAsk, Ask: func(_ context.Context, c Call, _ string) (Answer, error) {
		mu.Lock()
		defer mu.Unlock()
		asked[c.Name]++
		if c.Name == "bash" {
			return AnswerAlways, nil
		}
		return AnswerYes, nil
	}}
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if ok, r := a.Approve(ctx, Call{ID: fmt.Sprint(i), Name: "bash"}); !ok {
				t.Errorf("bash refused: %s", r)
			}
		}()
	}
	wg.Wait()
	for range 2 {
		if ok, _ := a.Approve(ctx, Call{Name: "write"}); !ok {
			t.Error("write refused")
		}
	}
	if asked["bash"] != 1 {
		t.Errorf("bash asked %d times, want 1 (always remembered)", asked["bash"])
	}
	if asked["write"] != 2 {
		t.Errorf("write asked %d times, want 2 (yes is not remembered)", asked["write"])
	}
	if d := a.Decide(ctx, Call{Name: "bash"}); d.Verdict != VerdictAllow {
		t.Errorf("Decide after always = %v, want allow", d.Verdict)
	}
}

func TestApprovalCustomPolicyReason(t *testing.T) {
	a := &Approval{Policy: func(_ context.Context, c Call, _ bool) Decision {
		if c.Name == "write" {
			return Decision{Verdict: VerdictDeny}
		}
		return Decision{Verdict: VerdictAsk, Reason: "touches the network"}
	}, Ask: func(_ context.Context, _ Call, reason string) (Answer, error) {
		if reason != "touches the network" {
			return AnswerNo, fmt.Errorf("reason %q not passed to the asker", reason)
		}
		return AnswerYes, nil
	}}
	if ok, r := a.Approve(context.Background(), Call{Name: "write"}); ok || !strings.Contains(r, "write call was not approved") {
		t.Errorf("write: %v %q", ok, r)
	}
	if ok, r := a.Approve(context.Background(), Call{Name: "fetch"}); !ok {
		t.Errorf("fetch: %v %q", ok, r)
	}
}

// promptWriter is a terminal's screen: it keeps what is shown and signals
// each question, so the test answers only once a question is asked, as a
// person would (a line typed before the question is dropped as stale).
type promptWriter struct {
	mu    sync.Mutex
	b     strings.Builder
	asked chan struct{}
}

func (p *promptWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	p.b.Write(b)
	p.mu.Unlock()
	if strings.Contains(string(b), "Allow?") {
		p.asked <- struct{}{}
	}
	return len(b), nil
}

func (p *promptWriter) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.b.String()
}

func TestLineAsker(t *testing.T) {
	r, w := io.Pipe()
	out := &promptWriter{asked: make(chan struct{}, 16)}
	ask := LineAsker(r, out)
	a := &Approval{Policy: ApproveAsk, Ask: ask}
	ctx := context.Background()

	answers := []struct {
		line  string
		call  string
		allow bool
	}{
		{"y", "write", true},
		{"nope", "write", false},
		{" Always ", "bash", true},
	}
	for _, ans := range answers {
		go func() {
			<-out.asked
			_, _ = io.WriteString(w, ans.line+"\n")
		}()
		ok, reason := a.Approve(ctx, Call{Name: ans.call, Args: json.RawMessage(`{"command":"make"}`)})
		if ok != ans.allow {
			t.Errorf("answer %q: allow %v (%s)", ans.line, ok, reason)
		}
	}
	// always: no question, no line needed.
	if ok, _ := a.Approve(ctx, Call{Name: "bash"}); !ok {
		t.Error("always was not remembered")
	}
	if n := strings.Count(out.String(), "Allow? [y]es, [n]o, [a]lways"); n != 3 {
		t.Errorf("%d prompts, want 3:\n%s", n, out.String())
	}
	if !strings.Contains(out.String(), `The agent wants to run write {"command":"make"}`) {
		t.Errorf("prompt does not show the call:\n%s", out.String())
	}
	// What the model wrote cannot drive the terminal the person reads.
	var shown strings.Builder
	sneaky := LineAsker(strings.NewReader("n\n"), &shown)
	if ans, _ := sneaky(ctx, Call{Name: "bash\r", Args: json.RawMessage("{\"command\":\"rm -rf ~\u009b2K\x1b[1A\"}")}, "why\x1b]0;x\x07"); ans != AnswerNo {
		t.Errorf("answer %v", ans)
	}
	if got := shown.String(); strings.ContainsAny(got, "\r\x1b\x07\u009b") {
		t.Errorf("control characters reached the terminal: %q", got)
	}

	// A cancelled run refuses at once.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if ans, err := ask(cctx, Call{Name: "write"}, ""); ans != AnswerNo || err == nil {
		t.Errorf("cancelled: %v %v", ans, err)
	}
	// End of input refuses with a reason.
	w.Close()
	if ok, reason := a.Approve(ctx, Call{Name: "write"}); ok || !strings.Contains(reason, "EOF") {
		t.Errorf("EOF: %v %q", ok, reason)
	}
}

// A line typed while no question waits (here: after a question whose run
// was cancelled) must not answer the next question.
func TestLineAskerDropsStaleLines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, w := io.Pipe()
		defer w.Close()
		ask := LineAsker(r, io.Discard)
		cctx, cancel := context.WithCancel(context.Background())
		go cancel()
		if ans, err := ask(cctx, Call{Name: "rm"}, ""); ans != AnswerNo || !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled question: %v %v", ans, err)
		}
		go func() { _, _ = io.WriteString(w, "y\n") }() // the stale answer
		synctest.Wait()                                 // read, and waiting to be delivered
		go func() {
			synctest.Wait() // the next question is waiting too
			_, _ = io.WriteString(w, "n\n")
		}()
		if ans, err := ask(context.Background(), Call{Name: "rm"}, ""); ans != AnswerNo || err != nil {
			t.Errorf("the next question got %v, %v; want the fresh no, not the stale yes", ans, err)
		}
	})
}

// A call from a subagent's run names its task in the question, so the
// person knows which agent asks.
func TestLineAskerNamesTheSubagentTask(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	out := &promptWriter{asked: make(chan struct{}, 4)}
	ask := LineAsker(r, out)
	go func() {
		<-out.asked
		_, _ = io.WriteString(w, "y\n")
	}()
	ctx := WithOrigin(context.Background(), Origin{TaskID: "t_1234", Agent: "general", ParentToolCallID: "call_1"})
	if ans, err := ask(ctx, Call{Name: "bash", Args: json.RawMessage(`{"command":"rm x"}`)}, ""); err != nil || ans != AnswerYes {
		t.Fatalf("answer %v, %v", ans, err)
	}
	out.mu.Lock()
	got := out.b.String()
	out.mu.Unlock()
	if !strings.Contains(got, "Subagent task t_1234 (general) wants to run bash") {
		t.Fatalf("question %q does not name the task", got)
	}
	if _, ok := OriginOf(context.Background()); ok {
		t.Fatal("a plain context has an origin")
	}
}
