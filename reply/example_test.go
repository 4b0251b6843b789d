package reply_test

import (
	"fmt"

	"github.com/agentloop/agentloop/reply"
)

// A streamed reply whose reasoning is split across chunks: only the answer
// is shown, and code keeps its tags.
func ExampleStripper() {
	s := reply.NewStripper(nil)
	for _, chunk := range []string{"<thi", "nk>The user wants", " a tag example.</think>Use `<think>` like", " this."} {
		fmt.Print(s.Write(chunk))
	}
	fmt.Println(s.Flush())
	// Output:
	// Use `<think>` like this.
}

// A long fenced block cut into channel-sized messages: each message closes
// the fence it cuts and the next one reopens it.
func ExampleChunker() {
	c := reply.NewChunker(reply.ChunkerOptions{MinChars: 5, MaxChars: 40})
	c.Write("Steps:\n\n```sh\nmake build\nmake test\nmake install\n```\n\nDone.")
	for i, block := range c.Drain(true) {
		fmt.Printf("--- %d\n%s\n", i+1, block)
	}
	// Output:
	// --- 1
	// Steps:
	// --- 2
	// ```sh
	// make build
	// make test
	// ```
	// --- 3
	// ```sh
	// make install
	// ```
	//
	// Done.
}

// One assistant message through the whole pipeline: reasoning dropped,
// reply directive and media line applied.
func ExamplePipeline() {
	p := reply.NewPipeline(&reply.PipelineOptions{CurrentMessageID: "msg-7"})
	p.Write("<think>they want the chart</think>[[reply_to_current]] Here is the chart.\n")
	p.Write("MEDIA:./out/chart.png")
	for _, pl := range p.Flush() {
		fmt.Printf("%q media=%v reply-to=%s\n", pl.Text, pl.MediaURLs, pl.ReplyToID)
	}
	// Output:
	// "Here is the chart." media=[./out/chart.png] reply-to=msg-7
}
