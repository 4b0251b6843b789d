package vectortest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// TestMutationCheck runs every adapter over a copy of the vectors whose
// expected values are all flipped (Mutate) and reports each case that
// still passes: an adapter that passes a case it was given the wrong
// answer for does not check it. It runs the adapters' packages with go
// test, so it is opt-in:
//
//	AGENTLOOP_MUTATION_CHECK=1 go test -run TestMutationCheck -v ./internal/vectortest
//
// The cases that pass on the mutated copy only because a mutation cannot
// flip them (a "must not equal" whose right answer the mutation cannot
// know) are listed in unflippable, with the reason.
func TestMutationCheck(t *testing.T) {
	if os.Getenv("AGENTLOOP_MUTATION_CHECK") != "1" {
		t.Skip("set AGENTLOOP_MUTATION_CHECK=1 to run the adapters on mutated vectors (runs go test on their packages)")
	}
	src := Dir()
	files, err := filepath.Glob(filepath.Join(src, "*.json"))
	if err != nil || len(files) == 0 {
		t.Skipf("no vectors in %s (%v)", src, err)
	}
	pkgs := adapterPackages(t)
	// Round -1 flips every field of every case at once; round k only the
	// k-th field of each case that has one.
	for round := -1; ; round++ {
		dst := t.TempDir()
		mutated := map[string]string{}    // test-name form -> display name
		fieldsOf := map[string][]string{} // display name -> the fields flipped
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			out, changed, err := MutateField(data, round)
			if err != nil {
				t.Fatalf("mutate %s: %v", f, err)
			}
			for _, c := range changed {
				name := filepath.Base(f) + ": " + c.Case
				mutated[rewrite(c.Case)] = name
				fieldsOf[name] = c.Fields
			}
			if err := os.WriteFile(filepath.Join(dst, filepath.Base(f)), out, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if len(mutated) == 0 {
			break
		}
		status := runAdapters(t, pkgs, dst, mutated)
		counts := map[string]int{}
		var passing []string
		for name, st := range status {
			counts[st]++
			if st == "pass" {
				passing = append(passing, name)
			}
		}
		slices.Sort(passing)
		what := "every field flipped"
		if round >= 0 {
			what = "field " + strconv.Itoa(round) + " flipped"
		}
		t.Logf("%s: %d cases mutated; %d failed, %d skipped, %d passed, %d never run", what,
			len(mutated), counts["fail"], counts["skip"], counts["pass"], len(mutated)-len(status))
		for _, p := range passing {
			fields := fieldsOf[p]
			key := p + " " + fmt.Sprint(fields)
			if !slices.ContainsFunc(fields, func(f string) bool { return unflippable[f] == "" }) {
				t.Logf("passes, as it must: %s (%s)", key, unflippable[fields[0]])
				continue
			}
			t.Errorf("passes with %s: %s", what, key)
		}
	}
}

// adapterPackages lists the packages whose tests import vectortest.
func adapterPackages(t *testing.T) []string {
	list := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .TestImports " "}} {{join .XTestImports " "}}`, "./...")
	list.Dir = filepath.Join("..", "..")
	listed, err := list.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const self = "github.com/agentloop/agentloop/internal/vectortest"
	var pkgs []string
	for _, line := range strings.Split(string(listed), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && f[0] != self && slices.Contains(f[1:], self) {
			pkgs = append(pkgs, f[0])
		}
	}
	return pkgs
}

// runAdapters runs the tests of pkgs on the vectors in dir and returns,
// for each case of names that ran as a subtest, "pass" if any subtest
// running it passed, else "fail" or "skip".
func runAdapters(t *testing.T, pkgs []string, dir string, names map[string]string) map[string]string {
	// The adapters are the tests with Vector in their name; other tests
	// of these packages may name subtests like a case.
	cmd := exec.Command("go", append([]string{"test", "-count=1", "-json", "-run", "Vector"}, pkgs...)...)
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "AGENTLOOP_VECTORS="+dir)
	out, _ := cmd.Output() // failures are the point
	status := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var ev struct{ Action, Test string }
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Test == "" {
			continue
		}
		if ev.Action != "pass" && ev.Action != "fail" && ev.Action != "skip" {
			continue
		}
		if !strings.Contains(strings.SplitN(ev.Test, "/", 2)[0], "Vector") {
			continue
		}
		if name := caseOf(ev.Test, names); name != "" && status[name] != "pass" {
			status[name] = ev.Action
		}
	}
	return status
}

// unflippable lists the fields that say what a result must not be, with
// the reason a blind mutation cannot flip them: a case whose flipped
// fields are all of these still passes, and may.
var unflippable = map[string]string{
	"reasonNot":       "a reason the result must not be: flipping it needs the right answer",
	"kindNot":         "a kind the result must not be: flipping it needs the right answer",
	"notExact":        "a text the result must not be: flipping it needs the right answer",
	"notEqualsHashOf": "a call whose hash must differ: flipping it needs the call's own arguments",
}

var dupSuffix = regexp.MustCompile(`#\d+$`)

// caseOf returns the case a subtest runs: the longest case name (in test
// form) that the subtest's path, after its top-level test, ends with.
func caseOf(test string, names map[string]string) string {
	parts := strings.Split(test, "/")
	for i := range parts {
		parts[i] = dupSuffix.ReplaceAllString(parts[i], "")
	}
	for i := 1; i < len(parts); i++ {
		if n, ok := names[strings.Join(parts[i:], "/")]; ok {
			return n
		}
	}
	return ""
}

// rewrite is a case name as the testing package names its subtest.
func rewrite(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			b.WriteByte('_')
		case !strconv.IsPrint(r):
			s := strconv.QuoteRune(r)
			b.WriteString(s[1 : len(s)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
