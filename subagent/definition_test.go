package subagent

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestLoadDefinitions(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Claude Code's format: a comma-separated tools line, a model alias.
	write(filepath.Join(ws, ".claude", "agents", "reviewer.md"), "---\nname: reviewer\ndescription: Reviews code for bugs\ntools: Read, Grep, Glob\nmodel: sonnet\n---\nYou review code.\n")
	// A YAML list, a model of ours; the workspace's .agentloop replaces the
	// home's definition of the same name.
	write(filepath.Join(home, "agents", "tester.md"), "---\nname: tester\ndescription: old\n---\nold prompt\n")
	write(filepath.Join(ws, ".agentloop", "agents", "tester.md"), "---\nname: tester\ndescription: \"Runs the tests\"\ntools:\n  - bash\n  - read\nmodel: openai/gpt-5-mini\n---\n\nRun the tests.\n")
	write(filepath.Join(ws, ".agentloop", "agents", "broken.md"), "no front matter\n")
	defs, warnings := LoadDefinitions(DefinitionDirs(home, ws)...)
	if len(warnings) != 1 {
		t.Fatalf("warnings %q, want one for broken.md", warnings)
	}
	byName := map[string]Definition{}
	for _, d := range defs {
		byName[d.Name] = d
	}
	if len(defs) != 3 || byName[GeneralAgent].Path != "" {
		t.Fatalf("definitions %+v", defs)
	}
	r := byName["reviewer"]
	if r.Description != "Reviews code for bugs" || !slices.Equal(r.Tools, []string{"Read", "Grep", "Glob"}) || r.Model != "" || r.SystemPrompt != "You review code." {
		t.Fatalf("reviewer %+v", r)
	}
	if toolName("Glob") != "find" || toolName("Task") != "agent" {
		t.Fatal("Claude Code's tool names are not mapped")
	}
	if toolName("MultiEdit") != "edit" || toolName("mcp__gh__x") != "mcp__gh__x" { // the one table of package tool
		t.Fatal("Claude Code's tool names are not mapped as its permission rules map them")
	}
	te := byName["tester"]
	if te.Description != "Runs the tests" || !slices.Equal(te.Tools, []string{"bash", "read"}) || te.Model != "openai/gpt-5-mini" || te.SystemPrompt != "Run the tests." {
		t.Fatalf("tester %+v", te)
	}
}
