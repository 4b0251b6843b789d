package builtin

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// tree is a directory the file tools open paths through. For the workspace
// and the extra readable directories it is an os.Root: every open below it
// is resolved by the kernel one component at a time and refused if it
// would leave the directory, so a symlink or a directory swapped between
// Workspace's check and the open cannot lead out. Reads outside the
// workspace, when allowed, go through the host's root instead.
type tree struct {
	fsys fs.FS    // opens slash names relative to base
	root *os.Root // nil for the host's tree
	base string   // the real absolute path "." stands for
	own  bool     // root was opened for this use: close it after
}

// name returns the slash name of abs (a real absolute path inside base).
func (t tree) name(abs string) string {
	if abs == t.base {
		return "."
	}
	r, err := filepath.Rel(t.base, abs)
	if err != nil {
		return "."
	}
	return filepath.ToSlash(r)
}

// abs returns the absolute path of name.
func (t tree) abs(name string) string {
	if name == "." {
		return t.base
	}
	return filepath.Join(t.base, filepath.FromSlash(name))
}

func (t tree) close() {
	if t.own && t.root != nil {
		t.root.Close()
	}
}

// readTree returns the tree to read real (a path ResolveRead returned)
// through, and real's name in it. Close the tree after use.
func (w *Workspace) readTree(real string) (tree, string, error) {
	if within(w.root, real) {
		t := tree{fsys: w.dir.FS(), root: w.dir, base: w.root}
		return t, t.name(real), nil
	}
	for _, d := range w.Readable() {
		if !within(d, real) {
			continue
		}
		r, err := os.OpenRoot(d)
		if err != nil {
			return tree{}, "", err
		}
		t := tree{fsys: r.FS(), root: r, base: d, own: true}
		return t, t.name(real), nil
	}
	if w.allowReadOutside {
		t := tree{fsys: os.DirFS("/"), base: "/"}
		return t, t.name(real), nil
	}
	return tree{}, "", &EscapeError{Path: real, Resolved: real, Root: w.root}
}

// writeName returns real's name in the workspace root (real is a path
// ResolveWrite returned).
func (w *Workspace) writeName(real string) (string, error) {
	if !within(w.root, real) {
		return "", &EscapeError{Path: real, Resolved: real, Root: w.root}
	}
	if real == w.root {
		return ".", nil
	}
	return filepath.Rel(w.root, real)
}

// writeFileAtomic replaces the file name of root with data through a
// temporary file in the same directory, so a crash leaves the old or the
// new content, never a torn one. An existing file keeps its permission
// bits. Both files are opened through root.
func writeFileAtomic(root *os.Root, name string, data []byte) error {
	mode := fs.FileMode(0o644)
	if fi, err := root.Stat(name); err == nil {
		if fi.IsDir() {
			return fmt.Errorf("%s is a directory", name)
		}
		mode = fi.Mode().Perm()
	}
	dir, base := filepath.Split(name)
	var (
		f   *os.File
		tmp string
		err error
	)
	for range 10 {
		var rnd [6]byte
		_, _ = rand.Read(rnd[:])
		tmp = filepath.Join(dir, "."+base+".agentloop-"+hex.EncodeToString(rnd[:]))
		f, err = root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, name)
	}
	if err != nil {
		root.Remove(tmp)
		return err
	}
	return nil
}

// joinName joins slash names.
func joinName(dir, name string) string {
	if dir == "." {
		return name
	}
	return path.Join(dir, name)
}
