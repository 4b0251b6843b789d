// Package lazyre holds regular expressions that are compiled when first
// used rather than when their package is initialised, so that a program
// that links a classifier but never meets an error pays nothing for its
// patterns at start-up.
//
// It imports only the standard library.
package lazyre

import (
	"regexp"
	"sync"
)

// Regexp is a regexp.Regexp compiled on first use. The expression must
// compile (as with regexp.MustCompile, a bad one panics, at first use);
// the package's tests should use every pattern once.
type Regexp struct {
	src  string
	once sync.Once
	re   *regexp.Regexp
}

// New returns the expression src, not yet compiled.
func New(src string) *Regexp { return &Regexp{src: src} }

// Re returns the compiled expression.
func (r *Regexp) Re() *regexp.Regexp {
	r.once.Do(func() { r.re = regexp.MustCompile(r.src) })
	return r.re
}

// String returns the source text, without compiling it.
func (r *Regexp) String() string { return r.src }

// MatchString is regexp.Regexp.MatchString.
func (r *Regexp) MatchString(s string) bool { return r.Re().MatchString(s) }

// FindString is regexp.Regexp.FindString.
func (r *Regexp) FindString(s string) string { return r.Re().FindString(s) }

// FindStringSubmatch is regexp.Regexp.FindStringSubmatch.
func (r *Regexp) FindStringSubmatch(s string) []string { return r.Re().FindStringSubmatch(s) }

// FindAllString is regexp.Regexp.FindAllString.
func (r *Regexp) FindAllString(s string, n int) []string { return r.Re().FindAllString(s, n) }

// FindAllStringSubmatch is regexp.Regexp.FindAllStringSubmatch.
func (r *Regexp) FindAllStringSubmatch(s string, n int) [][]string {
	return r.Re().FindAllStringSubmatch(s, n)
}

// ReplaceAllString is regexp.Regexp.ReplaceAllString.
func (r *Regexp) ReplaceAllString(src, repl string) string { return r.Re().ReplaceAllString(src, repl) }

// ReplaceAllStringFunc is regexp.Regexp.ReplaceAllStringFunc.
func (r *Regexp) ReplaceAllStringFunc(src string, repl func(string) string) string {
	return r.Re().ReplaceAllStringFunc(src, repl)
}

// FindStringSubmatchIndex is regexp.Regexp.FindStringSubmatchIndex.
func (r *Regexp) FindStringSubmatchIndex(s string) []int { return r.Re().FindStringSubmatchIndex(s) }
