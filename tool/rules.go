package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Permission rules in Claude Code's syntax, as its settings files write
// them under "permissions": "allow", "ask" and "deny" lists of rules
// "Tool" (every call of the tool) or "Tool(specifier)":
//
//   - Bash(npm run test) is that command exactly; Bash(git diff:*) is
//     "git diff" and every command that goes on from it after a space;
//     a * anywhere matches any text (Bash(git * main)), and a pattern
//     whose only * ends it after a space also matches without it
//     (Bash(ls *) matches "ls"). A compound command (&&, ||, ;, |, $(…))
//     is allowed only when each of its commands is, and denied or asked
//     about when any one is.
//   - Read, Edit and Write take a path pattern, gitignore-style: //abs is
//     an absolute path, ~/p is under the home directory, /p and ./p and p
//     are under the workspace, and a pattern without a slash matches at any
//     depth; * stays within a directory, ** spans directories, and a
//     pattern matching a directory matches everything in it. Read rules
//     apply to read, grep, find and ls; Edit rules to edit and write.
//   - mcp__server is every tool of that MCP server, mcp__server__tool one.
//
// Deny rules are looked at first, then ask, then allow; the first that
// matches decides, so a deny is never carved out by an allow.

// PermissionRule is one parsed rule.
type PermissionRule struct {
	Verdict Verdict // VerdictAllow, VerdictAsk or VerdictDeny: the list it is in
	Text    string  // as written
	Source  string  // where it was written (a settings file)

	tool    string // Claude Code's tool name, or ours
	spec    string
	hasSpec bool
}

// ParsePermissionRule parses one rule of list v.
func ParsePermissionRule(v Verdict, text, source string) (PermissionRule, error) {
	text = strings.TrimSpace(text)
	r := PermissionRule{Verdict: v, Text: text, Source: source, tool: text}
	if i := strings.IndexByte(text, '('); i >= 0 {
		if !strings.HasSuffix(text, ")") {
			return r, fmt.Errorf("permission rule %q: the specifier has no closing parenthesis", text)
		}
		r.tool, r.spec, r.hasSpec = strings.TrimSpace(text[:i]), strings.TrimSpace(text[i+1:len(text)-1]), true
		if r.spec == "" || r.spec == "*" {
			r.hasSpec = false // Bash() and Bash(*) are every call
		}
	}
	if r.tool == "" {
		return r, fmt.Errorf("permission rule %q names no tool", text)
	}
	return r, nil
}

// claudeTools maps Claude Code's tool names to the built-in tools they
// cover here; the first is the tool's own counterpart (ClaudeCounterpart).
var claudeTools = map[string][]string{
	"Bash":         {"bash"},
	"Read":         {"read", "grep", "find", "ls"},
	"Edit":         {"edit", "write"},
	"MultiEdit":    {"edit"},
	"NotebookEdit": {"edit"},
	"Write":        {"write"},
	"Grep":         {"grep"},
	"Glob":         {"find"},
	"LS":           {"ls"},
	"Task":         {"agent"},
	"Agent":        {"agent"},
}

// ClaudeCounterpart returns the tool of ours that Claude Code's tool of
// that name is (Bash is bash, Glob is find, Task is agent), and whether
// there is one (WebFetch has none).
func ClaudeCounterpart(name string) (string, bool) {
	ts, ok := claudeTools[name]
	if !ok {
		return "", false
	}
	return ts[0], true
}

// pathTools are the tools whose calls name a path in "path" ("" is the
// workspace).
var pathTools = map[string]bool{"read": true, "write": true, "edit": true, "grep": true, "find": true, "ls": true}

