package builtin

import (
	"strings"
	"sync"
)

// shellProgram describes how one program parses its command line, so that
// IsReadOnlyCommand can tell which options a call uses. Options are named
// as the program spells them: "-x", "--name".
type shellProgram struct {
	flags   map[string]bool // options without an argument
	args    map[string]bool // options with a required argument
	optArgs map[string]bool // options with an optional attached argument
	bad     map[string]bool // options that write or execute
	long    []string        // long option names, for abbreviations
	// digits accepts -NUM (head -5, grep -3).
	digits bool
	// abbrev resolves unambiguous prefixes of long options, as GNU
	// getopt_long does (sed --in is --in-place).
	abbrev bool
	// anyOption is set for programs none of whose options write or
	// execute: a word whose value is not known before it runs (a glob,
	// $VAR) may stand where an option could.
	anyOption bool
	// noOptions: every word is an operand (echo, test).
	noOptions bool
	// arg checks the argument of an option; nil accepts any.
	arg func(opt string, val shellWord) bool
	// operands checks the operands, given the options seen; nil accepts
	// any.
	operands func(ops []shellWord, seen map[string]bool) bool
	// custom replaces the whole check.
	custom func(args []shellWord) bool
}

// shellOpts builds a program from a compact description: shorts are
// letters (a letter followed by ':' takes an argument, by '::' an
// optional attached one); longs are space-separated names, with "=" for
// a required argument and "?" for an optional one; bad lists the options
// (either form) that write or execute.
func shellOpts(shorts, longs, bad string) *shellProgram {
	p := &shellProgram{flags: map[string]bool{}, args: map[string]bool{}, optArgs: map[string]bool{}, bad: map[string]bool{}, abbrev: true}
	for i := 0; i < len(shorts); i++ {
		name := "-" + shorts[i:i+1]
		switch {
		case strings.HasPrefix(shorts[i+1:], "::"):
			p.optArgs[name] = true
			i += 2
		case strings.HasPrefix(shorts[i+1:], ":"):
			p.args[name] = true
			i++
		default:
			p.flags[name] = true
		}
	}
	for _, l := range strings.Fields(longs) {
		switch {
		case strings.HasSuffix(l, "="):
			l = strings.TrimSuffix(l, "=")
			p.args["--"+l] = true
		case strings.HasSuffix(l, "?"):
			l = strings.TrimSuffix(l, "?")
			p.optArgs["--"+l] = true
		default:
			p.flags["--"+l] = true
		}
		p.long = append(p.long, l)
	}
	for _, b := range strings.Fields(bad) {
		p.bad[b] = true
	}
	return p
}

func (p *shellProgram) withAnyOption() *shellProgram { p.anyOption = true; return p }
func (p *shellProgram) withDigits() *shellProgram    { p.digits = true; return p }
func (p *shellProgram) noAbbrev() *shellProgram      { p.abbrev = false; return p }

// kind returns how option name (canonical) takes an argument: 0 none, 1
// required, 2 optional; ok is false for an unknown option.
func (p *shellProgram) kind(name string) (kind int, ok bool) {
	switch {
	case p.flags[name]:
		return 0, true
	case p.args[name]:
		return 1, true
	case p.optArgs[name]:
		return 2, true
	}
	return 0, p.bad[name] // a bad option is known, and refused anyway
}

// resolveLong finds the long option that name (without "--") means: an
// exact match, else the only option it abbreviates. Several matches are
// accepted only when none is bad and all take arguments alike (the program
// then uses one of them or says the abbreviation is ambiguous).
func (p *shellProgram) resolveLong(name string) (canon string, bad, ok bool) {
	full := "--" + name
	if _, known := p.kind(full); known {
		return full, p.bad[full], true
	}
	if !p.abbrev || name == "" {
		return "", false, false
	}
	var matches []string
	for _, l := range p.long {
		if strings.HasPrefix(l, name) {
			matches = append(matches, "--"+l)
		}
	}
	for b := range p.bad {
		if strings.HasPrefix(b, full) && !strings.HasPrefix(b, "--"+name+"=") {
			return b, true, true
		}
	}
	if len(matches) == 0 {
		return "", false, false
	}
	k0, _ := p.kind(matches[0])
	for _, m := range matches[1:] {
		if k, _ := p.kind(m); k != k0 {
			return "", false, false
		}
	}
	return matches[0], false, true
}

