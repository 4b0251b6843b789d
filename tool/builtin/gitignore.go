package builtin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// compileGlob turns a glob over slash-separated paths into an anchored
// regular expression: "*" and "?" stay within one path element, "**"
// spans any number of them ("**/" also none), "[...]" is a character class
// ("[!...]" negated), "{a,b}" picks one of several alternatives, and "\"
// escapes the next character.
func compileGlob(glob string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	depth := 0
	for i := 0; i < len(glob); i++ {
		c := glob[i]
		switch c {
		case '*':
			if i+1 < len(glob) && glob[i+1] == '*' {
				atStart := i == 0 || glob[i-1] == '/'
				j := i + 2
				for j < len(glob) && glob[j] == '*' {
					j++
				}
				switch {
				case atStart && j < len(glob) && glob[j] == '/':
					b.WriteString("(?:.*/)?")
					i = j
				case atStart && j == len(glob):
					b.WriteString(".*")
					i = j - 1
				default:
					b.WriteString("[^/]*")
					i = j - 1
				}
				continue
			}
			b.WriteString("[^/]*")
		case '?':
			b.WriteString("[^/]")
		case '[':
			end := classEnd(glob, i)
			if end < 0 {
				b.WriteString(`\[`)
				continue
			}
			class := glob[i+1 : end]
			b.WriteByte('[')
			if strings.HasPrefix(class, "!") || strings.HasPrefix(class, "^") {
				b.WriteByte('^')
				class = class[1:]
			}
			b.WriteString(strings.ReplaceAll(class, `[`, `\[`))
			b.WriteByte(']')
			i = end
		case '{':
			depth++
			b.WriteString("(?:")
		case '}':
			if depth == 0 {
				b.WriteString(`\}`)
				continue
			}
			depth--
			b.WriteString(")")
		case ',':
			if depth > 0 {
				b.WriteString("|")
			} else {
				b.WriteString(",")
			}
		case '\\':
			if i+1 < len(glob) {
				i++
				b.WriteString(regexp.QuoteMeta(glob[i : i+1]))
			} else {
				b.WriteString(`\\`)
			}
		default:
			b.WriteString(regexp.QuoteMeta(glob[i : i+1]))
		}
	}
	if depth > 0 {
		return nil, fmt.Errorf("glob %q has an unclosed {", glob)
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, fmt.Errorf("glob %q is not valid: %v", glob, err)
	}
	return re, nil
}

// classEnd returns the index of the "]" closing the class opened at i, or -1.
func classEnd(glob string, i int) int {
	j := i + 1
	if j < len(glob) && (glob[j] == '!' || glob[j] == '^') {
		j++
	}
	if j < len(glob) && glob[j] == ']' {
		j++
	}
	for ; j < len(glob); j++ {
		if glob[j] == ']' {
			return j
		}
	}
	return -1
}

// pathGlob matches slash paths relative to a search root. A pattern
// without "/" matches the base name at any depth, as .gitignore, fd and
// ripgrep do.
type pathGlob struct {
	re       *regexp.Regexp
	baseOnly bool
}

func newPathGlob(pattern string) (*pathGlob, error) {
	p := strings.TrimPrefix(pattern, "./")
	baseOnly := !strings.Contains(p, "/")
	p = strings.TrimPrefix(p, "/")
	re, err := compileGlob(p)
	if err != nil {
		return nil, err
	}
	return &pathGlob{re: re, baseOnly: baseOnly}, nil
}

func (g *pathGlob) match(rel string) bool {
	if g.baseOnly {
		return g.re.MatchString(path.Base(rel))
	}
	return g.re.MatchString(rel)
}

// ignoreRule is one pattern line of a .gitignore file.
type ignoreRule struct {
	re       *regexp.Regexp
	negate   bool
	dirOnly  bool
	anchored bool // matched against the path from the .gitignore's directory, not the base name
}

// ignoreFile is the rules of one .gitignore and the directory it governs.
type ignoreFile struct {
	dir   string
	rules []ignoreRule
}

