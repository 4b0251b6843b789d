package auth

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A learned window is kept in the state file for the next process, only
// shrinks, sits beside the cooldowns without disturbing them, and is
// forgotten per provider.
func TestLearnedWindows(t *testing.T) {
	c := newClock()
	path := filepath.Join(t.TempDir(), StateFileName)
	s := open(t, path, c)
	if n, err := s.LearnedWindow("openai", "m"); n != 0 || err != nil {
		t.Fatalf("before: %d %v", n, err)
	}
	if _, err := os.Stat(path + ".lock"); err == nil {
		t.Errorf("looking up a window in a missing state file created its lock")
	}
	if err := s.LearnWindow("openai", "m", 15360, 128000); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MarkFailure("openai", "", "m", "rate_limit"); err != nil {
		t.Fatal(err)
	}
	if err := s.LearnWindow("openai", "m", 20000, 128000); err != nil { // larger: kept as it was
		t.Fatal(err)
	}
	if err := s.LearnWindow("local", "qwen", 4096, 32768); err != nil {
		t.Fatal(err)
	}
	again := open(t, path, c)
	if n, _ := again.LearnedWindow("openai", "m"); n != 15360 {
		t.Errorf("after reopening: %d", n)
	}
	ws, err := again.LearnedWindows()
	if err != nil || len(ws) != 2 || ws[0].Provider != "local" || ws[1].Declared != 128000 {
		t.Fatalf("windows %+v %v", ws, err)
	}
	var sb strings.Builder
	if err := WriteWindows(&sb, ws); err != nil || !strings.Contains(sb.String(), "15360") || !strings.Contains(sb.String(), "qwen") {
		t.Errorf("table:\n%s", sb.String())
	}
	if n, err := again.ForgetWindows("openai", ""); n != 1 || err != nil {
		t.Fatalf("forgot %d %v", n, err)
	}
	if n, _ := again.LearnedWindow("openai", "m"); n != 0 {
		t.Errorf("still %d after forgetting", n)
	}
	if n, _ := again.LearnedWindow("local", "qwen"); n != 4096 {
		t.Errorf("another provider's window went: %d", n)
	}
	if st, err := again.Status(nil); err != nil || len(st) != 1 || st[0].State != StateCooldown {
		t.Errorf("the cooldown did not survive: %+v %v", st, err)
	}
}
