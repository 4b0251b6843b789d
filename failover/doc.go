// Package failover holds the pure decision tables that move a failing run
// along: which credential, which thinking level and which model to try
// next, and when to give up.
//
// Nothing here waits, reads files or calls a model: every function takes
// what happened and what is left and returns what to do, so the runner (and
// its tests) can apply the answer. The tables follow OpenClaw's embedded
// runner (reference openclaw-runtime.md §3.3-3.6 and §4.1-4.2):
//
//   - Next is the decision path the runner takes: the prompt-error cascade
//     as agentloop runs it, in reference
//     order: one auth refresh, then the next auth profile, then a lower
//     thinking level when the error says the level is unsupported, then
//     model failover. A rate limit with several profiles rotates at once; a
//     Retry-After longer than MaxRetryAfterWait rotates rather than waits; a
//     context overflow never fails over (it belongs to compaction);
//   - PickFallbackThinkingLevel reads an "unsupported thinking level" error;
//   - MergeRetryFailoverReason keeps the reason a retry-limit failover
//     reports;
//   - MaxIterations is a run's iteration cap;
//   - GateCandidate gates the models of a fallback chain; *FailoverError
//     carries a run from one model to the next.
//
// failover imports only llm (and the standard library). Package auth keeps
// the profiles and cooldowns these decisions are made about; package runner
// applies the decisions.
package failover