// parseGitignore reads .gitignore patterns; lines it cannot compile are
// skipped, as git skips patterns it does not understand.
func parseGitignore(dir string, data []byte) *ignoreFile {
	f := &ignoreFile{dir: dir}
	for line := range strings.SplitSeq(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if line == "" || line[0] == '#' {
			continue
		}
		// Trailing spaces are dropped unless escaped.
		for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, `\ `) {
			line = line[:len(line)-1]
		}
		if line == "" {
			continue
		}
		var r ignoreRule
		if line[0] == '!' {
			r.negate = true
			line = line[1:]
		} else if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
			line = line[1:]
		}
		if strings.HasSuffix(line, "/") {
			r.dirOnly = true
			line = strings.TrimRight(line, "/")
		}
		if line == "" {
			continue
		}
		r.anchored = strings.Contains(line, "/")
		line = strings.TrimPrefix(line, "/")
		re, err := compileGlob(line)
		if err != nil {
			continue
		}
		r.re = re
		f.rules = append(f.rules, r)
	}
	return f
}

// ignored reports whether the ignore files, shallowest first, exclude abs.
// The last matching rule decides, so deeper files override shallower ones.
func ignored(files []*ignoreFile, abs string, isDir bool) bool {
	out := false
	for _, f := range files {
		if !within(f.dir, abs) || abs == f.dir {
			continue
		}
		rel := filepath.ToSlash(abs[len(f.dir):])
		rel = strings.TrimPrefix(rel, "/")
		base := path.Base(rel)
		for i := range f.rules {
			r := &f.rules[i]
			if r.dirOnly && !isDir {
				continue
			}
			target := base
			if r.anchored {
				target = rel
			}
			if r.re.MatchString(target) {
				out = !r.negate
			}
		}
	}
	return out
}

// loadIgnoreFile parses the .gitignore of directory dir of tr, or
// returns nil.
func loadIgnoreFile(tr tree, dir string) *ignoreFile {
	data, err := fs.ReadFile(tr.fsys, joinName(dir, ".gitignore"))
	if err != nil {
		return nil
	}
	f := parseGitignore(tr.abs(dir), data)
	if len(f.rules) == 0 {
		return nil
	}
	return f
}

// ancestorIgnores loads the .gitignore files from the workspace root down
// to the parent of start (a name in tr), so a search below the root still
// honours them. Outside the workspace there are none.
func ancestorIgnores(tr tree, wsRoot, start string) []*ignoreFile {
	if tr.base != wsRoot || start == "." {
		return nil
	}
	var dirs []string
	for d := path.Dir(start); ; d = path.Dir(d) {
		dirs = append(dirs, d)
		if d == "." || d == "/" {
			break
		}
	}
	var files []*ignoreFile
	for i := len(dirs) - 1; i >= 0; i-- {
		if f := loadIgnoreFile(tr, dirs[i]); f != nil {
			files = append(files, f)
		}
	}
	return files
}

// errStopWalk ends a walk early without an error.
var errStopWalk = errors.New("stop walk")

// walkFiles visits the tree under start (a name in tr) in lexical order, depth first,
// skipping .git directories and whatever the .gitignore files exclude. It
// does not follow symlinks. fn gets the absolute path, the slash path
// relative to start and the entry; returning fs.SkipDir for a directory
// skips it, errStopWalk ends the walk. Unreadable directories are skipped.
func walkFiles(ctx context.Context, tr tree, start string, ignores []*ignoreFile, fn func(abs, rel string, d fs.DirEntry) error) error {
	var walk func(dir, rel string, ign []*ignoreFile) error
	walk = func(dir, rel string, ign []*ignoreFile) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		entries, err := fs.ReadDir(tr.fsys, dir)
		if err != nil {
			return nil
		}
		for _, e := range entries {
			if e.Name() == ".gitignore" {
				if f := loadIgnoreFile(tr, dir); f != nil {
					ign = append(ign[:len(ign):len(ign)], f)
				}
				break
			}
		}
		for _, e := range entries {
			name := e.Name()
			isDir := e.IsDir()
			if isDir && name == ".git" {
				continue
			}
			child := joinName(dir, name)
			abs := tr.abs(child)
			if ignored(ign, abs, isDir) {
				continue
			}
			r := name
			if rel != "" {
				r = rel + "/" + name
			}
			if err := fn(abs, r, e); err != nil {
				if errors.Is(err, fs.SkipDir) && isDir {
					continue
				}
				return err
			}
			if isDir {
				if err := walk(child, r, ign); err != nil {
					return err
				}
			}
		}
		return nil
	}
	err := walk(start, "", ignores)
	if errors.Is(err, errStopWalk) {
		return nil
	}
	return err
}