// check judges the arguments of one call of the program.
func (p *shellProgram) check(args []shellWord) bool {
	if p.custom != nil {
		return p.custom(args)
	}
	if p.noOptions {
		return p.operands == nil || p.operands(args, nil)
	}
	seen := map[string]bool{}
	var ops []shellWord
	endOpts := false
	takeArg := func(opt string, val shellWord) bool {
		if val.multi && !p.anyOption {
			return false // sort -k $K: the words after the first are options
		}
		seen[opt] = true
		return p.arg == nil || p.arg(opt, val)
	}
	for i := 0; i < len(args); i++ {
		w := args[i]
		if endOpts {
			ops = append(ops, w)
			continue
		}
		if !w.static {
			if w.maybeOption() && !p.anyOption {
				return false
			}
			ops = append(ops, w)
			continue
		}
		v := w.val
		switch {
		case v == "--":
			endOpts = true
			continue
		case len(v) < 2 || v[0] != '-':
			ops = append(ops, w)
			continue
		case strings.HasPrefix(v, "--"):
			name, val, hasVal := strings.Cut(v[2:], "=")
			canon, bad, ok := p.resolveLong(name)
			if !ok || bad {
				return false
			}
			kind, _ := p.kind(canon)
			switch {
			case kind == 0 && hasVal:
				return false // the program refuses it; unknown territory
			case kind == 0:
				seen[canon] = true
			case hasVal:
				if !takeArg(canon, shellWord{val: val, static: true}) {
					return false
				}
			case kind == 1:
				if i+1 >= len(args) {
					return false
				}
				i++
				if !takeArg(canon, args[i]) {
					return false
				}
			default: // an optional argument only comes after =
				if !takeArg(canon, shellWord{static: true}) {
					return false
				}
			}
			continue
		}
		// A cluster of short options: -rn, -n5, -e SCRIPT.
		for j := 1; j < len(v); j++ {
			c := v[j]
			if p.digits && c >= '0' && c <= '9' {
				continue
			}
			name := "-" + string(c)
			if p.bad[name] {
				return false
			}
			kind, ok := p.kind(name)
			if !ok {
				return false
			}
			if kind == 0 {
				seen[name] = true
				continue
			}
			val := shellWord{val: v[j+1:], static: true}
			if kind == 1 && val.val == "" {
				if i+1 >= len(args) {
					return false
				}
				i++
				val = args[i]
			}
			if !takeArg(name, val) {
				return false
			}
			break
		}
	}
	return p.operands == nil || p.operands(ops, seen)
}

// shellPrograms returns the programs IsReadOnlyCommand knows, with the
// options each has that only read. A program missing here needs approval.
// The table is built on first use, not at package initialisation.
var shellPrograms = sync.OnceValue(buildShellPrograms)

