package tool

import (
	"os"
	"path/filepath"
	"testing"
)

// A path deny rule covers the file a call reaches, not only the path it
// writes: a symlink to the denied file, and a grep over a directory that
// holds it. The workspace is reached through a symlink too, as a checkout
// under a linked /tmp is.
func TestPermissionRulesResolvePaths(t *testing.T) {
	real := t.TempDir()
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Symlink(real, ws); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(real, ".env"), []byte("SECRET=x\n"), 0o600))
	must(os.MkdirAll(filepath.Join(real, "src", "deep"), 0o755))
	must(os.WriteFile(filepath.Join(real, "src", "a.go"), []byte("package a\n"), 0o600))
	must(os.Symlink(".env", filepath.Join(real, "notes.txt")))
	must(os.Symlink(filepath.Join(real, ".env"), filepath.Join(real, "src", "deep", "abs.txt")))
	must(os.MkdirAll(filepath.Join(real, "docs"), 0o755))
	must(os.Symlink("../.env", filepath.Join(real, "docs", "env")))
	must(os.MkdirAll(filepath.Join(real, "secret"), 0o755))
	must(os.Symlink("secret", filepath.Join(real, "stuff")))

	file := func(tool, p string) Call { return ruleCall(tool, map[string]string{"path": p}) }
	tests := []struct {
		name string
		rule string
		v    Verdict
		call Call
		want string
	}{
		{"the file itself", "Read(./.env)", VerdictDeny, file("read", ".env"), "deny"},
		{"a relative symlink to it", "Read(./.env)", VerdictDeny, file("read", "notes.txt"), "deny"},
		{"an absolute symlink to it", "Read(./.env)", VerdictDeny, file("read", "src/deep/abs.txt"), "deny"},
		{"through the workspace's real path", "Read(./.env)", VerdictDeny, file("read", filepath.Join(real, ".env")), "deny"},
		{"editing through a symlink", "Edit(./.env)", VerdictDeny, file("edit", "notes.txt"), "deny"},
		{"writing under a symlinked directory", "Edit(./secret/**)", VerdictDeny, file("write", "stuff/new.txt"), "deny"},
		{"another file", "Read(./.env)", VerdictDeny, file("read", "src/a.go"), ""},
		{"grep over the workspace", "Read(./.env)", VerdictDeny, file("grep", "."), "deny"},
		{"grep with no path", "Read(./.env)", VerdictDeny, ruleCall("grep", map[string]string{"pattern": "x"}), "deny"},
		{"grep over a directory holding a link to it", "Read(./.env)", VerdictDeny, file("grep", "docs"), "deny"},
		{"grep over a directory without it", "Read(./.env)", VerdictDeny, file("grep", "src/a.go"), ""},
		{"grep over a clean directory", "Read(./.env)", VerdictDeny, file("grep", filepath.Join("src", "..", "src", "a.go")), ""},
		{"grep over a linked directory", "Read(./secret/**)", VerdictDeny, file("grep", "stuff"), "deny"},
		{"a bare name at any depth", "Read(.env)", VerdictDeny, file("grep", "docs"), "deny"},
		{"ls shows names only", "Read(./.env)", VerdictDeny, file("ls", "."), ""},
		{"an allow must cover the target too", "Read(./docs/**)", VerdictAllow, file("read", "docs/env"), ""},
		{"an allow covers a plain file", "Read(./src/**)", VerdictAllow, file("read", "src/a.go"), "allow"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParsePermissionRule(tt.v, tt.rule, "test")
			if err != nil {
				t.Fatal(err)
			}
			rs := &PermissionRules{Workspace: ws, Home: t.TempDir(), Rules: []PermissionRule{r}}
			got := ""
			if r, ok := rs.Match(tt.call); ok {
				got = r.Verdict.String()
			}
			if got != tt.want {
				t.Errorf("verdict %q, want %q", got, tt.want)
			}
		})
	}
}
