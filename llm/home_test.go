package llm

import (
	"os"
	"path/filepath"
	"testing"
)

// The home is $AGENTLOOP_HOME, else ~/.agentloop; the models file lives in
// it, so every default derived from the home agrees.
func TestHome(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "AGENTLOOP_HOME" {
				return v
			}
			return ""
		}
	}
	if h, err := Home(env("/srv/al")); err != nil || h != "/srv/al" {
		t.Errorf("Home with AGENTLOOP_HOME = %q, %v", h, err)
	}
	u, err := os.UserHomeDir()
	if err != nil {
		t.Skip(err)
	}
	if h, err := Home(env("")); err != nil || h != filepath.Join(u, ".agentloop") {
		t.Errorf("Home without AGENTLOOP_HOME = %q, %v", h, err)
	}
	if p, err := DefaultModelsPath(env("/srv/al")); err != nil || p != "/srv/al/models.json" {
		t.Errorf("DefaultModelsPath = %q, %v", p, err)
	}
}
