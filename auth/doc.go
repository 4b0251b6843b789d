// Package auth keeps a provider's auth profiles usable: which credential a
// run uses, which are cooling down after a failure, and for how long.
//
// Profiles are the "profiles" of a provider in the models file (package
// llm parses them, package llm/provider resolves a profile's key by id);
// ProfileIDs lists them in file order. A provider without profiles has one
// implicit profile, DefaultProfile (""), standing for its ordinary key.
//
// A Store records failures and successes in a state file,
// $AGENTLOOP_HOME/auth-state.json, written atomically under its own lock
// (auth-state.json.lock) and read again before every decision, so a
// restarted process and a second process see the same cooldowns. A Store
// opened with Config.InMemory keeps the same state in memory instead, for
// its own users only (the runner's runs when no state file is given). The
// cooldowns follow OpenClaw's auth-profile usage rules (reference
// openclaw-runtime.md §4.3):
//
//   - a failure puts the profile in cooldown for 30 s, 60 s, then 5 min
//     (Cooldown); billing disables it for 5 h doubling up to 24 h, a revoked
//     key (auth_permanent) for 10 min doubling up to 60 min (DisabledFor);
//   - counters restart when the last failure is over 24 h old, or when the
//     previous cooldown has run out: there is no escalation after a quiet
//     period;
//   - a failure inside an active cooldown counts, but does not move its end;
//   - a rate limit cools the profile for the model that failed only; a
//     second rate limit on another model widens it to the whole profile;
//   - timeouts, network failures and overflows never mark a profile;
//     OpenRouter profiles are never marked (OpenRouter rotates keys itself).
//
// Select picks the profile for a call: the session's preferred profile
// while it is usable (prompt caches stay warm), else the next usable one in
// file order; when none is left it returns an *ExhaustedError, and the
// caller fails over to another model. Status reports every profile for
// `agentloop auth status`.
//
// The clock is injected (Config.Now). auth imports llm, internal/atomicfile
// (the state file's replacement) and the standard library only.
package auth
