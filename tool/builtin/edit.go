package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentloop/agentloop/tool"
)

// EditMaxBytes is the largest file edit changes. A normalised match maps
// every byte of the file to its origin, eight bytes each, so a far larger
// file could exhaust memory.
const EditMaxBytes = 32 << 20

// EditTool is the edit tool: it replaces exact snippets of a file. Each
// oldText must occur exactly once; when no exact match exists, a match that
// ignores trailing whitespace, Unicode compatibility forms (NFKC), smart
// quotes and dashes is tried. Either way only the matched span is replaced:
// the rest of the file keeps its bytes, its BOM and its line endings.
// Several edits apply together or not at all. The details carry a unified
// diff.
type EditTool struct{ ws *Workspace }

// NewEdit returns the edit tool over ws.
func NewEdit(ws *Workspace) *EditTool { return &EditTool{ws: ws} }

// Name returns "edit".
func (*EditTool) Name() string { return "edit" }

// Description tells the model how to use edit.
func (*EditTool) Description() string {
	return "Edit a file in the workspace by replacing text. Each edits[i].oldText must match exactly one place in the file, " +
		"whitespace and line breaks included (copy it from read output); include enough surrounding lines to make it unique. " +
		"Several non-overlapping edits in one call are matched against the original file and applied together, or not at all. " +
		"Use write to create a file or replace it whole."
}

type editArgs struct {
	Path    string  `json:"path" jsonschema:"Path of the file, relative to the workspace root or absolute"`
	Edits   []Edit  `json:"edits,omitempty" jsonschema:"Replacements to make, matched against the original file"`
	OldText *string `json:"oldText,omitempty" jsonschema:"Single-edit form: text to replace (prefer edits)"`
	NewText *string `json:"newText,omitempty" jsonschema:"Single-edit form: replacement text (prefer edits)"`
}

var editSchema = schemaOf[editArgs](func(s *jsonschema.Schema) {
	one := 1
	s.Properties["edits"].MinItems = &one
})

// Schema returns the arguments schema: path and edits[{oldText, newText}]
// (a single top-level oldText/newText pair is accepted too).
func (*EditTool) Schema() json.RawMessage { return editSchema() }

// ConcurrencySafe reports false: edits run alone.
func (*EditTool) ConcurrencySafe(tool.Call) bool { return false }

// ReadOnly reports false.
func (*EditTool) ReadOnly() bool { return false }

// Edit is one replacement of an edit call.
type Edit struct {
	OldText string `json:"oldText" jsonschema:"Text to replace, exactly as in the file"`
	NewText string `json:"newText" jsonschema:"Text to put in its place"`
}

// EditDetails is the Details of an edit result.
type EditDetails struct {
	Path string `json:"path"`
	// Diff is a unified diff of the change, with "\n" line ends.
	Diff string `json:"diff"`
	// FirstChangedLine is the first changed line of the new file, 1-based.
	FirstChangedLine int `json:"firstChangedLine"`
	// Normalized lists the edits located by the normalised match.
	Normalized []int `json:"normalized,omitempty"`
}

