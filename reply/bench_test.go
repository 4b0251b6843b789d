package reply_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/reply"
)

// benchReply is about 1 MB of reply text: prose with inline code, fenced
// code and reasoning blocks.
var benchReply = func() string {
	var b strings.Builder
	for i := 0; b.Len() < 1<<20; i++ {
		fmt.Fprintf(&b, "Paragraph %d explains the change. The function `parse(x)` returns an error when the input is empty, and <b>bold</b> is not a tag we touch.\n\n", i)
		if i%5 == 0 {
			b.WriteString("<think>Check the edge cases first; maybe `nil` slices too.</think>\n")
		}
		if i%3 == 0 {
			b.WriteString("```go\nfunc parse(s string) (int, error) {\n\tif s == \"\" {\n\t\treturn 0, errEmpty // <think> stays here\n\t}\n\treturn strconv.Atoi(s)\n}\n```\n\n")
		}
	}
	return b.String()
}()

func benchFeed(b *testing.B, step int, feed func(string), end func()) {
	b.SetBytes(int64(len(benchReply)))
	b.ReportAllocs()
	for b.Loop() {
		for i := 0; i < len(benchReply); i += step {
			feed(benchReply[i:min(len(benchReply), i+step)])
		}
		end()
	}
}

func BenchmarkStripper(b *testing.B) {
	for _, step := range []int{1, 64} {
		b.Run(fmt.Sprintf("chunk=%d", step), func(b *testing.B) {
			s := reply.NewStripper(nil)
			n := 0
			benchFeed(b, step, func(c string) { n += len(s.Write(c)) }, func() { n += len(s.Flush()) })
			if n == 0 {
				b.Fatal("no output")
			}
		})
	}
}

func BenchmarkChunker(b *testing.B) {
	for _, step := range []int{1, 64} {
		b.Run(fmt.Sprintf("chunk=%d", step), func(b *testing.B) {
			c := reply.NewChunker(reply.ChunkerOptions{MinChars: 200, MaxChars: 1000})
			blocks := 0
			emit := func(string) { blocks++ }
			benchFeed(b, step, func(s string) {
				c.Write(s)
				c.DrainFunc(false, emit)
			}, func() { c.DrainFunc(true, emit) })
			if blocks == 0 {
				b.Fatal("no blocks")
			}
		})
	}
}

func BenchmarkChunkerFlushOnParagraph(b *testing.B) {
	for _, step := range []int{1, 64} {
		b.Run(fmt.Sprintf("chunk=%d", step), func(b *testing.B) {
			c := reply.NewChunker(reply.ChunkerOptions{MinChars: 200, MaxChars: 1000, FlushOnParagraph: true})
			blocks := 0
			emit := func(string) { blocks++ }
			benchFeed(b, step, func(s string) {
				c.Write(s)
				c.DrainFunc(false, emit)
			}, func() { c.DrainFunc(true, emit) })
			if blocks == 0 {
				b.Fatal("no blocks")
			}
		})
	}
}

func BenchmarkPipeline(b *testing.B) {
	for _, step := range []int{1, 64} {
		b.Run(fmt.Sprintf("chunk=%d", step), func(b *testing.B) {
			p := reply.NewPipeline(&reply.PipelineOptions{Chunking: &reply.ChunkerOptions{MinChars: 200, MaxChars: 1000}})
			n := 0
			benchFeed(b, step, func(s string) { n += len(p.Write(s)) }, func() { n += len(p.Flush()) })
			if n == 0 {
				b.Fatal("no payloads")
			}
		})
	}
}
