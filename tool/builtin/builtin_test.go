package builtin_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/builtin"
)

// The file tools over a workspace, called the way the agent loop calls
// them: through a registry, with the model's tool-call blocks.
func Example() {
	dir, _ := os.MkdirTemp("", "ws")
	defer os.RemoveAll(dir)

	ws, err := builtin.NewWorkspace(dir, nil)
	if err != nil {
		panic(err)
	}
	reg, err := tool.NewRegistry(builtin.New(ws)...)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for _, call := range []llm.Content{
		llm.ToolCall("1", "write", []byte(`{"path":"notes/todo.txt","content":"buy milk\nfix the “bug”\n"}`)),
		llm.ToolCall("2", "edit", []byte(`{"path":"notes/todo.txt","edits":[{"oldText":"fix the \"bug\"","newText":"ship it"}]}`)),
		llm.ToolCall("3", "read", []byte(`{"path":"notes/todo.txt"}`)),
		llm.ToolCall("4", "read", []byte(`{"path":"/etc/passwd"}`)),
	} {
		res := reg.Execute(ctx, call, nil)
		text := strings.ReplaceAll(res.Text(), ws.Root(), "<ws>")
		fmt.Printf("%s (error: %v): %s\n", call.Name, res.IsError, text)
	}
	// Output:
	// write (error: false): Created notes/todo.txt: wrote 27 bytes.
	// edit (error: false): Edited notes/todo.txt: 1 block replaced. Some old text matched only after normalising whitespace, quotes or dashes; read the file before editing it again.
	// read (error: false): buy milk
	// ship it
	// read (error: true): path "/etc/passwd" resolves to /etc/passwd, outside the workspace <ws>: only files inside the workspace can be used; give a path inside it (relative paths start at the workspace root)
}

// A read-only workspace offers no write or edit tool.
func ExampleNew_readOnly() {
	ws, err := builtin.NewWorkspace(".", &builtin.WorkspaceOptions{ReadOnly: true})
	if err != nil {
		panic(err)
	}
	for _, t := range builtin.New(ws) {
		fmt.Print(t.Name(), " ")
	}
	fmt.Println()
	// Output: read grep find ls
}
