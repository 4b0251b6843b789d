package builtin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/text/unicode/norm"

	"github.com/agentloop/agentloop/internal/lazyre"
)

// ErrOutsideWorkspace is wrapped by every error about a path that resolves
// outside the workspace. Test for it with errors.Is.
var ErrOutsideWorkspace = errors.New("path is outside the workspace")

// ErrReadOnly is returned for a write in a read-only workspace.
var ErrReadOnly = errors.New("the workspace is read-only: files cannot be written or edited in this run")

// EscapeError says that a path resolved outside the workspace. It unwraps
// to ErrOutsideWorkspace.
type EscapeError struct {
	// Path is the path as the model gave it.
	Path string
	// Resolved is the real path it leads to, symlinks followed.
	Resolved string
	// Root is the workspace root.
	Root string
	// ViaSymlink is set when the path itself lies inside the workspace but
	// a symlink on it leads out.
	ViaSymlink bool
}

func (e *EscapeError) Error() string {
	if e.ViaSymlink {
		return fmt.Sprintf("path %q leads through a symlink to %s, outside the workspace %s: symlinks out of the workspace are not followed; use a path inside the workspace",
			e.Path, e.Resolved, e.Root)
	}
	return fmt.Sprintf("path %q resolves to %s, outside the workspace %s: only files inside the workspace can be used; give a path inside it (relative paths start at the workspace root)",
		e.Path, e.Resolved, e.Root)
}

// Unwrap returns ErrOutsideWorkspace.
func (e *EscapeError) Unwrap() error { return ErrOutsideWorkspace }

// WorkspaceOptions configures a Workspace. The zero value confines reads and
// writes to the root.
type WorkspaceOptions struct {
	// AllowReadOutside lets read, grep, find and ls use paths outside the
	// workspace. Writes stay confined.
	AllowReadOutside bool
	// Readable are extra directories whose contents may be read (not
	// written), such as the session's data directory where bash spills
	// long output. They need not exist yet.
	Readable []string
	// ReadOnly refuses every write; New then leaves write and edit out.
	ReadOnly bool
}

// Workspace is the directory tree the file tools may touch. Its root is a
// real path (symlinks resolved). It is safe for concurrent use.
type Workspace struct {
	root             string
	dir              *os.Root // root, opened: every path inside is opened through it
	allowReadOutside bool
	readOnly         bool

	mu       sync.RWMutex
	readable []string
}

