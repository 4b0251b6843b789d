package llm

import (
	"regexp"
	"strings"
	"sync"
)

// matcher is a rule: a set of alternatives, matched against lower-case
// text. Plain-text alternatives are checked with strings.Contains, and each
// pattern is compiled on its own: Go's regexp engine scans for a pattern's
// literal prefix quickly, but a long combined alternation has no prefix and
// costs tens of microseconds per line of text. The alternatives are split
// and compiled when the matcher is first used, not at package
// initialisation: a run that meets no error never pays for the classifier.
type matcher struct {
	src  string
	once sync.Once
	lits []string
	res  []*regexp.Regexp
}

// rule returns the matcher of a regexp alternation ("a|b[ _]c|d").
func rule(alternation string) *matcher { return &matcher{src: alternation} }

func (m *matcher) build() {
	for _, alt := range splitAlternation(m.src) {
		if alt == "" {
			continue
		}
		if strings.ContainsAny(alt, `\.+*?()|[]{}^$`) {
			m.res = append(m.res, regexp.MustCompile(alt))
		} else {
			m.lits = append(m.lits, alt)
		}
	}
}

// MatchString reports whether any alternative occurs in s.
func (m *matcher) MatchString(s string) bool {
	m.once.Do(m.build)
	for _, l := range m.lits {
		if strings.Contains(s, l) {
			return true
		}
	}
	for _, re := range m.res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

// splitAlternation splits a regexp at its top-level "|", leaving groups and
// character classes whole.
func splitAlternation(s string) []string {
	var out []string
	depth, start := 0, 0
	inClass := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			i++
		case inClass:
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == '|' && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}
