package builtin

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// IsReadOnlyCommand reports whether a shell command can only read: such a
// call may run beside other tool calls, and approvals (--approve never)
// let it through. The command is parsed as bash (mvdan.cc/sh) and judged
// on its syntax tree, by what each part can do, never by its spelling:
//
//   - every simple command must be a program this file knows, called only
//     with options it knows to read (GNU long options are resolved from
//     their abbreviations the way the program does, so sed --in is
//     --in-place); an unknown option, or a word whose value is not known
//     before it runs (a glob, $VAR) where an option could be, makes it
//     false; an unquoted $VAR (or "$@") is split by bash into words, any
//     of which may be an option whatever precedes it in the word, so only
//     programs none of whose options write or execute accept one;
//   - program arguments that are programs themselves are read too: a sed
//     script with e, r, R, w or W (or s///e, s///w), find -exec, git -c;
//   - no command or process substitution, arithmetic, function
//     definition, redirection to anything but /dev/null, /dev/stdout,
//     /dev/stderr or a descriptor, input only from a path known before
//     it runs and not a device bash opens as a socket (/dev/tcp/...), and
//     no assignment except of a plain word (no blank, no glob) to the
//     locale and display variables (PATH, LD_PRELOAD, BASH_ENV, ... are
//     never safe); printf -v, which assigns, is refused too;
//   - printenv and env, which print the environment (secrets), are not
//     read-only in this sense.
//
// When unsure it says false. It judges the command line, not the machine:
// which program a name runs depends on PATH, and git runs what a
// repository's own configuration names (an fsmonitor, a diff driver), so
// in an untrusted checkout the sandbox is the boundary.
func IsReadOnlyCommand(command string) bool {
	if strings.TrimSpace(command) == "" || strings.IndexByte(command, 0) >= 0 {
		return false // a NUL cannot reach bash in its argv
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(command), "")
	if err != nil || len(f.Stmts) == 0 {
		return false
	}
	if !shellNodesSafe(f) {
		return false
	}
	for _, s := range f.Stmts {
		if !shellStmtReadOnly(s) {
			return false
		}
	}
	return true
}

// shellNodesSafe rejects, anywhere in the tree, the constructs that run
// code or assign while a word is expanded.
func shellNodesSafe(f *syntax.File) bool {
	ok := true
	syntax.Walk(f, func(n syntax.Node) bool {
		if !ok {
			return false
		}
		switch n := n.(type) {
		case *syntax.CmdSubst, *syntax.ProcSubst, *syntax.ArithmExp, *syntax.ArithmCmd,
			*syntax.FuncDecl, *syntax.CoprocClause, *syntax.LetClause, *syntax.DeclClause,
			*syntax.TestClause, *syntax.ExtGlob:
			ok = false
		case *syntax.ParamExp:
			ok = shellParamSafe(n)
		}
		return ok
	})
	return ok
}

// shellParamSafe accepts $name, ${name}, ${#name} and the expansions that
// only transform a value; ${name:=x} assigns, ${!name} and subscripts can
// evaluate a variable's value as code, and ${name@P} expands a prompt.
func shellParamSafe(p *syntax.ParamExp) bool {
	if p.Param == nil || p.Excl || p.Index != nil || p.Slice != nil || p.Names != 0 || p.NestedParam != nil ||
		p.Flags != nil || len(p.Modifiers) > 0 || p.Width || p.IsSet {
		return false
	}
	if p.Exp != nil {
		switch p.Exp.Op {
		case syntax.AssignUnset, syntax.AssignUnsetOrNull, syntax.OtherParamOps,
			syntax.MatchEmpty, syntax.ArrayExclude, syntax.ArrayIntersect:
			return false
		}
	}
	return true
}

// shellStmtReadOnly judges one statement: its redirections and its
// command, recursively through pipelines, lists, groups and subshells.
func shellStmtReadOnly(s *syntax.Stmt) bool {
	if s.Background || s.Coprocess || s.Disown {
		return false
	}
	for _, r := range s.Redirs {
		if !shellRedirectReadOnly(r) {
			return false
		}
	}
	switch c := s.Cmd.(type) {
	case nil:
		return true // bare redirections, judged above
	case *syntax.CallExpr:
		return shellCallReadOnly(c)
	case *syntax.BinaryCmd:
		return shellStmtReadOnly(c.X) && shellStmtReadOnly(c.Y)
	case *syntax.Block:
		return shellStmtsReadOnly(c.Stmts)
	case *syntax.Subshell:
		return shellStmtsReadOnly(c.Stmts)
	}
	return false // loops, if, case, time, functions: not followed
}

func shellStmtsReadOnly(stmts []*syntax.Stmt) bool {
	for _, s := range stmts {
		if !shellStmtReadOnly(s) {
			return false
		}
	}
	return true
}

// shellRedirectReadOnly accepts reading a file, here-documents and
// strings, duplicating a descriptor, and writing to /dev/null,
// /dev/stdout or /dev/stderr.
func shellRedirectReadOnly(r *syntax.Redirect) bool {
	if r.N != nil && !shellAllDigits(r.N.Value) {
		return false // {var}> assigns a descriptor number to var
	}
	w := shellWordOf(r.Word)
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		return true // the text is data; expansions in it were judged already
	case syntax.RdrIn:
		return w.static && shellInputPath(w.val)
	case syntax.DplIn, syntax.DplOut:
		if w.static && (w.val == "-" || shellAllDigits(w.val)) {
			return true
		}
		return r.Op == syntax.DplOut && r.N == nil && w.static && shellDevOut(w.val) // >&file is &>file
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.RdrAll, syntax.AppAll:
		return w.static && shellDevOut(w.val)
	}
	return false // <> opens read-write
}