// Tools returns the tools of names (the run's) the rule covers, and, when
// it covers none of them, why.
func (r PermissionRule) Tools(names []string) ([]string, string) {
	var out []string
	for _, n := range names {
		if r.coversTool(n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		if strings.HasPrefix(r.tool, "mcp__") {
			return nil, "no MCP tool of this run has that name"
		}
		return nil, fmt.Sprintf("agentloop has no %s tool", r.tool)
	}
	if r.hasSpec && !strings.HasPrefix(r.tool, "mcp__") && out[0] != "bash" && !pathTools[out[0]] {
		return nil, fmt.Sprintf("%s takes no specifier here", r.tool)
	}
	return out, ""
}

func (r PermissionRule) coversTool(name string) bool {
	if strings.HasPrefix(r.tool, "mcp__") {
		if r.tool == name {
			return true
		}
		server := strings.TrimSuffix(strings.TrimSuffix(r.tool, "*"), "__")
		return !strings.Contains(strings.TrimPrefix(server, "mcp__"), "__") && strings.HasPrefix(name, server+"__")
	}
	if ts, ok := claudeTools[r.tool]; ok {
		for _, t := range ts {
			if t == name {
				return true
			}
		}
		return false
	}
	return r.tool == name // our own names: bash, read, …
}

// PermissionRules are the rules of a run, over a workspace.
type PermissionRules struct {
	Rules []PermissionRule
	// Workspace is the directory relative patterns start from; Home the
	// one ~/ names.
	Workspace, Home string
}

// DeniedTools returns, as tool-policy names and globs, the tools that deny
// rules without a specifier refuse whole ("Bash", "Edit", "mcp__fs"): as
// in Claude Code, such a tool is not offered at all, where a rule with a
// specifier (Bash(rm:*)) refuses only the calls it matches.
func (rs *PermissionRules) DeniedTools() []string {
	if rs == nil {
		return nil
	}
	var out []string
	for _, r := range rs.Rules {
		if r.Verdict != VerdictDeny || r.hasSpec {
			continue
		}
		switch ts, ok := claudeTools[r.tool]; {
		case ok:
			out = append(out, ts...)
		case strings.HasPrefix(r.tool, "mcp__") && !strings.Contains(strings.TrimPrefix(r.tool, "mcp__"), "__"):
			out = append(out, r.tool+"__*") // a whole server
		default:
			out = append(out, r.tool)
		}
	}
	return out
}

// Match returns the rule that decides call: the first deny rule that
// matches, else the first ask rule, else an allow rule (for a compound
// bash command, one for each of its commands). ok is false when no rule
// decides.
func (rs *PermissionRules) Match(call Call) (PermissionRule, bool) {
	if rs == nil {
		return PermissionRule{}, false
	}
	var cmds []string
	if call.Name == "bash" {
		cmds = bashCommands(bashCommandArg(call.Args))
	}
	for _, v := range []Verdict{VerdictDeny, VerdictAsk} {
		for _, r := range rs.Rules {
			if r.Verdict == v && rs.matches(r, call, cmds, false) {
				return r, true
			}
		}
	}
	if call.Name == "bash" && len(cmds) > 1 {
		var first PermissionRule
		for i, c := range cmds {
			found := false
			for _, r := range rs.Rules {
				if r.Verdict == VerdictAllow && rs.matches(r, call, []string{c}, true) {
					if i == 0 {
						first = r
					}
					found = true
					break
				}
			}
			if !found {
				return PermissionRule{}, false
			}
		}
		return first, true
	}
	for _, r := range rs.Rules {
		if r.Verdict == VerdictAllow && rs.matches(r, call, cmds, true) {
			return r, true
		}
	}
	return PermissionRule{}, false
}

// matches reports whether r covers call. For bash, cmds are the
// command's simple commands: an allow must match them all (one, here), a
// deny or ask any of them or the command as written.
func (rs *PermissionRules) matches(r PermissionRule, call Call, cmds []string, allow bool) bool {
	if !r.coversTool(call.Name) {
		return false
	}
	if !r.hasSpec || strings.HasPrefix(r.tool, "mcp__") {
		return true
	}
	switch {
	case call.Name == "bash":
		if len(cmds) == 0 {
			// Not parsed: an allow cannot be proven, a deny is matched
			// on the text as written.
			return !allow && bashSpecMatch(r.spec, strings.TrimSpace(bashCommandArg(call.Args)))
		}
		if !allow && bashSpecMatch(r.spec, strings.TrimSpace(bashCommandArg(call.Args))) {
			return true
		}
		if allow && !bashAllowable(bashCommandArg(call.Args)) {
			// The words match, but the command also writes a file or
			// changes what runs: the rule did not allow that.
			return false
		}
		for _, c := range cmds {
			m := bashSpecMatch(r.spec, c)
			if allow && !m {
				return false
			}
			if !allow && m {
				return true
			}
		}
		return allow
	case pathTools[call.Name]:
		// The path as written and the file it names once symlinks are
		// resolved: a deny or ask covers either, an allow must cover both.
		p := rs.callPath(call)
		lexical := pathSpecMatch(r.spec, p, rs.Workspace, rs.Home)
		resolved := pathSpecMatch(r.spec, rs.resolve(p), rs.Workspace, rs.Home)
		if allow {
			return lexical && resolved
		}
		if lexical || resolved {
			return true
		}
		// A tool that reads the files under a directory reads what the
		// rule denies there: the call is refused rather than walked.
		return walkTools[call.Name] && rs.containsMatch(r.spec, p)
	}
	return false
}

// Policy returns an approval policy that decides by the rules first and
// leaves the calls no rule covers to next (nil: ApproveAuto).
func (rs *PermissionRules) Policy(next ApprovalPolicy) ApprovalPolicy {
	if next == nil {
		next = ApproveAuto
	}
	return func(ctx context.Context, call Call, readOnly bool) Decision {
		r, ok := rs.Match(call)
		if !ok {
			return next(ctx, call, readOnly)
		}
		where := r.Source
		if where == "" {
			where = "the run's rules"
		}
		switch r.Verdict {
		case VerdictDeny:
			return Decision{Verdict: VerdictDeny, Reason: fmt.Sprintf(
				"Denied by the permission rule %q (deny list of %s). Do not retry it; carry on another way or tell the user what you wanted to do.", r.Text, where)}
		case VerdictAsk:
			return Decision{Verdict: VerdictAsk, Reason: fmt.Sprintf("the permission rule %q of %s asks about it", r.Text, where)}
		}
		return Decision{Verdict: VerdictAllow}
	}
}

func bashCommandArg(args json.RawMessage) string {
	var a struct {
		Command string `json:"command"`
	}
	_ = json.Unmarshal(args, &a)
	return a.Command
}

// bashCommands returns the simple commands of a shell command line, each
// as printed from its syntax tree, those inside $(…) included; nil when it
// does not parse.
func bashCommands(command string) []string {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(command), "")
	if err != nil {
		return nil
	}
	var out []string
	pr := syntax.NewPrinter(syntax.SingleLine(true))
	syntax.Walk(f, func(n syntax.Node) bool {
		c, ok := n.(*syntax.CallExpr)
		if !ok || len(c.Args) == 0 {
			return true
		}
		var b strings.Builder
		if err := pr.Print(&b, &syntax.CallExpr{Args: c.Args}); err == nil {
			out = append(out, strings.TrimSpace(b.String()))
		}
		return true
	})
	if len(out) == 0 {
		return nil
	}
	return out
}