// Execute applies the edits.
func (t *EditTool) Execute(ctx context.Context, call tool.Call, _ func(tool.Partial)) (tool.Result, error) {
	var a editArgs
	if err := tool.DecodeArgs(call, &a); err != nil {
		return tool.Result{}, err
	}
	if a.OldText != nil {
		e := Edit{OldText: *a.OldText}
		if a.NewText != nil {
			e.NewText = *a.NewText
		}
		a.Edits = append(a.Edits, e)
	}
	if len(a.Edits) == 0 {
		return tool.Result{}, fmt.Errorf("no edits given: pass edits as [{\"oldText\": ..., \"newText\": ...}]")
	}
	real, err := t.ws.ResolveWrite(a.Path)
	if err != nil {
		return tool.Result{}, err
	}
	name, err := t.ws.writeName(real)
	if err != nil {
		return tool.Result{}, err
	}
	defer lockFile(real)()
	root := t.ws.dir
	if st, err := root.Stat(name); err == nil {
		if st.IsDir() {
			return tool.Result{}, fmt.Errorf("%s is a directory; edit changes files", a.Path)
		}
		if err := checkRegular(a.Path, st); err != nil {
			return tool.Result{}, err
		}
		if st.Size() > EditMaxBytes {
			return tool.Result{}, fmt.Errorf("%s is %d MB, over the %d MB edit works on (it holds the file in memory several times over); change it with bash (sed, a script) instead",
				a.Path, st.Size()>>20, EditMaxBytes>>20)
		}
	}
	data, err := root.ReadFile(name)
	if err != nil {
		if os.IsNotExist(err) {
			return tool.Result{}, fmt.Errorf("%s does not exist; use write to create a new file", a.Path)
		}
		return tool.Result{}, pathError(a.Path, err)
	}
	// A UTF-16 file (with its byte-order mark) is edited as text and
	// written back in its encoding.
	dec, enc := utf16WithBOM(data)
	if dec != nil {
		if data, err = dec.Bytes(data); err != nil {
			return tool.Result{}, fmt.Errorf("%s starts like UTF-16 but does not decode: %v", a.Path, err)
		}
	}
	if strings.IndexByte(string(data[:min(len(data), readSniffBytes)]), 0) >= 0 {
		return tool.Result{}, fmt.Errorf("%s is a binary file; edit changes text files only", a.Path)
	}
	if err := ctx.Err(); err != nil {
		return tool.Result{}, err
	}
	r, err := ApplyEdits(a.Path, string(data), a.Edits)
	if err != nil {
		return tool.Result{}, err
	}
	out := []byte(r.Text)
	if enc != nil {
		if out, err = enc.Bytes(out); err != nil {
			return tool.Result{}, fmt.Errorf("%s: the new text cannot be written in UTF-16: %v", a.Path, err)
		}
	}
	if err := writeFileAtomic(root, name, out); err != nil {
		return tool.Result{}, fmt.Errorf("write %s: %w", a.Path, pathError(a.Path, err))
	}
	msg := fmt.Sprintf("Edited %s: %d %s replaced.", a.Path, len(a.Edits), plural(len(a.Edits), "block", "blocks"))
	if len(r.Normalized) > 0 {
		msg += " Some old text matched only after normalising whitespace, quotes or dashes; read the file before editing it again."
	}
	res := tool.TextResult(msg)
	res.Details = detailsJSON(EditDetails{Path: a.Path, Diff: r.Diff, FirstChangedLine: r.FirstChangedLine, Normalized: r.Normalized})
	return res, nil
}

// EditResult is the outcome of ApplyEdits.
type EditResult struct {
	// Text is the new content of the file.
	Text string
	// Diff is a unified diff from the old content to Text.
	Diff string
	// FirstChangedLine is the first changed line of Text, 1-based.
	FirstChangedLine int
	// Normalized lists the indexes of edits located by the normalised
	// match rather than an exact one.
	Normalized []int
}

