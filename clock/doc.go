// Package clock is the one time source of agentloop: every wait, timeout,
// backoff and cooldown (the runner's retries and run timer, session lock
// waits, auth-profile cooldowns) reads a [Clock], so tests inject one or run
// the [Real] clock inside a testing/synctest bubble.
//
// Message timestamps are a different thing: packages that stamp messages
// (agent, compact, session transforms, the faux model) take a
// Now func() int64 of Unix milliseconds, so a transcript can be made
// deterministic without faking the waits. [Clock.Now] can serve as one
// through [UnixMilli].
//
// The package imports only the standard library; any package may use it.
package clock
