package hook

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/tool"
)

// Issue 17.7 for hooks: a daemon that clears its environment (so it has no
// tag), leaves the group with setsid and double-forks ends with the hook.
func TestDoubleForkedDaemonOfHookIsKilled(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("finding adopted daemons needs Linux's /proc and subreaper")
	}
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid is not installed")
	}
	f := newFixture(t)
	f.user(t, map[string][]cmdSpec{EventPostToolUse: {{
		command: `env -i setsid sh -c '(sleep 300 >/dev/null 2>&1 & echo $! > "` + f.ws + `/daemon")' </dev/null; sleep 0.1; exit 0`,
	}}})
	b, _ := f.load(t, nil)
	b.ToolResultPersist(ctx, ToolResultPersistInput{Call: bashCall("ls"), Result: tool.TextResult("x")})
	raw, err := os.ReadFile(filepath.Join(f.ws, "daemon"))
	if err != nil {
		t.Fatal(err)
	}
	waitGone(t, strings.TrimSpace(string(raw)), "the daemon")
}
