package tool

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
)

// Verdict is an approval policy's decision on one call.
type Verdict uint8

// The verdicts.
const (
	// VerdictAllow runs the call.
	VerdictAllow Verdict = iota
	// VerdictDeny refuses it; the model reads the reason.
	VerdictDeny
	// VerdictAsk asks a person.
	VerdictAsk
)

func (v Verdict) String() string {
	switch v {
	case VerdictAllow:
		return "allow"
	case VerdictDeny:
		return "deny"
	case VerdictAsk:
		return "ask"
	}
	return fmt.Sprintf("Verdict(%d)", v)
}

// Decision is a verdict with the reason for it. A deny's reason is what the
// model reads; an ask's reason is shown to the person asked.
type Decision struct {
	Verdict Verdict
	Reason  string
}

// ApprovalPolicy decides a call before anyone is asked. readOnly says
// whether the call only reads (see Registry.ReadOnly).
type ApprovalPolicy func(ctx context.Context, call Call, readOnly bool) Decision

// ApproveAuto allows every call: what the tool policy let through runs. It
// is the default.
func ApproveAuto(context.Context, Call, bool) Decision { return Decision{Verdict: VerdictAllow} }

// ApproveNever allows read-only calls and denies every other one.
func ApproveNever(_ context.Context, call Call, readOnly bool) Decision {
	if readOnly {
		return Decision{Verdict: VerdictAllow}
	}
	return Decision{Verdict: VerdictDeny, Reason: fmt.Sprintf(
		"Denied: this run only allows calls that read (approval mode %q), and this %s call could change something. Do not retry it; carry on with read-only tools or tell the user what you would have done.",
		"never", call.Name)}
}

// ApproveAsk allows read-only calls and asks a person about every other
// one.
func ApproveAsk(_ context.Context, call Call, readOnly bool) Decision {
	if readOnly {
		return Decision{Verdict: VerdictAllow}
	}
	return Decision{Verdict: VerdictAsk}
}

// Approval modes, as the CLI's --approve flag names them.
const (
	ApprovalModeAuto  = "auto"
	ApprovalModeAsk   = "ask"
	ApprovalModeNever = "never"
)

// ApprovalPolicyFor returns the policy of a mode name; "" is auto.
func ApprovalPolicyFor(mode string) (ApprovalPolicy, error) {
	switch mode {
	case "", ApprovalModeAuto:
		return ApproveAuto, nil
	case ApprovalModeAsk:
		return ApproveAsk, nil
	case ApprovalModeNever:
		return ApproveNever, nil
	}
	return nil, fmt.Errorf("unknown approval mode %q: use auto, ask or never", mode)
}

// Answer is a person's reply to an approval question.
type Answer uint8

// The answers.
const (
	AnswerNo     Answer = iota // refuse this call
	AnswerYes                  // run this call
	AnswerAlways               // run this call and every later call of the same tool in this run
)

// Asker asks a person whether a call may run; reason, possibly empty, says
// why they are asked. It is called for one call at a time. An error (no
// terminal, the person went away) refuses the call with the error's text.
type Asker func(ctx context.Context, call Call, reason string) (Answer, error)

// Approval decides each call of one run: the policy first, then, for an
// ask, the Asker. "Always" answers are remembered per tool name for the
// life of the Approval, so make one per run. Its methods are safe for
// concurrent use; questions are asked one at a time.
//
// Read-only-ness comes from ReadOnly, normally Registry.ReadOnly: a call
// is read-only when the tool declares itself read-only (ReadOnlyTool),
// classes the call as read-only (ReadOnlyCallClassifier, so a bash call of
// `ls` counts), or classes it as safe to run beside others
// (ConcurrencyClassifier).
type Approval struct {
	// Policy decides first; nil is ApproveAuto.
	Policy ApprovalPolicy
	// Ask asks a person; nil means nobody can be asked (no terminal), and
	// an ask becomes a deny whose reason says so.
	Ask Asker
	// ReadOnly classifies calls; nil counts no call as read-only.
	ReadOnly func(Call) bool

	askMu  sync.Mutex // one question at a time
	mu     sync.Mutex
	always map[string]bool
}

// Decide returns the policy's decision on call (on its equivalent, when
// ctx carries an Equivalent that knows it), with an ask turned into an
// allow when the person already answered "always" for its tool.
func (a *Approval) Decide(ctx context.Context, call Call) Decision {
	policy := a.Policy
	if policy == nil {
		policy = ApproveAuto
	}
	judged, ro := a.judged(ctx, call)
	d := policy(ctx, judged, ro)
	if d.Verdict == VerdictAsk && a.remembered(call.Name) {
		return Decision{Verdict: VerdictAllow}
	}
	return d
}

