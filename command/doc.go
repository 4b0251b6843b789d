// Package command is the table of slash commands every face of agentloop
// shares: the terminal chat offers them all, the gateway runs the ones that
// act on a session (POST /v1/sessions/{id}/command), and the ACP agent lists
// them to the editor (available_commands_update). One table means a command
// has one name, one argument hint and one summary wherever it is offered.
//
// The package only describes and parses commands; each face executes them
// with what it has at hand (the runner, the session store). It imports
// nothing of agentloop's own.
package command
