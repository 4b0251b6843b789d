package builtin

import (
	"regexp"
	"strings"
)

// IsReadOnlyCommand reports whether a shell command is read-only by a
// conservative check: such a call may run beside other tool calls, and
// approvals may treat it as read-only. It is true only for a list of
// simple commands (joined by ;, &&, ||, | or newlines) each of which is a
// known read-only program used without its writing options (ls, cat,
// head, tail, wc, grep, rg, find without -exec or -delete, git
// status/log/diff/show, echo, pwd, sleep, sed without -i, ...), with no
// redirection to a file other than /dev/null, /dev/stdout or /dev/stderr.
// Command substitution, process substitution, here-documents, subshells,
// functions and assignments to variables that steer programs (PATH,
// LD_PRELOAD, ...) make it false. When unsure it says false.
//
// It judges the command line, not the repository: git itself may run
// programs a repository's own configuration names (an fsmonitor, a diff
// driver), so in an untrusted checkout the sandbox is the real boundary.
func IsReadOnlyCommand(command string) bool {
	cmds, ok := shellParse(command)
	if !ok || len(cmds) == 0 {
		return false
	}
	for _, c := range cmds {
		if !shellReadOnlySimple(c) {
			return false
		}
	}
	return true
}

// shellWord is one word of a simple command after quote removal.
type shellWord struct {
	text string
	// expands is true when the word holds an unquoted or double-quoted $
	// expansion or an unquoted glob: its value is not known statically.
	expands bool
}

// shellParse splits command into simple commands. It returns false for
// any construct the read-only check does not follow: command and process
// substitution, here-documents, subshells and groups, redirections that
// write to a file or open one read-write, and unterminated quotes.
func shellParse(command string) ([][]shellWord, bool) {
	var (
		cmds    [][]shellWord
		cur     []shellWord
		word    strings.Builder
		inWord  bool
		expands bool
		quoted  bool // the current word had quotes: it is not an fd number
		// pendingRedir is the redirection operator whose target is the
		// next word, or "".
		pendingRedir string
	)
	endWord := func() bool {
		if !inWord {
			return true
		}
		w := shellWord{text: word.String(), expands: expands}
		word.Reset()
		inWord, expands, quoted = false, false, false
		if pendingRedir != "" {
			op := pendingRedir
			pendingRedir = ""
			return shellRedirectAllowed(op, w)
		}
		cur = append(cur, w)
		return true
	}
	endCmd := func() bool {
		if !endWord() || pendingRedir != "" {
			return false
		}
		if len(cur) > 0 {
			cmds = append(cmds, cur)
			cur = nil
		}
		return true
	}
	s := command
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 < len(s) {
				i++
				if s[i] != '\n' { // a backslash-newline joins lines
					word.WriteByte(s[i])
					inWord = true
				}
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, false
			}
			word.WriteString(s[i+1 : i+1+j])
			inWord, quoted = true, true
			i += j + 1
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				switch s[i] {
				case '\\':
					if i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
						i++
					}
				case '`':
					return nil, false
				case '$':
					if i+1 < len(s) && s[i+1] == '(' {
						return nil, false
					}
					expands = true
				}
				if i < len(s) {
					word.WriteByte(s[i])
				}
			}
			if i >= len(s) {
				return nil, false
			}
			inWord, quoted = true, true
		case c == '`':
			return nil, false
		case c == '$':
			if i+1 < len(s) && s[i+1] == '(' {
				return nil, false
			}
			word.WriteByte(c)
			inWord, expands = true, true
		case c == '#' && !inWord:
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				i = len(s)
			} else {
				i += j - 1
			}
		case c == ' ' || c == '\t':
			if !endWord() {
				return nil, false
			}
		case c == '\n' || c == ';':
			if !endCmd() {
				return nil, false
			}
		case c == '&' || c == '|':
			if c == '&' && i+1 < len(s) && s[i+1] == '>' {
				// &> and &>> redirect both streams.
				if !endWord() {
					return nil, false
				}
				op := "&>"
				i++
				if i+1 < len(s) && s[i+1] == '>' {
					op = "&>>"
					i++
				}
				if pendingRedir != "" {
					return nil, false
				}
				pendingRedir = op
				continue
			}
			if !endCmd() || len(cmds) == 0 && len(cur) == 0 {
				return nil, false
			}
			if i+1 < len(s) && (s[i+1] == c || c == '|' && s[i+1] == '&') {
				i++
			}
		case c == '(' || c == ')' || c == '{' && !inWord || c == '}' && !inWord:
			return nil, false
		case c == '<' || c == '>':
			// An all-digit word right before the operator is its fd.
			if inWord && !quoted && !expands && shellAllDigits(word.String()) {
				word.Reset()
				inWord = false
			} else if !endWord() {
				return nil, false
			}
			op := string(c)
			for i+1 < len(s) && strings.IndexByte("<>&|", s[i+1]) >= 0 && len(op) < 3 {
				i++
				op += string(s[i])
			}
			if pendingRedir != "" {
				return nil, false
			}
			pendingRedir = op
		case c == '*' || c == '?' || c == '[':
			word.WriteByte(c)
			inWord, expands = true, true
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	if !endCmd() {
		return nil, false
	}
	return cmds, true
}

