package main

import (
	"os/exec"
	"strings"
	"testing"
)

// Issue 26: the terminal chat's libraries (charm.land) are linked into the
// CLI only; a program that embeds the library never gets them.
func TestChatLibrariesStayOutOfTheLibrary(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to list dependencies with")
	}
	out, err := exec.Command("go", "list", "-deps", "../../agent", "../../runner", "../../session", "../../tool/...", "../../llm/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	pkgs := strings.Fields(string(out))
	if len(pkgs) < 20 {
		t.Fatalf("go list named only %d packages: %s", len(pkgs), out)
	}
	for _, p := range pkgs {
		if strings.HasPrefix(p, "charm.land/") || strings.HasPrefix(p, "github.com/charmbracelet/") {
			t.Errorf("the library depends on %s", p)
		}
	}
	// And the check can fail: the CLI does depend on them.
	cli, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list .: %v\n%s", err, cli)
	}
	if !strings.Contains(string(cli), "charm.land/bubbletea/v2") {
		t.Errorf("the CLI's dependencies do not name bubbletea: the check above proves nothing")
	}
}