// shellInputPath accepts a file to read from, except the devices: bash
// itself opens /dev/tcp/HOST/PORT and /dev/udp/HOST/PORT as sockets, so
// only the few that read nothing, or data, are allowed under /dev.
func shellInputPath(p string) bool {
	if p == "" {
		return false
	}
	if strings.HasPrefix(p, "/dev/") || strings.HasPrefix(path.Clean(p), "/dev/") {
		switch p {
		case "/dev/null", "/dev/stdin", "/dev/zero", "/dev/urandom", "/dev/random":
			return true
		}
		return false
	}
	return true
}

func shellDevOut(p string) bool {
	return p == "/dev/null" || p == "/dev/stdout" || p == "/dev/stderr"
}

func shellAllDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// shellWord is what is known of a word before the shell expands it.
type shellWord struct {
	// val is the word after quote removal when static; else its static
	// prefix, up to the first expansion.
	val string
	// static is true when the word's value is val, whatever the
	// environment and the files.
	static bool
	// multi is true when the word may expand to several words or none
	// (an unquoted $VAR, a glob, a brace expansion).
	multi bool
	// split is true when the word holds an unquoted expansion (or "$@"):
	// bash splits its value into words, so any word after the first may be
	// an option, whatever the static prefix. A glob or brace expansion
	// keeps the prefix in every word it makes, and is multi only.
	split bool
}

// maybeOption reports whether the word may be, or expand to, an option.
func (w shellWord) maybeOption() bool {
	if w.split {
		return true
	}
	if w.static {
		return strings.HasPrefix(w.val, "-") && w.val != "-"
	}
	return w.val == "" || strings.HasPrefix(w.val, "-")
}

// shellWordOf computes what is known of w. A nil word is static and
// empty.
func shellWordOf(w *syntax.Word) shellWord {
	out := shellWord{static: true}
	if w == nil {
		return out
	}
	var b strings.Builder
	dynamic := func(multi bool) {
		if out.static {
			out.val = b.String()
			out.static = false
		}
		out.multi = out.multi || multi
	}
	for i, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			v := p.Value
			if i == 0 && strings.HasPrefix(v, "~") {
				dynamic(false) // tilde expansion: a home directory
			}
			if j := shellGlobAt(v); j >= 0 {
				// A glob or a brace expansion: b gets the text before it.
				b.WriteString(shellUnescape(v[:j]))
				dynamic(true)
			}
			b.WriteString(shellUnescape(v))
		case *syntax.SglQuoted:
			if p.Dollar {
				dynamic(false) // $'...': escapes not decoded here
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				switch q := q.(type) {
				case *syntax.Lit:
					b.WriteString(shellUnescapeDouble(q.Value))
				case *syntax.ParamExp:
					// "$@" makes one word per parameter, "$VAR" one word.
					all := q.Param != nil && q.Param.Value == "@"
					dynamic(all)
					out.split = out.split || all
				default:
					dynamic(false)
				}
			}
		default: // $VAR unquoted
			dynamic(true)
			out.split = true
		}
	}
	if out.static {
		out.val = b.String()
	}
	return out
}

// shellGlobAt returns the index of the first character of an unquoted
// literal that may start a glob (* ?, [ with a ] after it) or a brace
// expansion ({ with a } after it), or -1. Escaped ones count too: when
// unsure, the word is taken as not known.
func shellGlobAt(v string) int {
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '*', '?':
			return i
		case '[':
			if strings.IndexByte(v[i:], ']') > 0 {
				return i
			}
		case '{':
			if strings.IndexByte(v[i:], '}') > 0 {
				return i
			}
		}
	}
	return -1
}

// shellUnescape removes the backslashes of an unquoted literal.
func shellUnescape(s string) string {
	return shellUnescapeIf(s, func(byte) bool { return true })
}

// shellUnescapeDouble removes the backslashes that escape inside double
// quotes: before $, `, ", \ and a newline.
func shellUnescapeDouble(s string) string {
	return shellUnescapeIf(s, func(c byte) bool { return strings.IndexByte("$`\"\\\n", c) >= 0 })
}

// shellUnescapeIf drops each backslash before a character escapes
// accepts (a backslash-newline goes entirely).
func shellUnescapeIf(s string, escapes func(byte) bool) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && escapes(s[i+1]) {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// shellSafeVar reports whether assigning a variable cannot change which
// program runs or what it does beyond formatting.
func shellSafeVar(name string) bool {
	switch name {
	case "LANG", "LANGUAGE", "TZ", "NO_COLOR", "TERM", "COLUMNS", "LINES", "CLICOLOR", "FORCE_COLOR":
		return true
	}
	return strings.HasPrefix(name, "LC_")
}

// shellCallReadOnly judges one simple command.
func shellCallReadOnly(c *syntax.CallExpr) bool {
	for _, a := range c.Assigns {
		if a.Append || a.Naked || a.Index != nil || a.Array != nil || !shellSafeVar(a.Name.Value) {
			return false
		}
		// A later $LANG is split into words and globbed: only a value that
		// stays one plain word is accepted.
		if v := shellWordOf(a.Value); !v.static || strings.ContainsAny(v.val, " \t\n*?[]{}~") {
			return false
		}
	}
	if len(c.Args) == 0 {
		return true // only harmless assignments
	}
	words := make([]shellWord, len(c.Args))
	for i, a := range c.Args {
		words[i] = shellWordOf(a)
	}
	name := words[0]
	if !name.static || strings.Contains(name.val, "/") {
		return false
	}
	spec, ok := shellPrograms()[name.val]
	if !ok {
		return false
	}
	return spec.check(words[1:])
}