// shellRedirectAllowed decides one redirection: reading a file, duplicating
// a descriptor, or writing to /dev/null, /dev/stdout or /dev/stderr.
func shellRedirectAllowed(op string, target shellWord) bool {
	switch op {
	case "<", "<<<":
		return true
	case ">&", "<&":
		return !target.expands && (target.text == "-" || shellAllDigits(target.text))
	case ">", ">>", ">|", "&>", "&>>":
		switch target.text {
		case "/dev/null", "/dev/stdout", "/dev/stderr":
			return !target.expands
		}
		return false
	}
	return false // <<, <>, <(, >( and anything unusual
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

var shellAssignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// shellSafeVar reports whether assigning a variable cannot change which
// program runs or what it does beyond formatting.
func shellSafeVar(name string) bool {
	switch name {
	case "LANG", "LANGUAGE", "TZ", "NO_COLOR", "TERM", "COLUMNS", "LINES", "CLICOLOR", "FORCE_COLOR":
		return true
	}
	return strings.HasPrefix(name, "LC_")
}

// shellReadOnlyPrograms are the programs that, without the options that
// shellReadOnlySimple rejects, only read.
var shellReadOnlyPrograms = map[string]bool{
	"ls": true, "cat": true, "head": true, "tail": true, "wc": true, "grep": true, "egrep": true,
	"fgrep": true, "rg": true, "find": true, "git": true, "echo": true, "printf": true, "pwd": true,
	"sleep": true, "true": true, "false": true, "cd": true, "which": true, "basename": true,
	"dirname": true, "realpath": true, "readlink": true, "stat": true, "du": true, "df": true,
	"cut": true, "tr": true, "nl": true, "sort": true, "uniq": true, "diff": true, "cmp": true,
	"comm": true, "md5sum": true, "sha1sum": true, "sha256sum": true, "sha512sum": true, "jq": true,
	"test": true, "[": true, "sed": true, "whoami": true, "id": true, "uname": true, "date": true,
	"printenv": true, "seq": true, "rev": true, "tac": true, "tree": true,
}

var shellReadOnlyGit = map[string]bool{
	"status": true, "log": true, "diff": true, "show": true, "ls-files": true, "rev-parse": true,
	"blame": true,
}

// shellReadOnlySimple checks one simple command.
func shellReadOnlySimple(words []shellWord) bool {
	for len(words) > 0 && shellAssignment.MatchString(words[0].text) {
		name, _, _ := strings.Cut(words[0].text, "=")
		if !shellSafeVar(name) {
			return false
		}
		words = words[1:]
	}
	if len(words) == 0 {
		return true // only harmless assignments
	}
	name := words[0]
	if name.expands || strings.Contains(name.text, "/") || !shellReadOnlyPrograms[name.text] {
		return false
	}
	args := words[1:]
	switch name.text {
	case "find":
		for _, a := range args {
			switch a.text {
			case "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls":
				return false
			}
		}
	case "rg":
		for _, a := range args {
			if a.text == "--pre" || strings.HasPrefix(a.text, "--pre=") {
				return false
			}
		}
	case "sort":
		for _, a := range args {
			if a.text == "-o" || strings.HasPrefix(a.text, "--output") || strings.HasPrefix(a.text, "--compress-program") ||
				shellShortFlag(a.text, 'o') {
				return false
			}
		}
	case "uniq":
		// uniq IN OUT writes OUT.
		n := 0
		for _, a := range args {
			if !strings.HasPrefix(a.text, "-") || a.text == "-" {
				n++
			}
		}
		return n <= 1
	case "tree":
		for _, a := range args {
			if a.text == "-o" || shellShortFlag(a.text, 'o') {
				return false
			}
		}
	case "date":
		for _, a := range args {
			if a.text == "-s" || strings.HasPrefix(a.text, "--set") || shellShortFlag(a.text, 's') {
				return false
			}
		}
	case "git":
		return shellReadOnlyGitArgs(args)
	case "sed":
		return shellReadOnlySed(args)
	}
	return true
}

// shellShortFlag reports whether a is a cluster of short options that
// contains f, as in -rno.
func shellShortFlag(a string, f byte) bool {
	return len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.IndexByte(a[1:], f) >= 0
}

func shellReadOnlyGitArgs(args []shellWord) bool {
	// Global options before the subcommand: only -C DIR and --no-pager;
	// -c could set a pager, an external diff or hooks.
	for len(args) > 0 && strings.HasPrefix(args[0].text, "-") {
		switch args[0].text {
		case "--no-pager":
			args = args[1:]
		case "-C":
			if len(args) < 2 {
				return false
			}
			args = args[2:]
		default:
			return false
		}
	}
	if len(args) == 0 || args[0].expands || !shellReadOnlyGit[args[0].text] {
		return false
	}
	for _, a := range args[1:] {
		if strings.HasPrefix(a.text, "--output") || a.text == "--ext-diff" || a.text == "-o" {
			return false
		}
	}
	return true
}

func shellReadOnlySed(args []shellWord) bool {
	scripts := 0
	expectScript := false
	for _, a := range args {
		t := a.text
		switch {
		case expectScript:
			expectScript = false
			if !shellSedScriptOK(t) {
				return false
			}
			scripts++
		case t == "-i" || strings.HasPrefix(t, "--in-place") || t == "-f" || strings.HasPrefix(t, "--file") ||
			(len(t) > 1 && t[0] == '-' && t[1] != '-' && strings.ContainsAny(t[1:], "if")):
			return false
		case t == "-e" || t == "--expression":
			expectScript = true
		case strings.HasPrefix(t, "--expression="):
			if !shellSedScriptOK(strings.TrimPrefix(t, "--expression=")) {
				return false
			}
			scripts++
		case strings.HasPrefix(t, "-") && t != "-":
			// -n, -E, -r, -s, -z, -u and their long forms.
		default:
			if scripts == 0 {
				// The first operand is the script when no -e was given.
				if !shellSedScriptOK(t) {
					return false
				}
				scripts++
				continue
			}
			// The rest are input files.
		}
	}
	return !expectScript && scripts > 0
}

// shellSedScriptOK accepts sed scripts that only print: commands
// separated by ; or newlines, each an optional address and then p, d, q,
// Q, =, l or an s command whose flags neither write (w) nor execute (e).
// A ; inside an s command splits it and makes it fail: conservative.
func shellSedScriptOK(script string) bool {
	for _, part := range strings.FieldsFunc(script, func(r rune) bool { return r == ';' || r == '\n' }) {
		if !shellSedCommandOK(strings.TrimSpace(part)) {
			return false
		}
	}
	return true
}

func shellSedCommandOK(c string) bool {
	if c == "" {
		return true
	}
	c, ok := shellSedSkipAddress(c)
	if !ok {
		return false
	}
	if c == "" {
		return false
	}
	if len(c) == 1 && strings.IndexByte("pdqQ=l", c[0]) >= 0 {
		return true
	}
	if c[0] != 's' || len(c) < 2 || c[1] == '\\' || c[1] == ' ' {
		return false
	}
	delim := c[1]
	i := 2
	for field := 0; field < 2; field++ {
		for ; i < len(c) && c[i] != delim; i++ {
			if c[i] == '\\' {
				i++
			}
		}
		if i >= len(c) {
			return false
		}
		i++
	}
	for _, f := range c[i:] {
		if !strings.ContainsRune("gpiIm0123456789", f) {
			return false
		}
	}
	return true
}

// shellSedSkipAddress removes a leading address (N, $, /re/, with an
// optional second part ,N ,$ ,/re/ ,+N ~N and a !) from a sed command.
func shellSedSkipAddress(c string) (string, bool) {
	one := func(c string) (string, bool) {
		switch {
		case c == "":
			return c, true
		case c[0] == '$':
			return c[1:], true
		case c[0] >= '0' && c[0] <= '9':
			i := 0
			for i < len(c) && (c[i] >= '0' && c[i] <= '9' || c[i] == '~') {
				i++
			}
			return c[i:], true
		case c[0] == '/':
			for i := 1; i < len(c); i++ {
				switch c[i] {
				case '\\':
					i++
				case '/':
					rest := c[i+1:]
					// Regex flags I and M may follow an address.
					rest = strings.TrimLeft(rest, "IM")
					return rest, true
				}
			}
			return "", false
		}
		return c, true
	}
	c, ok := one(c)
	if !ok {
		return "", false
	}
	if strings.HasPrefix(c, ",") {
		c = c[1:]
		if strings.HasPrefix(c, "+") || strings.HasPrefix(c, "~") {
			c = c[1:]
		}
		if c, ok = one(c); !ok {
			return "", false
		}
	}
	c = strings.TrimSpace(c)
	c = strings.TrimPrefix(c, "!")
	return strings.TrimSpace(c), true
}
