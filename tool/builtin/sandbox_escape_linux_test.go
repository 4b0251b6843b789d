package builtin

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// probeConnectEnv makes a copy of this test binary, run inside the
// sandbox, a Unix socket client: it dials the path and says whether it
// got through.
const probeConnectEnv = "AGENTLOOP_SANDBOX_PROBE_CONNECT"

func init() {
	p := os.Getenv(probeConnectEnv)
	if p == "" {
		return
	}
	c, err := net.DialTimeout("unix", p, 2*time.Second)
	if err != nil {
		fmt.Printf("probe %s: refused: %v\n", p, err)
		os.Exit(0)
	}
	c.Close()
	fmt.Printf("probe %s: connected\n", p)
	os.Exit(0)
}

// Issue 17, item 2: the escapes that worked when agentloop ran as root
// (remount / read-write, change the host name, reach the host's Unix
// sockets, keep capabilities) fail in the sandbox, whether it is started
// by root or by an unprivileged user (setpriv to nobody).
func TestSandboxEscapes(t *testing.T) {
	sb := sandboxForTest(t)
	// As root (CI), the escapes run as root and, through setpriv, as
	// nobody; otherwise as the user running the tests.
	users, sockDirs := []string{"root", "nobody"}, []string{"/var/tmp", "/run"}
	if os.Geteuid() != 0 {
		users, sockDirs = []string{"self"}, []string{"/var/tmp"}
	}
	root, err := os.MkdirTemp("/tmp", "agentloop-escape-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	ws := filepath.Join(root, "ws")
	if err := os.Mkdir(ws, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{root, ws} {
		if err := os.Chmod(d, 0o777); err != nil { // nobody works here too
			t.Fatal(err)
		}
	}
	probe := filepath.Join(ws, "probe")
	copyExecutable(t, probe)

	tag := strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	var sockets []string
	for _, dir := range sockDirs {
		p := filepath.Join(dir, "agentloop-escape-"+tag+".sock")
		l, err := net.Listen("unix", p)
		if err != nil {
			t.Fatalf("listen on %s: %v", p, err)
		}
		go acceptAll(l)
		t.Cleanup(func() { l.Close(); os.Remove(p) })
		if err := os.Chmod(p, 0o777); err != nil {
			t.Fatal(err)
		}
		sockets = append(sockets, p)
	}
	shm, err := unix.SysvShmGet(unix.IPC_PRIVATE, 4096, unix.IPC_CREAT|0o600)
	if err != nil {
		t.Fatalf("create a SysV shared memory segment: %v", err)
	}
	t.Cleanup(func() { _, _ = unix.SysvShmCtl(shm, unix.IPC_RMID, nil) })
	hostName, _ := os.Hostname()
	t.Cleanup(func() {
		// Should a broken sandbox let the escape through, undo it.
		if h, _ := os.Hostname(); h != hostName {
			_ = unix.Sethostname([]byte(hostName))
		}
	})
	marks := []string{"/var/tmp/agentloop-escape-" + tag, "/agentloop-escape-" + tag, "/usr/agentloop-escape-" + tag}
	t.Cleanup(func() {
		for _, m := range marks {
			os.Remove(m)
		}
	})
	probes := "for s in " + strings.Join(sockets, " ") + "; do " + probeConnectEnv + "=$s ./probe; done"
	script := strings.Join([]string{
		"mount -o remount,bind,rw / && touch " + marks[0] + " " + marks[1],
		"touch " + marks[2],
		"hostname evil-" + tag,
		"echo uid=$(id -u) gid=$(id -g)",
		"grep CapEff /proc/self/status",
		"echo hostname=$(hostname)",
		"echo shm=$(grep -c . /proc/sysvipc/shm)",
		"unshare -U true && echo nested-userns",
		probes,
	}, "\n")

	for _, who := range users {
		t.Run("as "+who, func(t *testing.T) {
			// Control: without the sandbox, this user reaches both sockets.
			// (Only the probes: the rest would change this machine.)
			out := runAs(t, who, nil, ws, probes)
			for _, s := range sockets {
				if !strings.Contains(out, "probe "+s+": connected") {
					t.Fatalf("control: %s cannot reach %s without the sandbox, so the test proves nothing:\n%s", who, s, out)
				}
			}
			for _, m := range marks {
				os.Remove(m)
			}

			out = runAs(t, who, sb, ws, script)
			for _, m := range marks {
				if _, err := os.Lstat(m); err == nil {
					t.Errorf("the sandboxed command wrote %s on the host", m)
				}
			}
			if h, _ := os.Hostname(); h != hostName {
				t.Errorf("the host name changed from %q to %q", hostName, h)
				_ = unix.Sethostname([]byte(hostName))
			}
			for _, want := range []string{
				"uid=65534 gid=65534", "CapEff:\t0000000000000000", "hostname=sandbox", "shm=1",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("the sandbox output lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, "nested-userns") {
				t.Errorf("the command could make a user namespace of its own:\n%s", out)
			}
			for _, s := range sockets {
				if strings.Contains(out, "probe "+s+": connected") {
					t.Errorf("the sandboxed command reached the host socket %s:\n%s", s, out)
				}
			}

			// A socket named in Sockets is reachable: the probe can tell.
			allowed := &Sandbox{Bwrap: sb.Bwrap, Sockets: sockets[:1]}
			out = runAs(t, who, allowed, ws, probeConnectEnv+"="+sockets[0]+" ./probe")
			if !strings.Contains(out, "probe "+sockets[0]+": connected") {
				t.Errorf("the configured socket %s is not reachable:\n%s", sockets[0], out)
			}
		})
	}
}

// runAs runs script with bash in dir as root or as nobody, in sb when it
// is not nil, and returns the merged output. A sandbox bwrap cannot start
// for nobody (no unprivileged user namespaces) skips the test.
func runAs(t *testing.T, who string, sb *Sandbox, dir, script string) string {
	t.Helper()
	argv := []string{"/bin/bash", "-c", script}
	if sb != nil {
		argv = sb.Args(dir, nil, argv)
	}
	if who == "nobody" {
		argv = append([]string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"}, argv...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + dir, "LANG=C"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if sb != nil && who == "nobody" && strings.Contains(out.String(), "bwrap:") && strings.Contains(out.String(), "namespace") {
		t.Skipf("bwrap cannot make namespaces for an unprivileged user here: %s", out.String())
	}
	if ctx.Err() != nil {
		t.Fatalf("%s timed out: %v\n%s", who, err, out.String())
	}
	return out.String()
}

func acceptAll(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}

// copyExecutable copies this test binary to dst, mode 0755.
func copyExecutable(t *testing.T, dst string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
