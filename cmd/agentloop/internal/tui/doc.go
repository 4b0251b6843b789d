// Package tui is agentloop's terminal chat (agentloop chat): a bubbletea
// model that is a pure reducer over the protocol v2 events of a run
// (runner.Event) and the keys a person presses. What it drives is a
// Backend: the in-process Runner of cmd/agentloop, or a gateway client
// later; the model's code is the same for both.
//
// Rendering is inline by default: a finished block (the user's message,
// an assistant text block, a finished tool call, a notice) is committed,
// printed once into the terminal's scrollback with tea.Println and never
// redrawn; only the live region (View) at the bottom changes. In
// fullscreen mode the committed blocks go to a viewport on the alternate
// screen instead.
//
// Only cmd/agentloop imports this package, so the charm.land modules stay
// out of the library's dependency graph.
package tui