func buildShellPrograms() map[string]*shellProgram {
	shellPrograms := map[string]*shellProgram{}
	add := func(p *shellProgram, names ...string) {
		for _, n := range names {
			shellPrograms[n] = p
		}
	}
	operandsOnly := &shellProgram{noOptions: true}
	add(operandsOnly, "echo", "true", "false", "test", "[", "sleep", "whoami")

	add(shellOpts("AbeEnstTuv", "show-all number-nonblank show-ends number squeeze-blank show-tabs show-nonprinting help version", "").withAnyOption(), "cat")
	add(shellOpts("c:n:qvz", "bytes= lines= quiet silent verbose zero-terminated help version", "").withAnyOption().withDigits(), "head")
	add(shellOpts("c:f::Fn:qs:vz", "bytes= follow? lines= max-unchanged-stats= pid= quiet silent retry sleep-interval= verbose zero-terminated help version", "").withAnyOption().withDigits(), "tail")
	add(shellOpts("cmlLw", "bytes chars lines files0-from= max-line-length words total= help version", "").withAnyOption(), "wc")
	add(shellOpts("aAbBcCdDfFgGhHiI:klLmnNopqQrRsStT:uUvw:xXZ1",
		"all almost-all author escape block-size= ignore-backups directory dired classify? file-type format= full-time group-directories-first no-group human-readable si dereference-command-line dereference-command-line-symlink-to-dir hide= hyperlink? indicator-style= inode ignore= kibibytes literal numeric-uid-gid hide-control-chars show-control-chars quote-name quoting-style= reverse recursive size sort= time= time-style= tabsize= width= context zero color? help version", "").withAnyOption(), "ls", "dir", "vdir")
	grep := shellOpts("EFGPe:f:iywxcLlm:obHhnTZzA:B:C:asIrRUVqsD:d:",
		"extended-regexp fixed-strings basic-regexp perl-regexp regexp= file= ignore-case no-ignore-case word-regexp line-regexp count color? colour? files-without-match files-with-matches max-count= only-matching quiet silent no-messages byte-offset with-filename no-filename label= line-number initial-tab null null-data after-context= before-context= context= text binary-files= devices= directories= exclude= exclude-from= exclude-dir= include= recursive dereference-recursive line-buffered binary invert-match help version", "").withAnyOption().withDigits()
	grep.flags["-v"] = true
	add(grep, "grep", "egrep", "fgrep")
	add(shellOpts("e:f:iwxcvlLnHhoqsSUuabzA:B:C:g:m:t:T:j:M:r:E:0FPp",
		"regexp= file= ignore-case case-sensitive smart-case word-regexp line-regexp count count-matches invert-match files-with-matches files-without-match line-number no-line-number with-filename no-filename only-matching quiet no-messages hidden no-ignore no-ignore-vcs no-ignore-parent no-ignore-dot no-ignore-global no-ignore-exclude follow text binary after-context= before-context= context= glob= iglob= max-count= type= type-not= threads= max-columns= max-depth= max-filesize= replace= encoding= sort= sortr= color= colors= column no-column heading no-heading json files type-list vimgrep trim null null-data multiline multiline-dotall fixed-strings word-regexp pcre2 passthru stats no-config byte-offset unrestricted ignore-case line-buffered block-buffered context-separator= field-match-separator= field-context-separator= path-separator= max-columns-preview engine= debug trace help version",
		"--pre --pre-glob --search-zip -z").noAbbrev(), "rg")
	add(shellOpts("LPe@", "", "").withAnyOption(), "cd")
	add(shellOpts("LP", "", ""), "pwd")
	add(shellOpts("as", "", "").withAnyOption(), "which")
	add(shellOpts("as:z", "multiple suffix= zero help version", "").withAnyOption(), "basename")
	add(shellOpts("z", "zero help version", "").withAnyOption(), "dirname")
	add(shellOpts("emLPqsz", "canonicalize-existing canonicalize-missing logical physical quiet relative-to= relative-base= strip no-symlinks zero help version", "").withAnyOption(), "realpath")
	add(shellOpts("femnqsvz", "canonicalize canonicalize-existing canonicalize-missing no-newline quiet silent verbose zero help version", "").withAnyOption(), "readlink")
	add(shellOpts("Lfc:t", "dereference file-system cached= format= printf= terse help version", "").withAnyOption(), "stat")
	add(shellOpts("0abcd:hHkLlmPsSt:xX:BD", "null all apparent-size block-size= bytes total max-depth= human-readable inodes si dereference dereference-args count-links no-dereference separate-dirs summarize threshold= time? time-style= one-file-system exclude-from= exclude= files0-from= help version", "").withAnyOption(), "du")
	add(shellOpts("aB:hHiklPt:Tx:", "all block-size= human-readable si inodes local no-sync sync output? portability print-type type= exclude-type= total help version", "").withAnyOption(), "df")
	add(shellOpts("b:c:d:f:nsz", "bytes= characters= delimiter= fields= complement only-delimited output-delimiter= zero-terminated help version", "").withAnyOption(), "cut")
	add(shellOpts("cCdst", "complement delete squeeze-repeats truncate-set1 help version", "").withAnyOption(), "tr")
	add(shellOpts("b:d:f:h:i:l:n:ps:v:w:", "body-numbering= section-delimiter= footer-numbering= header-numbering= line-increment= join-blank-lines= number-format= no-renumber number-separator= starting-line-number= number-width= help version", "").withAnyOption(), "nl")
	add(shellOpts("bcCdDfghiMmnRrsuVzk:o:S:t:T:",
		"ignore-leading-blanks dictionary-order ignore-case general-numeric-sort ignore-nonprinting month-sort human-numeric-sort numeric-sort random-sort random-source= reverse sort= version-sort batch-size= check? debug files0-from= key= merge output= stable buffer-size= field-separator= temporary-directory= parallel= unique zero-terminated compress-program= help version",
		"-o --output -T --temporary-directory --compress-program"), "sort")
	uniq := shellOpts("cdDiuzf:s:w:", "count repeated all-repeated? group? ignore-case unique zero-terminated skip-fields= skip-chars= check-chars= help version", "")
	// uniq IN OUT writes OUT.
	uniq.operands = func(ops []shellWord, _ map[string]bool) bool {
		for _, o := range ops {
			if o.multi {
				return false
			}
		}
		return len(ops) <= 1
	}
	add(uniq, "uniq")
	add(shellOpts("abBcC:dD:eEF:iI:lL:nNpqrsS:tTuU:vwWxXy",
		"normal brief report-identical-files context? unified? ed rcs side-by-side width= left-column suppress-common-lines show-c-function show-function-line= label= expand-tabs initial-tab tabsize= suppress-blank-empty paginate recursive no-dereference new-file unidirectional-new-file ignore-file-name-case no-ignore-file-name-case exclude= exclude-from= starting-file= from-file= to-file= ignore-case ignore-tab-expansion ignore-trailing-space ignore-space-change ignore-all-space ignore-blank-lines ignore-matching-lines= text strip-trailing-cr ifdef= old-group-format= new-group-format= unchanged-group-format= changed-group-format= line-format= old-line-format= new-line-format= unchanged-line-format= minimal horizon-lines= speed-large-files color? palette= help version",
		"").withAnyOption(), "diff")
	add(shellOpts("bi:ln:s", "print-bytes ignore-initial= verbose bytes= quiet silent help version", "").withAnyOption(), "cmp")
	add(shellOpts("123z", "check-order nocheck-order output-delimiter= total zero-terminated help version", "").withAnyOption(), "comm")
	add(shellOpts("bctwz", "binary check tag text ignore-missing quiet status strict warn zero help version", "").withAnyOption(),
		"md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum")
	add(shellOpts("ugGnrzZa", "user group groups name real zero context help version", "").withAnyOption(), "id")
	add(shellOpts("asnrvmpio", "all kernel-name nodename kernel-release kernel-version machine processor hardware-platform operating-system help version", "").withAnyOption(), "uname")
	add(shellOpts("f:s:w", "format= separator= equal-width help version", "").withAnyOption(), "seq")
	add(shellOpts("0", "help version", "").withAnyOption(), "rev")
	add(shellOpts("brs:", "before regex separator= help version", "").withAnyOption(), "tac")
	add(shellOpts("", "all ignore= help version", "").withAnyOption(), "nproc")
	date := shellOpts("d:f:I::r:Rs:u", "date= file= iso-8601? reference= rfc-email rfc-3339= debug set= utc universal resolution help version", "-s --set")
	// date MMDDhhmm sets the clock; only +FORMAT is an operand that reads.
	date.operands = func(ops []shellWord, _ map[string]bool) bool {
		for _, o := range ops {
			if !o.static || !strings.HasPrefix(o.val, "+") {
				return false
			}
		}
		return true
	}
	add(date, "date")
	add(shellOpts("nrjacsSCMeL:f:h", "null-input raw-input raw-output raw-output0 join-output ascii-output compact-output slurp sort-keys color-output monochrome-output tab indent= unbuffered stream stream-errors seq exit-status arg= argjson= slurpfile= rawfile= args jsonargs from-file= library-path= help version", "").noAbbrev(), "jq")
	tree := shellOpts("adlfxL:P:I:qNQpugshDFviUtcrCnASTJXRH:", "noreport charset= filelimit= timefmt= dirsfirst filesfirst prune du si inodes device gitignore matchdirs ignore-case info help version", "-o -R")
	tree.abbrev = false
	add(tree, "tree")

	// printf -v NAME assigns (printf -v PATH ./bin): any option is refused.
	add(&shellProgram{custom: func(args []shellWord) bool {
		if len(args) == 0 {
			return true
		}
		return !args[0].maybeOption() || args[0].static && args[0].val == "--"
	}}, "printf")

	sed := shellOpts("ne:l:f:i::Ersuz", "quiet silent debug expression= file= follow-symlinks in-place? line-length= null-data zero-terminated posix regexp-extended separate sandbox unbuffered help version", "-i --in-place -f --file")
	sed.arg = func(opt string, val shellWord) bool {
		if opt == "-e" || opt == "--expression" {
			return val.static && sedScriptReadOnly(val.val)
		}
		return true
	}
	sed.operands = func(ops []shellWord, seen map[string]bool) bool {
		if seen["-e"] || seen["--expression"] {
			return true // the operands are input files
		}
		if len(ops) == 0 || !ops[0].static {
			return false
		}
		return sedScriptReadOnly(ops[0].val)
	}
	add(sed, "sed")

	add(&shellProgram{custom: findReadOnly}, "find")
	add(&shellProgram{custom: gitReadOnly}, "git")
	return shellPrograms
}