// Resolve carries out a decision: allow and deny as they are, ask by
// asking. reason is what the model reads when the call is refused.
func (a *Approval) Resolve(ctx context.Context, call Call, d Decision) (allow bool, reason string) {
	switch d.Verdict {
	case VerdictAllow:
		return true, ""
	case VerdictDeny:
		if d.Reason == "" {
			return false, fmt.Sprintf("Denied: the %s call was not approved. Do not retry it.", call.Name)
		}
		return false, d.Reason
	}
	if a.remembered(call.Name) {
		return true, ""
	}
	if a.Ask == nil {
		return false, fmt.Sprintf(
			"Denied: the %s call needs a person's approval, and there is no one to ask in this run (no terminal). Do not retry it; tell the user what you wanted to do, or run with --approve auto.",
			call.Name)
	}
	a.askMu.Lock()
	defer a.askMu.Unlock()
	if a.remembered(call.Name) { // answered "always" while we waited our turn
		return true, ""
	}
	if err := ctx.Err(); err != nil {
		return false, "Denied: the run was cancelled while waiting for approval."
	}
	ans, err := a.Ask(ctx, call, d.Reason)
	switch {
	case err != nil:
		return false, fmt.Sprintf("Denied: the %s call could not be approved (%v). Do not retry it.", call.Name, err)
	case ans == AnswerAlways:
		a.mu.Lock()
		if a.always == nil {
			a.always = make(map[string]bool)
		}
		a.always[call.Name] = true
		a.mu.Unlock()
		return true, ""
	case ans == AnswerYes:
		return true, ""
	}
	return false, fmt.Sprintf("Denied by the user: the %s call was not approved. Do not retry it; ask the user how to proceed.", call.Name)
}

// Approve decides and resolves call. Its shape is the agent loop's Approve
// hook.
func (a *Approval) Approve(ctx context.Context, call Call) (allow bool, reason string) {
	return a.Resolve(ctx, call, a.Decide(ctx, call))
}

func (a *Approval) remembered(name string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.always[name]
}

// ReadOnlyTool is implemented by tools that say whether they only read.
// read, grep, find and ls do.
type ReadOnlyTool interface {
	ReadOnly() bool
}

// ReadOnlyCallClassifier is implemented by tools whose calls differ: bash
// is read-only for `ls` and not for `rm`.
type ReadOnlyCallClassifier interface {
	ReadOnlyCall(call Call) bool
}

// ReadOnly reports whether call only reads: its tool declares itself
// read-only (ReadOnlyTool), classes this call as read-only
// (ReadOnlyCallClassifier), or classes it as safe to run beside other calls
// (ConcurrencyClassifier: a call that may overlap others changes nothing
// they could see). Unknown tools are not read-only.
func (r *Registry) ReadOnly(call Call) bool {
	t, ok := r.Get(call.Name)
	if !ok {
		return false
	}
	if ro, ok := t.(ReadOnlyTool); ok && ro.ReadOnly() {
		return true
	}
	if ro, ok := t.(ReadOnlyCallClassifier); ok && ro.ReadOnlyCall(call) {
		return true
	}
	c, ok := t.(ConcurrencyClassifier)
	return ok && c.ConcurrencySafe(call)
}

// LineAsker returns an Asker that shows each call on out and reads the
// answer, one line, from in: y or yes runs the call, a or always runs it
// and every later call of the tool, anything else refuses it. It is meant
// for a terminal; the caller decides whether there is one. A cancelled ctx
// refuses the call at once. A line typed while no question was waiting
// (after a cancelled one, say) answers nothing: it is dropped, so a stale
// "y" can never approve a later call.
//
// From the first question on, a goroutine reads in until it ends. Make one
// LineAsker per input and share it between runs: a second one over the
// same terminal would compete with the first for every line typed.
func LineAsker(in io.Reader, out io.Writer) Asker {
	type line struct {
		text string
		gen  int64 // the question being asked when the line was read
	}
	lines := make(chan line)
	var (
		once    sync.Once
		readErr error
		gen     atomic.Int64
	)
	start := func() {
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(in)
			for sc.Scan() {
				lines <- line{sc.Text(), gen.Load()}
			}
			readErr = sc.Err()
		}()
	}
	return func(ctx context.Context, call Call, reason string) (Answer, error) {
		question := gen.Add(1)
		args := string(call.Args)
		if len(args) > 500 {
			args = strings.ToValidUTF8(args[:500], "") + "…"
		}
		name := visible(call.Name)
		who := "The agent"
		if o, ok := OriginOf(ctx); ok {
			who = fmt.Sprintf("Subagent task %s (%s)", visible(o.TaskID), visible(o.Agent))
		}
		fmt.Fprintf(out, "\n%s wants to run %s %s\n", who, name, visible(args))
		if reason != "" {
			fmt.Fprintf(out, "  (%s)\n", visible(reason))
		}
		fmt.Fprintf(out, "Allow? [y]es, [n]o, [a]lways allow %s in this run: ", name)
		once.Do(start)
		for {
			select {
			case <-ctx.Done():
				return AnswerNo, context.Cause(ctx)
			case l, ok := <-lines:
				if !ok {
					err := readErr
					if err == nil {
						err = io.EOF
					}
					return AnswerNo, fmt.Errorf("no answer: %w", err)
				}
				if l.gen != question {
					continue // typed before this question was asked
				}
				switch strings.ToLower(strings.TrimSpace(l.text)) {
				case "y", "yes":
					return AnswerYes, nil
				case "a", "always":
					return AnswerAlways, nil
				}
				return AnswerNo, nil
			}
		}
	}
}

// visible replaces the control characters of s with U+FFFD, so that what a
// model wrote cannot move the cursor or rewrite the question a person is
// answering (a carriage return, an escape sequence, a C1 CSI).
func visible(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' || r >= 0x7f && r < 0xa0 {
			return '\uFFFD'
		}
		return r
	}, s)
}
