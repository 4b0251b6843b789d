package builtin

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentloop/agentloop/tool"
)

// FuzzReadOnlyCommandRuns holds IsReadOnlyCommand to what a command does:
// every command it calls read-only is run with bash in a scratch
// directory, and the directory must be as it was, byte for byte, mode for
// mode, with no file added or removed. The commands run in the sandbox, so
// a wrong answer cannot harm the machine the fuzzer runs on; the scratch
// directory is bound writable and holds files named like options (-i,
// --in-place, -delete) for globs to find.
func FuzzReadOnlyCommandRuns(f *testing.F) {
	for _, s := range []string{
		"ls -la", "cat a.txt | sort -r | uniq -c", "sed -n 2p a.txt", "sed 's/a/b/g' a.txt", "sed --expr=1etouch\\ PWN p a.txt",
		"sed --in s/a/b/ a.txt", "sort --out=F a.txt", "printf -v PATH ./bin; ls", "find . -name '*.txt'",
		"find . -delete", "grep -rn a .", "head -2 a.txt; tail -1 a.txt", "wc -l * 2>/dev/null", "cat * 2>/dev/null",
		"sed p -- *", "sed -n 'w out' a.txt", "sed 's/a/b/w out' a.txt", "uniq a.txt b.txt", "tree -o out",
		"date +%s", "echo hi > /dev/null", "sort -o a.txt a.txt", "cat <<EOF\nx\nEOF", "(cd sub && ls)", "ls >&2",
		"git status 2>/dev/null", "diff a.txt b.txt", "cut -c1 a.txt", "sed '1e touch PWN' a.txt", "sort -T . a.txt",
		"find . -fprint out", "rg -n a . 2>/dev/null", "jq . 2>/dev/null < a.txt", "sed -s -n '$p' a.txt b.txt",
		"LANG=' -o F'; sort a.txt$LANG", "LANG=' -i'; sed -e s/^/X/ a.txt$LANG", "X=' -i'; sed -n p a.txt$X",
		"LANG=' -e e'; echo 'touch PWN' | sed -n -e p /dev/stdin$LANG", "LANG=' --output=F'; git log HEAD$LANG",
		"TZ=' -o F'; sort a.txt${TZ}", "set -- -o F; sort a.txt \"$@\"", "set -- -o F; sort a.txt $*",
		"cat < /dev/tcp/127.0.0.1/9", "sort -k $HOME a.txt",
	} {
		f.Add(s)
	}
	sb, err := NewSandbox()
	if err == nil {
		err = sb.Check(context.Background())
	}
	f.Fuzz(func(t *testing.T, command string) {
		if !IsReadOnlyCommand(command) {
			return
		}
		if err != nil {
			t.Skipf("commands are run only inside the sandbox, and there is none here: %v", err)
		}
		dir := t.TempDir()
		scratch := filepath.Join(dir, "ws")
		for name, content := range map[string]string{
			"a.txt": "a\nb\nb\nc\n", "b.txt": "b\nd\n", "sub/c.txt": "c\n", "-i": "opt\n", "--in-place": "opt\n",
			"-delete": "opt\n", "--output=F": "opt\n", "-exec": "opt\n",
		} {
			p := filepath.Join(scratch, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		before := snapshotDir(t, scratch)
		b := NewBash(BashOptions{Dir: scratch, SpillDir: filepath.Join(dir, "spill"), Sandbox: sb,
			Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + scratch, "LANG=C"}})
		args, _ := json.Marshal(map[string]any{"command": command, "timeout": 3})
		if _, err := b.Execute(context.Background(), tool.Call{ID: "fuzz", Name: "bash", Args: args}, nil); err != nil {
			t.Fatal(err)
		}
		if after := snapshotDir(t, scratch); after != before {
			t.Fatalf("IsReadOnlyCommand(%q) = true, but running it changed the directory:\nbefore %s\nafter  %s", command, before, after)
		}
	})
}

// snapshotDir describes every entry under dir: path, type, mode, size,
// modification time and a hash of the content.
func snapshotDir(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(h, "%s %v %d", rel, fi.Mode(), fi.Size())
		if !fi.IsDir() {
			fmt.Fprintf(h, " %d", fi.ModTime().UnixNano())
		}
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(data)
		}
		h.Write([]byte{0})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}