// findPrimaries are the find words that only read or select, with the
// number of arguments each takes.
var findPrimaries = map[string]int{
	"-P": 0, "-L": 0, "-H": 0, "-O0": 0, "-O1": 0, "-O2": 0, "-O3": 0, "-D": 1,
	"-name": 1, "-iname": 1, "-path": 1, "-ipath": 1, "-wholename": 1, "-iwholename": 1, "-regex": 1, "-iregex": 1,
	"-lname": 1, "-ilname": 1, "-type": 1, "-xtype": 1, "-size": 1, "-empty": 0, "-newer": 1, "-anewer": 1, "-cnewer": 1,
	"-mtime": 1, "-mmin": 1, "-atime": 1, "-amin": 1, "-ctime": 1, "-cmin": 1, "-used": 1, "-user": 1, "-group": 1,
	"-uid": 1, "-gid": 1, "-nouser": 0, "-nogroup": 0, "-perm": 1, "-links": 1, "-inum": 1, "-samefile": 1,
	"-readable": 0, "-writable": 0, "-executable": 0, "-maxdepth": 1, "-mindepth": 1, "-depth": 0, "-d": 0,
	"-mount": 0, "-xdev": 0, "-noleaf": 0, "-ignore_readdir_race": 0, "-noignore_readdir_race": 0,
	"-daystart": 0, "-follow": 0, "-regextype": 1, "-warn": 0, "-nowarn": 0, "-fstype": 1, "-context": 1,
	"-true": 0, "-false": 0, "-prune": 0, "-quit": 0, "-print": 0, "-print0": 0, "-printf": 1, "-ls": 0,
	"-not": 0, "-and": 0, "-a": 0, "-or": 0, "-o": 0, "!": 0, "(": 0, ")": 0, ",": 0,
	"-newermt": 1, "-newerat": 1, "-newerct": 1, "-newermm": 1, "-help": 0, "--help": 0, "-version": 0, "--version": 0,
}