// NewWorkspace returns a workspace rooted at dir ("" means the current
// directory), which must be an existing directory. opts may be nil.
func NewWorkspace(dir string, opts *WorkspaceOptions) (*Workspace, error) {
	if opts == nil {
		opts = &WorkspaceOptions{}
	}
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	root, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	fi, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("workspace %s is not a directory", dir)
	}
	dirRoot, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	w := &Workspace{root: root, dir: dirRoot, allowReadOutside: opts.AllowReadOutside, readOnly: opts.ReadOnly}
	for _, d := range opts.Readable {
		if err := w.AddReadable(d); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// Root returns the workspace root, a real absolute path.
func (w *Workspace) Root() string { return w.root }

// ReadOnly reports whether writes are refused.
func (w *Workspace) ReadOnly() bool { return w.readOnly }

// AllowReadOutside reports whether reads may leave the workspace.
func (w *Workspace) AllowReadOutside() bool { return w.allowReadOutside }

// AddReadable makes dir and everything under it readable (not writable).
// dir need not exist yet; relative paths are taken from the workspace root.
func (w *Workspace) AddReadable(dir string) error {
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(w.root, dir)
	}
	real, err := realPath(filepath.Clean(dir))
	if err != nil {
		return fmt.Errorf("readable directory %s: %w", dir, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !slices.Contains(w.readable, real) {
		w.readable = append(w.readable, real)
	}
	return nil
}

// Readable returns the extra readable directories, as real paths.
func (w *Workspace) Readable() []string {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return slices.Clone(w.readable)
}

// ResolveRead returns the real absolute path of p for reading: inside the
// workspace, inside an extra readable directory, or anywhere when reads
// outside are allowed. p is relative to the root unless absolute; see the
// package documentation for "@" and "~".
func (w *Workspace) ResolveRead(p string) (string, error) {
	real, lexical, err := w.resolve(p)
	if err != nil {
		return "", err
	}
	if w.allowReadOutside || within(w.root, real) {
		return real, nil
	}
	w.mu.RLock()
	defer w.mu.RUnlock()
	for _, d := range w.readable {
		if within(d, real) {
			return real, nil
		}
	}
	return "", w.escape(p, lexical, real)
}

// ResolveWrite returns the real absolute path of p for writing, which must
// lie inside the workspace (never in an extra readable directory). It fails
// with ErrReadOnly in a read-only workspace.
func (w *Workspace) ResolveWrite(p string) (string, error) {
	if w.readOnly {
		return "", ErrReadOnly
	}
	real, lexical, err := w.resolve(p)
	if err != nil {
		return "", err
	}
	if !within(w.root, real) {
		return "", w.escape(p, lexical, real)
	}
	return real, nil
}

// Rel returns how results show the real path abs: relative to the root
// with forward slashes when inside the workspace, else abs itself.
func (w *Workspace) Rel(abs string) string {
	if abs == w.root {
		return "."
	}
	if within(w.root, abs) {
		if r, err := filepath.Rel(w.root, abs); err == nil {
			return filepath.ToSlash(r)
		}
	}
	return abs
}

func (w *Workspace) escape(p, lexical, real string) error {
	return &EscapeError{Path: p, Resolved: real, Root: w.root, ViaSymlink: within(w.root, lexical)}
}

// resolve cleans p and returns its lexical absolute path and its real path.
func (w *Workspace) resolve(p string) (real, lexical string, err error) {
	p = strings.TrimPrefix(p, "@")
	if p == "~" || strings.HasPrefix(p, "~/") || strings.HasPrefix(p, "~"+string(filepath.Separator)) {
		home, herr := os.UserHomeDir()
		if herr != nil {
			return "", "", fmt.Errorf("path %q: cannot expand ~: %w", p, herr)
		}
		p = filepath.Join(home, p[1:])
	}
	if p == "" {
		p = "."
	}
	if filepath.IsAbs(p) {
		lexical = filepath.Clean(p)
	} else {
		lexical = filepath.Join(w.root, p)
	}
	if _, err := os.Lstat(lexical); errors.Is(err, fs.ErrNotExist) {
		for _, v := range pathVariants(lexical) {
			if _, err := os.Lstat(v); err == nil {
				lexical = v
				break
			}
		}
	}
	real, err = realPath(lexical)
	if err != nil {
		return "", "", fmt.Errorf("path %q: %w", p, err)
	}
	return real, lexical, nil
}

// amPM finds a time followed by a plain space and AM or PM, as a model
// types the name of a macOS screenshot whose real name has a narrow
// no-break space there.
var amPM = lazyre.New(`(\d) (AM|PM)\b`)

// pathVariants returns spellings of a path that does not exist that a
// model may have meant: Unicode spaces as plain spaces, the macOS
// screenshot's narrow space before AM/PM, the decomposed (NFD) form macOS
// file names often have, and a typographic apostrophe for a plain one.
func pathVariants(p string) []string {
	spaces := strings.Map(func(r rune) rune {
		if isOddSpace(r) {
			return ' '
		}
		return r
	}, p)
	narrow := amPM.ReplaceAllString(spaces, "${1}\u202f${2}")
	var out []string
	for _, v := range []string{
		spaces,
		narrow,
		norm.NFD.String(p),
		norm.NFD.String(narrow),
		strings.ReplaceAll(spaces, "'", "\u2019"),
		norm.NFD.String(strings.ReplaceAll(narrow, "'", "\u2019")),
	} {
		if v != p && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

func isOddSpace(r rune) bool {
	switch {
	case r == '\u00a0', r == '\u202f', r == '\u205f', r == '\u3000', r == '\u1680':
		return true
	case r >= '\u2000' && r <= '\u200a':
		return true
	}
	return false
}

// within reports whether p is dir or lies under it. Both are clean and
// absolute.
func within(dir, p string) bool {
	if p == dir {
		return true
	}
	if !strings.HasSuffix(dir, string(filepath.Separator)) {
		dir += string(filepath.Separator)
	}
	return strings.HasPrefix(p, dir)
}

// maxSymlinks bounds how many symlinks one resolution follows, as the
// kernel's ELOOP limit does.
const maxSymlinks = 255

// realPath resolves every symlink on the clean absolute path p, component
// by component. Unlike filepath.EvalSymlinks it accepts paths whose tail
// does not exist yet (a file about to be written) and still follows a
// dangling symlink on the way, so writing through it cannot leave the
// workspace unnoticed.
func realPath(p string) (string, error) {
	vol := filepath.VolumeName(p)
	sep := string(filepath.Separator)
	resolved := vol + sep
	rest := strings.Split(p[len(vol):], sep)
	links := 0
	for len(rest) > 0 {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, name)
		fi, err := os.Lstat(next)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				// Nothing below a missing entry can be a symlink. But a ".."
				// after it (from a symlink's target: the path itself was
				// cleaned) would climb back to entries that may be symlinks,
				// unresolved; the kernel refuses such a path, and so do we.
				if slices.Contains(rest, "..") {
					return "", &fs.PathError{Op: "resolve", Path: next, Err: fs.ErrNotExist}
				}
				return filepath.Join(append([]string{next}, rest...)...), nil
			}
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			resolved = next
			continue
		}
		links++
		if links > maxSymlinks {
			return "", fmt.Errorf("too many levels of symbolic links at %s", next)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			tv := filepath.VolumeName(target)
			resolved = tv + sep
			target = target[len(tv):]
		}
		rest = append(strings.Split(target, sep), rest...)
	}
	return resolved, nil
}