// bashAllowable reports whether an allow rule may cover command: it has
// no redirection that writes (other than to /dev/null, /dev/stdout,
// /dev/stderr or a file descriptor), no assignment (a prefix like
// LD_PRELOAD=… or PATH=…, or one alone), no declare/export/local/readonly,
// no function definition, and no builtin that changes or runs what comes
// next (alias, eval, source, .). A rule's words say which command, not
// which file it may write or which environment it runs in.
func bashAllowable(command string) bool {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(command), "")
	if err != nil {
		return false
	}
	ok := true
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Stmt:
			for _, r := range n.Redirs {
				if !allowRuleRedirect(r) {
					ok = false
				}
			}
		case *syntax.CallExpr:
			if len(n.Assigns) > 0 {
				ok = false
			}
			if len(n.Args) > 0 {
				switch n.Args[0].Lit() {
				case "alias", "eval", "source", ".", "declare", "typeset", "export", "local", "readonly", "builtin", "enable":
					ok = false
				}
			}
		case *syntax.DeclClause, *syntax.FuncDecl, *syntax.LetClause:
			ok = false
		}
		return ok
	})
	return ok
}

// allowRuleRedirect accepts the redirections an allowed command may have:
// reading a file, here-documents, and writing only to the terminal's
// streams, /dev/null or another file descriptor.
func allowRuleRedirect(r *syntax.Redirect) bool {
	target := ""
	if r.Word != nil {
		target = r.Word.Lit() // "" unless static
	}
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		return true
	case syntax.RdrIn:
		return target != "" && !strings.HasPrefix(target, "/dev/tcp/") && !strings.HasPrefix(target, "/dev/udp/")
	case syntax.DplIn, syntax.DplOut:
		if target == "-" || target != "" && strings.Trim(target, "0123456789") == "" {
			return true
		}
	}
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.ClbOut, syntax.RdrAll, syntax.AppAll, syntax.DplOut:
		switch target {
		case "/dev/null", "/dev/stdout", "/dev/stderr":
			return true
		}
	}
	return false
}

// bashSpecMatch matches one command against a Bash specifier.
func bashSpecMatch(spec, cmd string) bool {
	cmd = strings.Join(strings.Fields(cmd), " ")
	if prefix, ok := strings.CutSuffix(spec, ":*"); ok {
		prefix = strings.Join(strings.Fields(prefix), " ")
		return cmd == prefix || strings.HasPrefix(cmd, prefix+" ")
	}
	if !strings.Contains(spec, "*") {
		return cmd == strings.Join(strings.Fields(spec), " ")
	}
	if strings.Count(spec, "*") == 1 && strings.HasSuffix(spec, " *") && cmd == strings.TrimSpace(strings.TrimSuffix(spec, "*")) {
		return true
	}
	return wildcard(spec, cmd)
}

// wildcard matches s against pattern, where * is any text.
func wildcard(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for i, p := range parts[1:] {
		if i == len(parts)-2 {
			return strings.HasSuffix(s, p)
		}
		j := strings.Index(s, p)
		if j < 0 {
			return false
		}
		s = s[j+len(p):]
	}
	return true
}

