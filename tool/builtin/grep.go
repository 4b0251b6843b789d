package builtin

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentloop/agentloop/tool"
)

// GrepTool is the grep tool: a regular-expression search over the files
// of a directory tree (or one file), honouring .gitignore and skipping
// binary files. Results are "path:line: text" lines, context lines
// "path-line- text", with paths relative to the workspace root.
type GrepTool struct{ ws *Workspace }

// NewGrep returns the grep tool over ws.
func NewGrep(ws *Workspace) *GrepTool { return &GrepTool{ws: ws} }

// Name returns "grep".
func (*GrepTool) Name() string { return "grep" }

// Description tells the model how to use grep.
func (*GrepTool) Description() string {
	return fmt.Sprintf("Search file contents with a regular expression (Go RE2 syntax) under a directory of the workspace (default: its root) or in one file. "+
		"Respects .gitignore and skips binary files. Each match is printed as path:line: text, context lines as path-line- text. "+
		"At most %d matches unless limit says otherwise; lines are cut at %d characters.", GrepDefaultLimit, GrepMaxLineChars)
}

var grepSchema = schemaOf[grepArgs](func(s *jsonschema.Schema) { atLeast(0, "context")(s); atLeast(1, "limit")(s) })

// Schema returns the arguments schema.
func (*GrepTool) Schema() json.RawMessage { return grepSchema() }

// ConcurrencySafe reports true.
func (*GrepTool) ConcurrencySafe(tool.Call) bool { return true }

// ReadOnly reports true.
func (*GrepTool) ReadOnly() bool { return true }

type grepArgs struct {
	Pattern    string `json:"pattern" jsonschema:"Regular expression to search for (or plain text with literal=true)"`
	Path       string `json:"path,omitempty" jsonschema:"Directory or file to search, relative to the workspace root or absolute (default: the root)"`
	Glob       string `json:"glob,omitempty" jsonschema:"Only search files matching this glob, e.g. *.go or src/**/*.ts; without / it matches file names at any depth"`
	IgnoreCase bool   `json:"ignoreCase,omitempty" jsonschema:"Match case-insensitively"`
	Literal    bool   `json:"literal,omitempty" jsonschema:"Treat pattern as plain text, not a regular expression"`
	Context    int    `json:"context,omitempty" jsonschema:"Lines of context to show before and after each match"`
	Limit      int    `json:"limit,omitempty" jsonschema:"Most matches to return"`
}

// GrepDetails is the Details of a grep result.
type GrepDetails struct {
	Matches      int `json:"matches"`
	FilesMatched int `json:"filesMatched"`
	FilesScanned int `json:"filesScanned"`
	// TruncatedBy is "limit" or "bytes" when the search stopped early.
	TruncatedBy string `json:"truncatedBy,omitempty"`
}

// grepWholeFileMax is the largest file grep reads whole (and can skip with
// one search); larger files are streamed line by line.
const grepWholeFileMax = 4 << 20

// grepMaxMatchBytes is how much of one line grep matches against; the rest
// of a longer line is not searched.
const grepMaxMatchBytes = 1 << 20

// Execute runs the search.
func (t *GrepTool) Execute(ctx context.Context, call tool.Call, _ func(tool.Partial)) (tool.Result, error) {
	var a grepArgs
	if err := tool.DecodeArgs(call, &a); err != nil {
		return tool.Result{}, err
	}
	if a.Path == "" {
		a.Path = "."
	}
	s, err := newGrepSearch(t.ws, a)
	if err != nil {
		return tool.Result{}, err
	}
	start, err := t.ws.ResolveRead(a.Path)
	if err != nil {
		return tool.Result{}, err
	}
	tr, name, err := t.ws.readTree(start)
	if err != nil {
		return tool.Result{}, err
	}
	defer tr.close()
	fi, err := fs.Stat(tr.fsys, name)
	if err != nil {
		return tool.Result{}, pathError(a.Path, err)
	}
	if err := checkRegular(a.Path, fi); err != nil {
		return tool.Result{}, err
	}
	if !fi.IsDir() {
		if err := s.file(ctx, tr, name); err != nil && err != errStopWalk {
			return tool.Result{}, err
		}
	} else {
		err = walkFiles(ctx, tr, name, ancestorIgnores(tr, t.ws.Root(), name), func(abs, rel string, d fs.DirEntry) error {
			if !d.Type().IsRegular() {
				return nil
			}
			if s.glob != nil && !s.glob.match(rel) {
				return nil
			}
			return s.file(ctx, tr, tr.name(abs))
		})
		if err != nil {
			return tool.Result{}, err
		}
	}
	res := tool.TextResult(s.finish(a))
	res.Details = detailsJSON(s.d)
	return res, nil
}

