// Package harness decides which engine runs an attempt: the built-in one
// (package agent, see harness/builtin) or an external agent that owns its
// own native session (Claude Code, pi, any ACP agent), driven as a
// subprocess while agentloop keeps the transcript, tool policy, approvals
// and session selection.
//
// This room holds the contract and the core's bookkeeping around it:
// Harness and its Attempt and Result, selection (model-scoped, then
// provider-scoped, then auto, then built-in; a preflight error alone moves
// on), the native-session Binding, the transcript mirror with stable
// per-item ids, tool terminal reports (Tracker), settled-turn finalization
// and same-turn continuation. The engines live in sub-packages.
//
// It imports llm, tool, agent and session; runner imports it.
package harness