// walkTools are the path tools that read the contents of every file under
// a directory they are given. (find and ls show names only.)
var walkTools = map[string]bool{"grep": true}

// maxContainsWalk bounds the entries containsMatch looks at; a larger tree
// counts as containing a match.
const maxContainsWalk = 100000

// resolve is p with its symlinks resolved (for a path that does not exist
// yet, its nearest existing parent's), put back under the workspace as
// written when it lies in the workspace's resolved directory.
func (rs *PermissionRules) resolve(p string) string {
	native := filepath.FromSlash(p)
	rest := ""
	for {
		r, err := filepath.EvalSymlinks(native)
		if err == nil {
			native = filepath.Join(r, rest)
			break
		}
		parent := filepath.Dir(native)
		if parent == native {
			return p
		}
		rest = filepath.Join(filepath.Base(native), rest)
		native = parent
	}
	if rs.Workspace != "" {
		if ws, err := filepath.EvalSymlinks(rs.Workspace); err == nil {
			if rel, err := filepath.Rel(ws, native); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				native = filepath.Join(rs.Workspace, rel)
			}
		}
	}
	return filepath.ToSlash(filepath.Clean(native))
}

// containsMatch reports whether a file under the directory dir (or dir,
// a file) matches spec, by name or once its symlinks are resolved.
func (rs *PermissionRules) containsMatch(spec, dir string) bool {
	found, n := false, 0
	root, err := filepath.EvalSymlinks(filepath.FromSlash(dir)) // a linked directory is walked too
	if err != nil {
		return false
	}
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if n++; n > maxContainsWalk {
			found = true
			return filepath.SkipAll
		}
		rel, _ := filepath.Rel(root, p)
		sp := path.Join(dir, filepath.ToSlash(rel))
		if pathSpecMatch(spec, sp, rs.Workspace, rs.Home) ||
			d.Type()&os.ModeSymlink != 0 && pathSpecMatch(spec, rs.resolve(sp), rs.Workspace, rs.Home) {
			found = true
			return filepath.SkipAll
		}
		return nil
	})
	return found
}

// callPath is the absolute path a file tool's call names.
func (rs *PermissionRules) callPath(call Call) string {
	var a struct {
		Path string `json:"path"`
	}
	_ = json.Unmarshal(call.Args, &a)
	p := a.Path
	if p == "" {
		p = "."
	}
	if strings.HasPrefix(p, "~/") && rs.Home != "" {
		p = filepath.Join(rs.Home, p[2:])
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(rs.Workspace, p)
	}
	return filepath.ToSlash(filepath.Clean(p))
}

// pathSpecMatch matches the absolute path p against a gitignore-style
// path pattern.
func pathSpecMatch(spec, p, workspace, home string) bool {
	pat, ok := pathSpecPattern(spec, workspace, home)
	return ok && globMatch(pat, strings.Split(strings.TrimPrefix(p, "/"), "/"))
}

// pathSpecPattern is spec as absolute path segments.
func pathSpecPattern(spec, workspace, home string) ([]string, bool) {
	var pat string
	switch {
	case strings.HasPrefix(spec, "//"):
		pat = spec[1:]
	case strings.HasPrefix(spec, "~/"):
		if home == "" {
			return nil, false
		}
		pat = filepath.ToSlash(home) + "/" + spec[2:]
	case strings.HasPrefix(spec, "/"):
		pat = filepath.ToSlash(workspace) + spec
	case strings.HasPrefix(spec, "./"):
		pat = filepath.ToSlash(workspace) + "/" + spec[2:]
	case !strings.Contains(strings.TrimSuffix(spec, "/"), "/"):
		pat = filepath.ToSlash(workspace) + "/**/" + spec // a bare name: at any depth
	default:
		pat = filepath.ToSlash(workspace) + "/" + spec
	}
	pat = strings.TrimSuffix(path.Clean(pat), "/")
	return strings.Split(strings.TrimPrefix(pat, "/"), "/"), true
}

// globMatch matches path segments: ** is any number of segments, other
// segments match as path.Match does. A pattern that matches a leading
// part of the path (a directory) matches the whole of it.
func globMatch(pat, segs []string) bool {
	if len(pat) == 0 {
		return true // the pattern named a directory holding the rest
	}
	if pat[0] == "**" {
		for i := 0; i <= len(segs); i++ {
			if globMatch(pat[1:], segs[i:]) {
				return true
			}
		}
		return false
	}
	if len(segs) == 0 {
		return false
	}
	if ok, _ := path.Match(pat[0], segs[0]); !ok {
		return false
	}
	return globMatch(pat[1:], segs[1:])
}
