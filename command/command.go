package command

import (
	"fmt"
	"strings"
)

// Face is a set of the places a command is offered.
type Face uint8

// The faces of agentloop that offer slash commands.
const (
	// Chat is the terminal chat (agentloop chat).
	Chat Face = 1 << iota
	// Gateway is agentloop serve's POST /v1/sessions/{id}/command.
	Gateway
	// ACP is the editor agent (agentloop acp).
	ACP
)

// Spec describes one slash command.
type Spec struct {
	// Name is the command without its slash: "compact".
	Name string
	// Args is a hint of what follows the name, "" when nothing does:
	// "[instructions]".
	Args string
	// Summary says in a few words what the command does.
	Summary string
	// Faces are where the command is offered.
	Faces Face
}

// Offered reports whether the command is offered on face f.
func (s Spec) Offered(f Face) bool { return s.Faces&f != 0 }

// The names of the commands that act on a session, which every face runs.
const (
	Compact  = "compact"
	Model    = "model"
	Thinking = "thinking"
)

const all = Chat | Gateway | ACP

// table is in the order /help lists it.
var table = []Spec{
	{Name: "help", Summary: "list the commands and keys", Faces: Chat},
	{Name: "new", Summary: "start a new session", Faces: Chat},
	{Name: "resume", Args: "[id]", Summary: "continue an earlier session", Faces: Chat},
	{Name: "fork", Summary: "copy this session into a new one and continue there", Faces: Chat},
	{Name: Compact, Args: "[instructions]", Summary: "summarise the older history now; the words say what to keep", Faces: all},
	{Name: Model, Args: "[provider/id]", Summary: "show or change the model of the next runs", Faces: all},
	{Name: Thinking, Args: "<off|minimal|low|medium|high|xhigh>", Summary: "set how much the model thinks", Faces: all},
	{Name: "approve", Args: "<ask|auto|never>", Summary: "set when tool calls need approval", Faces: Chat},
	{Name: "tools", Summary: "list the tools the model is offered", Faces: Chat | ACP},
	{Name: "session", Summary: "show the session's id, file and size", Faces: Chat},
	{Name: "cost", Summary: "show the tokens and cost so far", Faces: Chat | ACP},
	{Name: "export", Args: "[file]", Summary: "write the transcript as JSONL", Faces: Chat},
	{Name: "copy", Summary: "copy the last reply to the clipboard", Faces: Chat},
	{Name: "agents", Args: "[stop <id>]", Summary: "list the subagents, or stop one", Faces: Chat},
	{Name: "hooks", Summary: "list the hooks that run", Faces: Chat},
	{Name: "mcp", Summary: "list the MCP servers and their state", Faces: Chat},
	{Name: "quit", Summary: "leave the chat", Faces: Chat},
}

// All returns the commands offered on face f, in the table's order; a
// zero f returns every command. The slice is the caller's.
func All(f Face) []Spec {
	out := make([]Spec, 0, len(table))
	for _, s := range table {
		if f == 0 || s.Offered(f) {
			out = append(out, s)
		}
	}
	return out
}

// Lookup returns the command called name (without the slash).
func Lookup(name string) (Spec, bool) {
	for _, s := range table {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

// Parse splits a line typed by a user into a command and its arguments.
// ok is false when the line is not a command (it does not start with one
// slash followed by a letter), so "/tmp/x is big" and "//" go to the model
// as text. A command that is not in the table is an error that names the
// command and points to /help; it must not reach the model either.
func Parse(line string) (name, args string, ok bool, err error) {
	line = strings.TrimSpace(line)
	if len(line) < 2 || line[0] != '/' || !isLetter(line[1]) {
		return "", "", false, nil
	}
	name, args, _ = strings.Cut(line[1:], " ")
	if strings.ContainsRune(name, '/') {
		return "", "", false, nil
	}
	if _, known := Lookup(name); !known {
		return name, "", true, fmt.Errorf("/%s is not a command; /help lists them", name)
	}
	return name, strings.TrimSpace(args), true, nil
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
