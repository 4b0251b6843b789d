package tool

import "context"

// Origin names the subagent task a call comes from, for a person asked to
// approve it (a child session's calls reach the root session's asker) and
// for a face that shows approvals.
type Origin struct {
	// TaskID is the subagent task ("t_…"); ParentToolCallID the parent's
	// agent call that started it; Agent the agent type ("general"). The
	// child's session is the calling run's (runner.ScopeOf).
	TaskID, ParentToolCallID, Agent string
}

type originKey struct{}

// WithOrigin returns ctx carrying o: the calls of a run started under it
// say where they come from (OriginOf).
func WithOrigin(ctx context.Context, o Origin) context.Context {
	return context.WithValue(ctx, originKey{}, o)
}

// OriginOf returns the subagent task a call's ctx comes from; false for a
// call of a top-level run.
func OriginOf(ctx context.Context) (Origin, bool) {
	o, ok := ctx.Value(originKey{}).(Origin)
	return o, ok && o.TaskID != ""
}

// ParallelClassifier is implemented by tools whose calls may run beside
// other calls but only once the assistant message is complete, and that are
// not read-only: the agent tool, whose children change things (contract
// 8: only read-only calls start while the model is still speaking).
type ParallelClassifier interface {
	ParallelCall(call Call) bool
}

// Parallel reports whether call is of the parallel class
// (ParallelClassifier). Unknown tools are not.
func (r *Registry) Parallel(call Call) bool {
	t, ok := r.Get(call.Name)
	if !ok {
		return false
	}
	p, ok := t.(ParallelClassifier)
	return ok && p.ParallelCall(call)
}
