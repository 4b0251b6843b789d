package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Issue 20.4: start-up does no work in our packages: the classifier's
// patterns, the model table, the read-only program table and the
// sandbox's directory checks are built when first used. GODEBUG=inittrace
// reports what each package's initialisation allocated; the sum over this
// module's packages stays small (it was 1.2 MB and 7,800 allocations, the
// llm package alone 925 KB and 5,600).
func TestE2EInitAllocatesLittle(t *testing.T) {
	_, _, stderr := execCLI(t, []string{"GODEBUG=inittrace=1"}, t.TempDir(), "--help")
	line := regexp.MustCompile(`(?m)^init (github\.com/agentloop/agentloop\S*) @\S+ ms, \S+ ms clock, (\d+) bytes, (\d+) allocs$`)
	var bytes, allocs int
	var seen int
	var worst string
	worstBytes := -1
	for _, m := range line.FindAllStringSubmatch(stderr, -1) {
		b, _ := strconv.Atoi(m[2])
		a, _ := strconv.Atoi(m[3])
		bytes, allocs, seen = bytes+b, allocs+a, seen+1
		if b > worstBytes {
			worst, worstBytes = m[1], b
		}
	}
	if seen == 0 {
		t.Fatalf("no inittrace line for this module's packages in:\n%s", firstLines(stderr, 20))
	}
	const maxBytes, maxAllocs = 64 << 10, 400
	if bytes > maxBytes || allocs > maxAllocs {
		t.Fatalf("initialising %d packages allocated %d bytes in %d allocations (most: %s, %d bytes); want at most %d bytes, %d allocations",
			seen, bytes, allocs, worst, worstBytes, maxBytes, maxAllocs)
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}
