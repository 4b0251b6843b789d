package compact

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzTruncateText checks the truncation contract on any text: valid UTF-8
// stays valid, the result keeps the text's head, never exceeds the larger of
// maxChars and the minimum kept plus the notice, and a changed text says
// how much was removed.
func FuzzTruncateText(f *testing.F) {
	f.Add("hello\nworld\n", 5, 0)
	f.Add(strings.Repeat("line\n", 2000), 3000, 0)
	f.Add(strings.Repeat("é€😀", 3000), 4000, -1)
	f.Add(strings.Repeat("x", 5000), 300, 250)
	f.Fuzz(func(t *testing.T, text string, maxChars, minKeep int) {
		if maxChars < 0 || maxChars > 1<<20 || minKeep > 1<<20 {
			t.Skip()
		}
		opts := TruncateOptions{MinKeep: minKeep}
		got, removed := TruncateText(text, maxChars, opts)
		if removed == 0 {
			if got != text {
				t.Fatalf("changed without removing")
			}
			return
		}
		if removed < 0 || removed > len(text) {
			t.Fatalf("removed %d of %d", removed, len(text))
		}
		if utf8.ValidString(text) && !utf8.ValidString(got) {
			t.Fatalf("broke UTF-8")
		}
		if !strings.Contains(got, TruncationNotice(removed)) {
			t.Fatalf("no notice of %d removed", removed)
		}
		limit := max(maxChars, opts.minKeep()+len(TruncationNotice(len(text)))+4)
		if len(got) > limit {
			t.Fatalf("len %d > %d", len(got), limit)
		}
		head := got[:strings.Index(got, "[... ")]
		if !strings.HasPrefix(text, strings.TrimSuffix(strings.TrimSuffix(head, "\n\n"), "\n")) {
			t.Fatalf("head is not the text's start")
		}
	})
}
