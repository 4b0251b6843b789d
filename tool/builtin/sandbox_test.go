package builtin

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentloop/agentloop/tool"
)

// sandboxForTest returns a working sandbox, or skips saying precisely why
// there is none.
func sandboxForTest(t *testing.T) *Sandbox {
	t.Helper()
	sb, err := NewSandbox()
	if err != nil {
		t.Skipf("no sandbox: %v", err)
	}
	if err := sb.Check(context.Background()); err != nil {
		t.Skipf("bwrap is installed but cannot sandbox here: %v", err)
	}
	return sb
}

func TestSandboxArgs(t *testing.T) {
	sb := &Sandbox{Bwrap: "/usr/bin/bwrap"}
	got := sb.Args("/tmp/ws", []string{"/var/lib/agentloop/s1", "/tmp/ws", "/tmp", "/"}, []string{"bash", "-c", "ls"})
	want := []string{"/usr/bin/bwrap",
		"--unshare-user", "--uid", "65534", "--gid", "65534", "--disable-userns", "--cap-drop", "ALL",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--hostname", "sandbox", "--unshare-cgroup-try",
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"}
	for _, d := range sandboxHidden() {
		want = append(want, "--tmpfs", d)
	}
	want = append(want,
		"--bind", "/tmp/ws", "/tmp/ws", "--bind", "/var/lib/agentloop/s1", "/var/lib/agentloop/s1",
		"--unshare-net", "--die-with-parent", "--new-session", "--chdir", "/tmp/ws",
		"--", "bash", "-c", "ls")
	if !slices.Equal(got, want) {
		t.Errorf("Args:\n got %q\nwant %q", got, want)
	}
	// The writable binds must come after the tmpfs on /tmp, or a
	// workspace under /tmp would be hidden by it.
	if slices.Index(got, "--tmpfs") > slices.Index(got, "--bind") {
		t.Error("binds come before the private /tmp")
	}
}

func TestSandboxConfinesCommands(t *testing.T) {
	defer goleak.VerifyNone(t)
	sb := sandboxForTest(t)
	// The workspace and the spill directory live under /tmp on purpose:
	// they must stay visible above the sandbox's private /tmp.
	root, err := os.MkdirTemp("/tmp", "agentloop-sandbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	ws := filepath.Join(root, "ws")
	outside := filepath.Join(root, "outside")
	spill := filepath.Join(root, "spill")
	for _, d := range []string{ws, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	hostTmp := "agentloop-sandbox-probe-" + strconv.Itoa(os.Getpid())
	t.Cleanup(func() { os.Remove(filepath.Join("/tmp", hostTmp)) })

	plain := NewBash(BashOptions{Dir: ws, SpillDir: spill})
	boxed := NewBash(BashOptions{Dir: ws, SpillDir: spill, Sandbox: sb})
	tests := []struct {
		name    string
		command string
		// wantBoxed is whether the command succeeds in the sandbox;
		// without it, every command here succeeds.
		wantBoxed bool
		check     func(t *testing.T)
	}{
		{"write in the workspace under /tmp", "echo data > in-ws.txt && pwd", true, func(t *testing.T) {
			if b, err := os.ReadFile(filepath.Join(ws, "in-ws.txt")); err != nil || string(b) != "data\n" {
				t.Errorf("workspace file: %q, %v", b, err)
			}
		}},
		{"write outside the workspace", "echo data > " + filepath.Join(outside, "x.txt"), false, nil},
		{"write to /tmp stays private", "echo data > /tmp/" + hostTmp + " && cat /tmp/" + hostTmp, true, func(t *testing.T) {
			if _, err := os.Stat(filepath.Join("/tmp", hostTmp)); err == nil {
				t.Error("the sandbox's /tmp write reached the host's /tmp")
			}
		}},
		{"connect to the host's loopback", "exec 3<>/dev/tcp/127.0.0.1/" + port, false, nil},
		{"write in the spill directory", "echo data > " + filepath.Join(spill, "s.txt"), true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := boxed.Execute(context.Background(), bashCall(t, tt.command, 30), func(tool.Partial) {})
			if err != nil {
				t.Fatalf("sandboxed Execute: %v", err)
			}
			if res.IsError == tt.wantBoxed {
				t.Errorf("sandboxed: %q (isError %v), want success %v", res.Text(), res.IsError, tt.wantBoxed)
			}
			if d := bashDetails(t, res); !d.Sandboxed {
				t.Error("details do not say the command was sandboxed")
			}
			if tt.check != nil {
				tt.check(t)
			}
			if tt.wantBoxed {
				return
			}
			// Control: the same command outside the sandbox works, so
			// the sandbox is what stopped it.
			res, err = plain.Execute(context.Background(), bashCall(t, tt.command, 30), func(tool.Partial) {})
			if err != nil || res.IsError {
				t.Errorf("unsandboxed control failed: %q, %v", res.Text(), err)
			}
		})
	}
	if !strings.HasPrefix(ws, "/tmp/") {
		t.Fatalf("workspace %s is not under /tmp", ws)
	}
}

func TestSandboxAbortKillsTree(t *testing.T) {
	defer goleak.VerifyNone(t)
	sb := sandboxForTest(t)
	const marker = "300.7451"
	b := NewBash(BashOptions{Dir: t.TempDir(), Sandbox: sb})
	res, err := b.Execute(context.Background(), bashCall(t, "setsid sleep "+marker+" >/dev/null 2>&1 & sleep "+marker, 0.5), func(tool.Partial) {})
	if err != nil {
		t.Fatal(err)
	}
	if d := bashDetails(t, res); !d.TimedOut {
		t.Fatalf("details %+v, want a timeout", d)
	}
	assertNoLeftovers(t, "sleep "+marker)
}

// Without the sandbox, a process that both leaves the process group and
// clears its environment escapes the sweep; in the sandbox's pid namespace
// it dies with the sandbox.
func TestSandboxCatchesUntaggedEscapee(t *testing.T) {
	defer goleak.VerifyNone(t)
	sb := sandboxForTest(t)
	const marker = "300.8123"
	b := NewBash(BashOptions{Dir: t.TempDir(), Sandbox: sb})
	res, err := b.Execute(context.Background(), bashCall(t, "setsid env -i sleep "+marker+" >/dev/null 2>&1 & echo started", 30), func(tool.Partial) {})
	if err != nil || res.Text() != "started\n" {
		t.Fatalf("result %q, %v", res.Text(), err)
	}
	assertNoLeftovers(t, "sleep "+marker)
}
