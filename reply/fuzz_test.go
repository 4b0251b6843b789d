package reply_test

import (
	"strings"
	"testing"

	"github.com/agentloop/agentloop/reply"
)

// FuzzChunker checks the chunker's contract on any text: no blank blocks,
// no block over MaxChars (fence lines here are short), and no text lost
// apart from the whitespace at breaks and the fence lines it adds.
func FuzzChunker(f *testing.F) {
	f.Add("Intro\n\n```go\nfunc a() {}\n\nfunc b() {}\n```\n\nOutro. More text! Yes?", 5, 30, 3)
	f.Add(strings.Repeat("line\n", 50), 1, 20, 1)
	f.Add("~~~\n"+strings.Repeat("x", 100)+"\n~~~", 10, 40, 7)
	f.Fuzz(func(t *testing.T, text string, minC, maxC, step int) {
		if minC < 1 || minC > 100 || maxC < 30 || maxC > 200 || step < 1 {
			return
		}
		c := reply.NewChunker(reply.ChunkerOptions{MinChars: minC, MaxChars: maxC})
		maxC = max(minC, maxC) // MaxChars is raised to MinChars
		var blocks []string
		for i := 0; i < len(text); i += step {
			c.Write(text[i:min(len(text), i+step)])
			blocks = append(blocks, c.Drain(false)...)
		}
		blocks = append(blocks, c.Drain(true)...)
		if c.Buffered() != "" { // nothing may stay after the end
			t.Fatalf("forced drain left %q", c.Buffered())
		}
		var got, want strings.Builder
		for _, b := range blocks {
			if strings.TrimSpace(b) == "" {
				t.Fatalf("blank block in %q", blocks)
			}
			if len(b) > maxC && !hasLongFenceLine(text, maxC) {
				t.Fatalf("block of %d bytes over %d: %q", len(b), maxC, b)
			}
			got.WriteString(content(b))
		}
		want.WriteString(content(text))
		if got.String() != want.String() && !hasLongFenceLine(text, maxC) {
			t.Fatalf("text changed:\n got %q\nwant %q\nblocks %q", got.String(), want.String(), blocks)
		}
	})
}

// content drops whitespace and fence marker lines, which the chunker may
// consume, add or repeat.
func content(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		t := strings.TrimLeft(l, " ")
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			continue
		}
		b.WriteString(strings.Join(strings.Fields(l), ""))
	}
	return b.String()
}

func hasLongFenceLine(text string, maxC int) bool {
	for _, l := range strings.Split(text, "\n") {
		t := strings.TrimLeft(l, " ")
		if (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")) && len(l) > maxC/4 {
			return true
		}
	}
	return false
}

// FuzzDirectives checks that the directive and media parsers accept any
// text without panicking and never invent a refused path.
func FuzzDirectives(f *testing.F) {
	f.Add("[[reply_to:1]] hi [[audio_as_voice]]\nMEDIA:/a.png\nMEDIA:../x\n```\nMEDIA:/b.png\n```")
	f.Add("[[ [[reply_to_current]] ]] MEDIA: ~/x NO_REPLY")
	f.Fuzz(func(t *testing.T, text string) {
		reply.ParseDirectives(text, nil)
		reply.StripDirectivesForDisplay(text)
		reply.StripDirectivesForDelivery(text)
		m := reply.SplitMedia(text)
		for _, u := range m.MediaURLs {
			if strings.HasPrefix(u, "~") {
				t.Fatalf("accepted a home path %q", u)
			}
			for _, seg := range strings.FieldsFunc(u, func(r rune) bool { return r == '/' || r == '\\' }) {
				if seg == ".." {
					t.Fatalf("accepted a traversal %q", u)
				}
			}
		}
		var s reply.DirectiveStream
		for i := 0; i < len(text); i += 5 {
			s.Consume(text[i:min(len(text), i+5)], false)
		}
		s.Consume("", true)
	})
}
