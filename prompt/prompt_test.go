package prompt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/llm"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestBuildOrderAndPreference(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	ws := filepath.Join(root, "a", "b")
	write(t, filepath.Join(home, "AGENTS.md"), "HOME RULES")
	write(t, filepath.Join(root, "a", "CLAUDE.md"), "PARENT CLAUDE")
	write(t, filepath.Join(ws, "AGENTS.md"), "WORKSPACE AGENTS")
	write(t, filepath.Join(ws, "CLAUDE.md"), "WORKSPACE CLAUDE (ignored: AGENTS.md wins)")

	got, files, err := Build(Options{
		Workspace: ws, Home: home,
		Tools:  []llm.ToolSpec{{Name: "read", Description: "Read a file.\nMore detail."}},
		Now:    time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC),
		Append: "APPENDED",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 {
		t.Fatalf("files = %+v, want 3", files)
	}
	order := []string{"- read: Read a file.", "Working directory: " + ws, "2026-11-29 (Sunday)", "HOME RULES", "PARENT CLAUDE", "WORKSPACE AGENTS", "APPENDED"}
	last := -1
	for _, s := range order {
		i := strings.Index(got, s)
		if i < 0 {
			t.Fatalf("prompt lacks %q:\n%s", s, got)
		}
		if i < last {
			t.Errorf("%q is out of order", s)
		}
		last = i
	}
	if strings.Contains(got, "ignored") || strings.Contains(got, "More detail") {
		t.Errorf("prompt has text it should not:\n%s", got)
	}
}

func TestReplaceKeepsInstructions(t *testing.T) {
	ws := t.TempDir()
	write(t, filepath.Join(ws, "AGENTS.md"), "RULES")
	got, _, err := Build(Options{Workspace: ws, Replace: "You are a pirate."})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, "You are a pirate.") || !strings.Contains(got, "RULES") || strings.Contains(got, "agentloop") {
		t.Errorf("replace prompt = %q", got)
	}
	got, _, _ = Build(Options{Workspace: ws, NoContextFiles: true})
	if strings.Contains(got, "RULES") || !strings.Contains(got, "No tools are available") {
		t.Errorf("prompt without context files = %q", got)
	}
}

func TestContextFileThatIsADirectory(t *testing.T) {
	ws := t.TempDir()
	if err := os.Mkdir(filepath.Join(ws, "AGENTS.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(ws, "CLAUDE.md"), "CLAUDE RULES")
	files, err := FindContextFiles("", ws)
	if err != nil {
		t.Fatalf("a directory named AGENTS.md failed the prompt: %v", err)
	}
	if len(files) != 1 || files[0].Path != filepath.Join(ws, "CLAUDE.md") {
		t.Errorf("files = %+v, want only CLAUDE.md", files)
	}
}