// grepSearch is the state of one grep call.
type grepSearch struct {
	ws  *Workspace
	re  *regexp.Regexp
	pre *regexp.Regexp // whole-file filter; nil when it could miss matches
	// preDollar is set when the pattern may use $.
	preDollar bool
	glob      *pathGlob
	context   int
	limit     int
	out       bytes.Buffer
	d         GrepDetails
	// lastFile and lastLine say where the last printed line was, for the
	// "--" separators between groups in context mode.
	lastFile string
	lastLine int
	lr       fileLineReader
	// buf holds the file being searched, reused across files.
	buf []byte
	// folded is the case-folded pattern when it is a literal searched
	// without regard to case: a file whose folded content lacks it is
	// skipped without running the (slow) case-insensitive regexp.
	folded  []byte
	foldBuf []byte
	br      *bufio.Reader
}

func newGrepSearch(ws *Workspace, a grepArgs) (*grepSearch, error) {
	expr := a.Pattern
	if a.Literal {
		expr = regexp.QuoteMeta(expr)
	}
	flags := ""
	if a.IgnoreCase {
		flags = "(?i)"
	}
	re, err := regexp.Compile(flags + expr)
	if err != nil {
		return nil, fmt.Errorf("pattern %q is not a valid regular expression: %v; fix it, or set literal=true to search for the text as written", a.Pattern, err)
	}
	s := &grepSearch{ws: ws, re: re, context: max(a.Context, 0), limit: a.Limit}
	if s.limit <= 0 {
		s.limit = GrepDefaultLimit
	}
	// A per-line match is also a match of the whole file in multi-line
	// mode, unless the pattern anchors at the text's own ends.
	if !strings.Contains(expr, `\A`) && !strings.Contains(expr, `\z`) {
		s.pre, _ = regexp.Compile("(?m)" + flags + expr)
		s.preDollar = strings.Contains(expr, "$")
	}
	if a.IgnoreCase {
		if lit, ok := literalPattern(expr); ok {
			s.folded = foldCase(nil, []byte(lit))
		}
	}
	if a.Glob != "" {
		if s.glob, err = newPathGlob(a.Glob); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// file searches one file. It returns errStopWalk when a limit is reached.
func (s *grepSearch) file(ctx context.Context, tr tree, fname string) error {
	abs := tr.abs(fname)
	f, err := tr.fsys.Open(fname)
	if err != nil {
		return nil // unreadable files are skipped, as ripgrep does
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	s.d.FilesScanned++
	name := s.ws.Rel(abs)
	if fi.Size() <= grepWholeFileMax {
		data, err := s.readAll(f, fi.Size())
		if err != nil || bytes.IndexByte(data[:min(len(data), readSniffBytes)], 0) >= 0 {
			return nil
		}
		if s.folded != nil {
			s.foldBuf = foldCase(s.foldBuf[:0], data)
			if !bytes.Contains(s.foldBuf, s.folded) {
				return nil
			}
		} else if s.pre != nil && !(s.preDollar && bytes.IndexByte(data, '\r') >= 0) && !s.pre.Match(data) {
			// In multi-line mode $ matches before "\n" only, so a file with
			// "\r\n" lines cannot be filtered by a pattern using $.
			return nil
		}
		return s.lines(ctx, name, func() ([]byte, bool) {
			if len(data) == 0 {
				return nil, false
			}
			i := bytes.IndexByte(data, '\n')
			var line []byte
			if i < 0 {
				line, data = data, nil
			} else {
				line, data = data[:i], data[i+1:]
			}
			return bytes.TrimSuffix(line, []byte("\r")), true
		})
	}
	if s.br == nil {
		s.br = bufio.NewReaderSize(f, 64<<10)
	} else {
		s.br.Reset(f)
	}
	if head, _ := s.br.Peek(readSniffBytes); bytes.IndexByte(head, 0) >= 0 {
		return nil
	}
	s.lr = fileLineReader{r: s.br, buf: s.lr.buf}
	return s.lines(ctx, name, func() ([]byte, bool) {
		line, _, ok, err := s.lr.next(grepMaxMatchBytes)
		return line, ok && err == nil
	})
}

// readAll reads a file of about size bytes into the reused buffer.
func (s *grepSearch) readAll(f io.Reader, size int64) ([]byte, error) {
	if int64(cap(s.buf)) < size+1 {
		s.buf = make([]byte, 0, size+512)
	}
	buf := s.buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			s.buf = buf
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// literalPattern reports whether the regular expression expr matches one
// fixed string (whatever the case), and returns it.
func literalPattern(expr string) (string, bool) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return "", false
	}
	re = re.Simplify()
	if re.Op != syntax.OpLiteral || len(re.Rune) == 0 {
		return "", false
	}
	return string(re.Rune), true
}

// foldCase appends src to dst with every character replaced by the
// smallest member of its Unicode case-folding orbit, the equivalence the
// regexp package uses for (?i). Invalid bytes are copied as they are.
func foldCase(dst, src []byte) []byte {
	for i := 0; i < len(src); {
		c := src[i]
		if c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A' // the upper case is the smaller
			}
			dst = append(dst, c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(src[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, c)
			i++
			continue
		}
		low := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			low = min(low, f)
		}
		dst = utf8.AppendRune(dst, low)
		i += size
	}
	return dst
}

// lines searches the lines next yields and prints matches with context.
func (s *grepSearch) lines(ctx context.Context, name string, next func() ([]byte, bool)) error {
	type held struct {
		n    int
		text string
	}
	var before []held // the last s.context unprinted lines
	after := 0
	matched := false
	for n := 1; ; n++ {
		line, ok := next()
		if !ok {
			return nil
		}
		if n%8192 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if s.re.Match(line) {
			if s.d.Matches == s.limit {
				s.d.TruncatedBy = "limit"
				return errStopWalk
			}
			if !matched {
				matched = true
				s.d.FilesMatched++
			}
			for _, h := range before {
				if !s.print(name, h.n, '-', h.text) {
					return errStopWalk
				}
			}
			before = before[:0]
			if !s.print(name, n, ':', grepCut(line)) {
				return errStopWalk
			}
			s.d.Matches++
			after = s.context
			continue
		}
		if after > 0 {
			after--
			if !s.print(name, n, '-', grepCut(line)) {
				return errStopWalk
			}
			continue
		}
		if s.context > 0 {
			if len(before) == s.context {
				copy(before, before[1:])
				before = before[:len(before)-1]
			}
			before = append(before, held{n, grepCut(line)})
		}
	}
}

// print writes one output line, with a "--" between separate groups in
// context mode. It returns false when the output is full.
func (s *grepSearch) print(name string, n int, sep byte, text string) bool {
	var extra int
	group := s.context > 0 && s.lastFile != "" && (s.lastFile != name || s.lastLine != n-1)
	if group {
		extra = 3
	}
	line := fmt.Sprintf("%s%c%d%c %s\n", name, sep, n, sep, text)
	if s.out.Len()+extra+len(line) > ReadMaxBytes {
		s.d.TruncatedBy = "bytes"
		return false
	}
	if group {
		s.out.WriteString("--\n")
	}
	s.out.WriteString(line)
	s.lastFile, s.lastLine = name, n
	return true
}

// grepCut returns line as text cut at GrepMaxLineChars characters.
func grepCut(line []byte) string {
	s, cut := cutLine(line, len(line), GrepMaxLineChars)
	if cut {
		s += " [… line cut]"
	}
	return s
}

func (s *grepSearch) finish(a grepArgs) string {
	if s.d.Matches == 0 {
		return fmt.Sprintf("No matches for %q in %s.", a.Pattern, a.Path)
	}
	out := strings.TrimSuffix(s.out.String(), "\n")
	switch s.d.TruncatedBy {
	case "limit":
		out += fmt.Sprintf("\n\n[Stopped at %d matches. Use limit=%d for more, or narrow the pattern.]", s.limit, s.limit*2)
	case "bytes":
		out += fmt.Sprintf("\n\n[Output stopped at %d KB after %d matches. Narrow the pattern, path or glob.]", ReadMaxBytes/1024, s.d.Matches)
	}
	return out
}
