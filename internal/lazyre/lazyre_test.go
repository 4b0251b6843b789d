package lazyre

import "testing"

func TestCompiledOnFirstUseOnly(t *testing.T) {
	r := New(`a(b+)`)
	if r.re != nil {
		t.Fatal("compiled before first use")
	}
	if got := r.FindStringSubmatch("xabbb"); len(got) != 2 || got[1] != "bbb" {
		t.Fatalf("FindStringSubmatch = %q", got)
	}
	first := r.re
	if !r.MatchString("ab") || r.re != first {
		t.Fatal("recompiled, or no match")
	}
	if got := r.ReplaceAllString("ab ab", "c"); got != "c c" {
		t.Fatalf("ReplaceAllString = %q", got)
	}
}

func TestBadPatternPanicsAtFirstUse(t *testing.T) {
	r := New(`(`)
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	r.MatchString("x")
}
