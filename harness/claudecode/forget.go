package claudecode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentloop/agentloop/harness"
)

// isSessionID says whether id is a Claude Code session id (a UUID): only
// such an id is a name to build a path from.
func isSessionID(id string) bool {
	if len(id) != 36 {
		return false
	}
	for _, c := range id {
		if !(c == '-' || '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// Forget deletes the session a binding names from Claude Code's store
// (<config dir>/projects/<project>/<id>.jsonl; the config dir is
// CLAUDE_CONFIG_DIR, else ~/.claude, read from the engine's environment).
func (h *Harness) Forget(_ context.Context, b harness.Binding) error {
	if !isSessionID(b.NativeID) {
		return fmt.Errorf("claude-code binding %q is not a session id", b.NativeID)
	}
	dir := h.getenv("CLAUDE_CONFIG_DIR")
	if dir == "" {
		home := h.getenv("HOME")
		if home == "" {
			return fmt.Errorf("no HOME to find Claude Code's sessions in")
		}
		dir = filepath.Join(home, ".claude")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "projects", "*", b.NativeID+".jsonl"))
	for _, f := range files {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	return nil
}

// getenv reads the engine's environment.
func (h *Harness) getenv(k string) string {
	if h.cfg.Env == nil {
		return os.Getenv(k)
	}
	v := ""
	for _, kv := range h.cfg.Env {
		if rest, ok := strings.CutPrefix(kv, k+"="); ok {
			v = rest
		}
	}
	return v
}
