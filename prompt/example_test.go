package prompt_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/prompt"
)

// A run's system prompt: the default text naming the tools, then the
// workspace's AGENTS.md, then what the caller appends.
func ExampleBuild() {
	ws, err := os.MkdirTemp("", "prompt-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(ws)
	if err := os.WriteFile(filepath.Join(ws, "AGENTS.md"), []byte("Run go test before you commit."), 0o644); err != nil {
		panic(err)
	}
	system, files, err := prompt.Build(prompt.Options{
		Tools:     []llm.ToolSpec{{Name: "read", Description: "Read a file."}},
		Workspace: ws,
		Now:       time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC),
		Append:    "Answer in English.",
	})
	if err != nil {
		panic(err)
	}
	for _, line := range strings.Split(system, "\n") {
		if strings.HasPrefix(line, "- read") || strings.HasPrefix(line, "Current date") ||
			strings.HasPrefix(line, "Run go test") || strings.HasPrefix(line, "Answer") {
			fmt.Println(line)
		}
	}
	fmt.Println(filepath.Base(files[len(files)-1].Path)) // the most specific file comes last
	// Output:
	// - read: Read a file.
	// Current date: 2026-11-29 (Sunday)
	// Run go test before you commit.
	// Answer in English.
	// AGENTS.md
}
