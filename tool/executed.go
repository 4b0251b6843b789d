package tool

import "context"

type executedKey struct{}

// WithExecuted returns ctx saying whether the call a result hook is given
// was executed: the tool ran, successfully or not. A call refused before
// it ran (by a hook, the approval, loop detection), a tool that does not
// exist, arguments that do not validate, and a call skipped or aborted
// before it started were not. The agent sets it on the context of its
// tool_result_persist hook, so that hooks that must run only after the
// tool did (Claude Code's PostToolUse and PostToolUseFailure) can tell.
func WithExecuted(ctx context.Context, ran bool) context.Context {
	return context.WithValue(ctx, executedKey{}, ran)
}

// Executed reports what WithExecuted said of ctx; known is false when
// nothing did (a caller that fires the hooks itself).
func Executed(ctx context.Context) (ran, known bool) {
	ran, known = ctx.Value(executedKey{}).(bool)
	return ran, known
}
