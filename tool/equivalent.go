package tool

import "context"

// Equivalent maps an external engine's own tool call (Claude Code's Read
// or Bash, which are not tools of the run) to the call of ours it amounts
// to, so that an Approval judges it as it judges our calls: the permission
// rules and the approval mode see as, and readOnly says whether the
// engine's call only reads. ok is false for a call it does not know, which
// is judged as it is.
type Equivalent func(call Call) (as Call, readOnly, ok bool)

type equivalentKey struct{}

// WithEquivalent returns ctx carrying f: Approval.Decide with that ctx
// judges a call by its equivalent. A harness puts it on the ctx of the
// engine's permission question; the call a hook rewrote is mapped again.
func WithEquivalent(ctx context.Context, f Equivalent) context.Context {
	return context.WithValue(ctx, equivalentKey{}, f)
}

// judged is the call a policy decides and whether it only reads.
func (a *Approval) judged(ctx context.Context, call Call) (Call, bool) {
	if f, _ := ctx.Value(equivalentKey{}).(Equivalent); f != nil {
		if as, ro, ok := f(call); ok {
			return as, ro
		}
	}
	return call, a.ReadOnly != nil && a.ReadOnly(call)
}