// findReadOnly accepts find with primaries that only select and print;
// -exec, -ok, -delete and -fprint (which writes a file) are refused, as is
// any word that is not known before find runs (it could be one).
func findReadOnly(args []shellWord) bool {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !a.static {
			return false
		}
		if !strings.HasPrefix(a.val, "-") && a.val != "!" && a.val != "(" && a.val != ")" && a.val != "," {
			continue // a starting point
		}
		n, ok := findPrimaries[a.val]
		if !ok {
			return false
		}
		for range n {
			i++
			if i >= len(args) || !args[i].static {
				return false
			}
		}
	}
	return true
}

// gitReadOnlySub are the git subcommands that only read (with the options
// gitReadOnly refuses).
var gitReadOnlySub = map[string]bool{
	"status": true, "log": true, "diff": true, "show": true, "ls-files": true, "rev-parse": true,
	"blame": true, "shortlog": true, "describe": true, "rev-list": true, "cat-file": true, "ls-tree": true,
}

// gitBadOptions write a file or run a program; git accepts unambiguous
// prefixes of long options, so any prefix of these is refused too.
var gitBadOptions = []string{"--output", "--ext-diff", "--textconv", "--open-files-in-pager", "--exec", "--upload-pack",
	"--contents", "--filters", "--batch-command"}

// gitReadOnly accepts git with the global options -C DIR, -P and
// --no-pager (-c could set a pager, an external diff or hooks), a
// subcommand that only reads, and none of the options that write or run
// programs.
func gitReadOnly(args []shellWord) bool {
	for len(args) > 0 && args[0].maybeOption() {
		if !args[0].static {
			return false
		}
		switch args[0].val {
		case "--no-pager", "-P", "--no-optional-locks":
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
	if len(args) == 0 || !args[0].static || !gitReadOnlySub[args[0].val] {
		return false
	}
	for _, a := range args[1:] {
		if !a.static {
			if a.maybeOption() {
				return false
			}
			continue
		}
		v := a.val
		if v == "--" {
			break
		}
		if strings.HasPrefix(v, "--") {
			name, _, _ := strings.Cut(v, "=")
			if len(name) < 3 {
				continue
			}
			for _, b := range gitBadOptions {
				if strings.HasPrefix(b, name) {
					return false
				}
			}
		}
	}
	return true
}