// ApplyEdits applies edits to src, the content of the file called name
// (used in messages). Every oldText is located in src as it is, with
// "\r\n" and "\n" treated alike; failing that, in a normalised form of both
// (NFKC, trailing whitespace dropped, smart quotes and Unicode dashes made
// ASCII). It must be found exactly once. Edits must not overlap. Only the
// located spans change: the rest of src, a byte-order mark and the line
// endings are kept, and newText takes the file's "\r\n" endings when it
// uses them. ApplyEdits fails when nothing would change.
func ApplyEdits(name, src string, edits []Edit) (EditResult, error) {
	type span struct {
		start, end int
		idx        int
		newText    string
	}
	label := func(i int) string {
		if len(edits) == 1 {
			return "oldText"
		}
		return fmt.Sprintf("edits[%d].oldText", i)
	}
	base := 0
	if strings.HasPrefix(src, "\ufeff") {
		base = len("\ufeff")
	}
	body := src[base:]
	crlf := false
	if i := strings.IndexByte(body, '\n'); i > 0 && body[i-1] == '\r' {
		crlf = true
	}
	exact := mapText(body, false)
	var fuzzy *mappedText
	var res EditResult
	spans := make([]span, 0, len(edits))
	for i, e := range edits {
		old := strings.ReplaceAll(e.OldText, "\r\n", "\n")
		if old == "" {
			return res, fmt.Errorf("%s is empty; give the exact text to replace (use write to replace a whole file)", label(i))
		}
		at, n := findUnique(exact.text, old)
		m := exact
		if n == 0 {
			if fuzzy == nil {
				fuzzy = mapText(body, true)
			}
			fo := mapText(old, true).text
			if fo != "" {
				at, n = findUnique(fuzzy.text, fo)
				old, m = fo, fuzzy
				if n == 1 {
					res.Normalized = append(res.Normalized, i)
				}
			}
		}
		switch {
		case n == 0:
			return res, fmt.Errorf("could not find %s in %s: it must match the file exactly, including whitespace, indentation and line breaks "+
				"(a match ignoring trailing whitespace, smart quotes and dashes found nothing either); read the file again and copy the text from it", label(i), name)
		case n > 1:
			return res, fmt.Errorf("found %d occurrences of %s in %s; it must match exactly once: add more context (surrounding lines) to make it unique", n, label(i), name)
		}
		s, t := m.origRange(at, at+len(old))
		nt := strings.ReplaceAll(e.NewText, "\r\n", "\n")
		if crlf {
			nt = strings.ReplaceAll(nt, "\n", "\r\n")
		}
		spans = append(spans, span{start: base + s, end: base + t, idx: i, newText: nt})
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	for k := 1; k < len(spans); k++ {
		if spans[k].start < spans[k-1].end {
			a, b := min(spans[k-1].idx, spans[k].idx), max(spans[k-1].idx, spans[k].idx)
			return res, fmt.Errorf("edits[%d] and edits[%d] overlap in %s; merge them into one edit", a, b, name)
		}
	}
	var out strings.Builder
	out.Grow(len(src))
	prev := 0
	for _, s := range spans {
		out.WriteString(src[prev:s.start])
		out.WriteString(s.newText)
		prev = s.end
	}
	out.WriteString(src[prev:])
	res.Text = out.String()
	if res.Text == src {
		return res, fmt.Errorf("the edits leave %s unchanged: newText equals the text it replaces", name)
	}
	changes := make([]diffChange, 0, len(spans))
	oldStarts := lineStarts(src)
	for _, s := range spans {
		ch := diffChange{oldStart: lineOf(oldStarts, s.start), oldEnd: lineOf(oldStarts, s.end-1) + 1}
		ch.pieces = []editPiece{{s.start, s.end, s.newText}}
		if n := len(changes); n > 0 && ch.oldStart < changes[n-1].oldEnd {
			changes[n-1].oldEnd = max(changes[n-1].oldEnd, ch.oldEnd)
			changes[n-1].pieces = append(changes[n-1].pieces, ch.pieces...)
			continue
		}
		changes = append(changes, ch)
	}
	res.Diff, res.FirstChangedLine = unifiedDiff(name, src, oldStarts, changes)
	return res, nil
}

// findUnique returns the first index of needle in hay and how many times
// it occurs, overlapping occurrences counted and occurrences that would
// split a character not.
func findUnique(hay, needle string) (first, n int) {
	first = -1
	for off := 0; off <= len(hay); {
		i := strings.Index(hay[off:], needle)
		if i < 0 {
			break
		}
		at := off + i
		// A needle that is not valid UTF-8 could match inside a character.
		if utf8.RuneStart(hay[at]) && (at+len(needle) == len(hay) || utf8.RuneStart(hay[at+len(needle)])) {
			if first < 0 {
				first = at
			}
			n++
		}
		_, size := utf8.DecodeRuneInString(hay[off+i:])
		off += i + max(size, 1)
	}
	return first, n
}

// mappedText is a normalised form of a text with, for each of its bytes,
// the span of the original text it came from, so a match found in the
// normalised form can be replaced in the original.
type mappedText struct {
	text  string
	start []int32 // nil when text is the original itself
	end   []int32
}

// origRange maps the normalised span [i, j), j > i, to the original.
func (m *mappedText) origRange(i, j int) (int, int) {
	if m.start == nil {
		return i, j
	}
	return int(m.start[i]), int(m.end[j-1])
}

// mapText normalises s: "\r\n" becomes "\n"; when fuzzy is set, trailing
// whitespace is dropped from each line and each character goes through
// fuzzyChars.
func mapText(s string, fuzzy bool) *mappedText {
	if !fuzzy && !strings.Contains(s, "\r\n") {
		return &mappedText{text: s}
	}
	m := &mappedText{start: make([]int32, 0, len(s)), end: make([]int32, 0, len(s))}
	var b strings.Builder
	b.Grow(len(s))
	emit := func(t string, from, to int) {
		b.WriteString(t)
		for range len(t) {
			m.start = append(m.start, int32(from))
			m.end = append(m.end, int32(to))
		}
	}
	for pos := 0; pos < len(s); {
		lineEnd := len(s)
		if i := strings.IndexByte(s[pos:], '\n'); i >= 0 {
			lineEnd = pos + i
		}
		content := s[pos:lineEnd]
		term := lineEnd
		if lineEnd < len(s) && strings.HasSuffix(content, "\r") {
			content = content[:len(content)-1]
			term--
		}
		if !fuzzy {
			for i := 0; i < len(content); i++ {
				emit(content[i:i+1], pos+i, pos+i+1)
			}
		} else {
			content = strings.TrimRightFunc(content, unicode.IsSpace)
			for i := 0; i < len(content); {
				n := 1
				if content[i] >= utf8.RuneSelf || i+1 < len(content) && content[i+1] >= utf8.RuneSelf {
					n = norm.NFKC.NextBoundaryInString(content[i:], true)
					if n <= 0 {
						n = len(content) - i
					}
				}
				emit(fuzzyChars(content[i:i+n]), pos+i, pos+i+n)
				i += n
			}
		}
		if lineEnd < len(s) {
			emit("\n", term, lineEnd+1)
		}
		pos = lineEnd + 1
	}
	m.text = b.String()
	return m
}

// fuzzyChars normalises one segment: NFKC, then typographic quotes,
// dashes and spaces to their ASCII forms.
func fuzzyChars(seg string) string {
	if len(seg) == 1 && seg[0] < utf8.RuneSelf {
		return seg
	}
	if r, size := utf8.DecodeRuneInString(seg); size == len(seg) {
		switch fuzzyRune(r) {
		case '\'':
			return "'"
		case '"':
			return `"`
		case '-':
			return "-"
		case ' ':
			return " "
		}
	}
	if !norm.NFKC.IsNormalString(seg) {
		seg = norm.NFKC.String(seg)
	}
	// strings.Map returns seg itself, unallocated, when nothing changes.
	return strings.Map(fuzzyRune, seg)
}

// fuzzyRune maps typographic quotes, dashes and spaces to ASCII.
func fuzzyRune(r rune) rune {
	switch r {
	case '\u2018', '\u2019', '\u201a', '\u201b':
		return '\''
	case '\u201c', '\u201d', '\u201e', '\u201f':
		return '"'
	case '\u2010', '\u2011', '\u2012', '\u2013', '\u2014', '\u2015', '\u2212':
		return '-'
	}
	if r != '\n' && r >= utf8.RuneSelf && unicode.IsSpace(r) {
		return ' '
	}
	return r
}

// lineStarts returns the offsets at which the lines of s begin.
func lineStarts(s string) []int {
	starts := []int{0}
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' && i+1 < len(s) {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// lineOf returns the index of the line holding offset off.
func lineOf(starts []int, off int) int {
	return sort.SearchInts(starts, off+1) - 1
}

// editPiece is one replacement inside a diffChange.
type editPiece struct {
	start, end int
	newText    string
}

// diffChange is a run of whole old lines [oldStart, oldEnd) that edits
// touch, with the replacements inside it.
type diffChange struct {
	oldStart, oldEnd int
	pieces           []editPiece
}

// diffContext is how many unchanged lines frame each hunk.
const diffContext = 3

// unifiedDiff renders changes to src as a unified diff and returns the
// first changed line of the new text.
func unifiedDiff(name, src string, starts []int, changes []diffChange) (string, int) {
	lineText := func(k int) string {
		end := len(src)
		if k+1 < len(starts) {
			end = starts[k+1]
		}
		l := strings.TrimSuffix(strings.TrimSuffix(src[starts[k]:end], "\n"), "\r")
		if k == 0 {
			l = strings.TrimPrefix(l, "\ufeff")
		}
		return l
	}
	type hunkChange struct {
		oldStart, oldEnd, newStart int
		newLines                   []string
	}
	var hc []hunkChange
	shift := 0 // new line number minus old line number so far
	for _, c := range changes {
		regionEnd := len(src)
		if c.oldEnd < len(starts) {
			regionEnd = starts[c.oldEnd]
		}
		var nb strings.Builder
		prev := starts[c.oldStart]
		for _, p := range c.pieces {
			nb.WriteString(src[prev:p.start])
			nb.WriteString(p.newText)
			prev = p.end
		}
		nb.WriteString(src[prev:regionEnd])
		newText := nb.String()
		var newLines []string
		if newText != "" {
			for l := range strings.SplitSeq(strings.TrimSuffix(newText, "\n"), "\n") {
				newLines = append(newLines, strings.TrimSuffix(l, "\r"))
			}
		}
		if c.oldStart == 0 && len(newLines) > 0 {
			newLines[0] = strings.TrimPrefix(newLines[0], "\ufeff")
		}
		h := hunkChange{oldStart: c.oldStart, oldEnd: c.oldEnd, newLines: newLines}
		nextShift := shift + len(newLines) - (c.oldEnd - c.oldStart)
		// Lines equal at both ends of a change are context, not change.
		for h.oldStart < h.oldEnd && len(h.newLines) > 0 && lineText(h.oldStart) == h.newLines[0] {
			h.oldStart++
			h.newLines = h.newLines[1:]
		}
		for h.oldStart < h.oldEnd && len(h.newLines) > 0 && lineText(h.oldEnd-1) == h.newLines[len(h.newLines)-1] {
			h.oldEnd--
			h.newLines = h.newLines[:len(h.newLines)-1]
		}
		h.newStart = h.oldStart + shift
		shift = nextShift
		if h.oldStart == h.oldEnd && len(h.newLines) == 0 {
			continue
		}
		hc = append(hc, h)
	}
	if len(hc) == 0 {
		return "", 0
	}
	var b strings.Builder
	fmt.Fprintf(&b, "--- a/%s\n+++ b/%s\n", name, name)
	for i := 0; i < len(hc); {
		j := i
		for j+1 < len(hc) && hc[j+1].oldStart-hc[j].oldEnd <= 2*diffContext {
			j++
		}
		from := max(0, hc[i].oldStart-diffContext)
		to := min(len(starts), hc[j].oldEnd+diffContext)
		if src == "" {
			to = 0
		}
		var body strings.Builder
		oldN, newN := 0, 0
		pos := from
		for k := i; k <= j; k++ {
			for ; pos < hc[k].oldStart; pos++ {
				body.WriteString(" " + lineText(pos) + "\n")
				oldN++
				newN++
			}
			for ; pos < hc[k].oldEnd; pos++ {
				body.WriteString("-" + lineText(pos) + "\n")
				oldN++
			}
			for _, l := range hc[k].newLines {
				body.WriteString("+" + l + "\n")
				newN++
			}
		}
		for ; pos < to; pos++ {
			body.WriteString(" " + lineText(pos) + "\n")
			oldN++
			newN++
		}
		newFrom := hc[i].newStart - (hc[i].oldStart - from)
		fmt.Fprintf(&b, "@@ -%s +%s @@\n%s", hunkRange(from, oldN), hunkRange(newFrom, newN), body.String())
		i = j + 1
	}
	return b.String(), hc[0].newStart + 1
}

// hunkRange formats a hunk's line range: 1-based start, and the count
// unless it is 1; an empty range names the line before it.
func hunkRange(start0, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start0)
	case 1:
		return fmt.Sprintf("%d", start0+1)
	}
	return fmt.Sprintf("%d,%d", start0+1, n)
}
