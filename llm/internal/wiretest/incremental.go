package wiretest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/agentloop/agentloop/llm"
)

// ScriptedTurn appends one turn of a long, varied conversation with a
// model of the given api and provider: calls whose ids repeat across turns
// (as Kimi and several OpenAI-compatible servers send them), ids that need
// sanitising, thinking with and without signatures, failed turns, tool
// results with images, errors or no output, follow-up user turns.
func ScriptedTurn(rng *rand.Rand, hist []llm.Message, turn int, api llm.API, provider string) []llm.Message {
	var content []llm.Content
	if rng.IntN(3) == 0 {
		content = append(content, llm.Thinking(fmt.Sprintf("thinking %d", turn), []string{"", "reasoning_content", "sig"}[rng.IntN(3)]))
	}
	if rng.IntN(2) == 0 {
		content = append(content, llm.Text(fmt.Sprintf("turn %d <&> \"quoted\"", turn)))
	}
	var ids []string
	for c := 0; c < 1+rng.IntN(3); c++ {
		id := fmt.Sprintf("call_%d", c) // repeats every turn
		if rng.IntN(4) == 0 {
			id = fmt.Sprintf("functions.read:%d", c)
		}
		ids = append(ids, id)
		content = append(content, llm.ToolCall(id, "read", json.RawMessage(fmt.Sprintf(`{"path":"f%d.txt"}`, turn))))
	}
	a := llm.Message{Role: llm.RoleAssistant, Content: content, Provider: provider, API: string(api), Model: "m", StopReason: llm.StopReasonToolUse}
	if rng.IntN(15) == 0 {
		a.StopReason = llm.StopReasonError
		a.Content = []llm.Content{llm.Text("cut")}
		ids = nil
	}
	hist = append(hist, a)
	for c, id := range ids {
		r := llm.Message{Role: llm.RoleToolResult, ToolCallID: id, ToolName: "read", Content: []llm.Content{llm.Text(fmt.Sprintf("out %d.%d", turn, c))}}
		switch rng.IntN(8) {
		case 0:
			r.Content = append(r.Content, llm.Image("aGVsbG8=", "image/png"))
		case 1:
			r.Content = nil
		case 2:
			r.IsError = true
		}
		hist = append(hist, r)
	}
	if rng.IntN(5) == 0 {
		hist = append(hist, llm.UserText(fmt.Sprintf("and then %d", turn)))
	}
	return hist
}

// Incremental is what CheckIncremental drives of a wire with a history
// cache.
type Incremental struct {
	API      llm.API
	Provider string
	// Encode builds the request body of req the way Stream sends it,
	// from the cache.
	Encode func(req *llm.Request) ([]byte, error)
	// Whole builds it from scratch (json.Marshal of the whole request).
	Whole func(req *llm.Request) ([]byte, error)
	// Covered is how many messages the cache covers now.
	Covered func() int
	// Decorate, if set, adds what the wire's own replies carry to each
	// new message (item ids, kept output items).
	Decorate func(m *llm.Message, turn int)
}

// CheckIncremental runs turns turns of a scripted conversation through w
// and fails unless the cached build of every request equals the whole
// build byte for byte and the cache served most turns. Along the way the
// history is rewritten as compaction, snip and repair do (a shorter
// rebuilt history, a block edited in place, the last turn dropped) and
// another conversation uses the same model: each must miss, not send a
// stale encoding.
func CheckIncremental(t *testing.T, w Incremental, turns int, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	temp := 0.5
	request := func(hist []llm.Message) *llm.Request {
		return &llm.Request{SystemPrompt: "be brief", Messages: hist,
			Tools:   []llm.ToolSpec{{Name: "read", Description: "read a file", Parameters: json.RawMessage(`{"type":"object"}`)}},
			Options: llm.Options{Temperature: &temp, SessionID: "s1"}}
	}
	check := func(hist []llm.Message, turn int) {
		t.Helper()
		req := request(hist)
		got, err := w.Encode(req)
		if err != nil {
			t.Fatal(err)
		}
		want, err := w.Whole(req)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			i := 0
			for i < len(got) && i < len(want) && got[i] == want[i] {
				i++
			}
			t.Fatalf("turn %d: the incremental request differs from the whole build at byte %d:\n got …%s\nwant …%s",
				turn, i, got[max(0, i-100):min(len(got), i+100)], want[max(0, i-100):min(len(want), i+100)])
		}
		if c := w.Covered(); c != len(hist) {
			t.Fatalf("turn %d: the cache covers %d of %d messages after the build", turn, c, len(hist))
		}
	}
	hist := []llm.Message{llm.UserText("start")}
	hits := 0
	for turn := 0; turn < turns; turn++ {
		switch {
		case turn == turns/3: // a snip or compaction: rebuilt, shorter
			hist = append([]llm.Message{llm.UserText("summary")}, hist[max(0, len(hist)-20):]...)
		case turn == turns/2: // a block changed in place, in the caller's own array
			for i := 3; i < len(hist); i++ {
				if len(hist[i].Content) > 0 {
					hist[i].Content[0].Text += " (edited)"
					hist[i].Content[0].Thinking += " (edited)"
					break
				}
			}
		case turn == 2*turns/3: // the last turn dropped
			hist = hist[:len(hist)-2]
		case turn == 5*turns/6: // another conversation on the same model
			check([]llm.Message{llm.UserText("other")}, turn)
		}
		from := len(hist)
		hist = ScriptedTurn(rng, hist, turn, w.API, w.Provider)
		if w.Decorate != nil {
			for i := from; i < len(hist); i++ {
				w.Decorate(&hist[i], turn)
			}
		}
		if w.Covered() > 0 {
			hits++
		}
		check(hist, turn)
	}
	if hits < turns*3/4 {
		t.Fatalf("the history cache served %d of %d turns; want most", hits, turns)
	}
}

// CheckIncrementalEdges checks the assembly of a body at its edges (no
// system prompt, no message, messages that send nothing): each request
// twice, a miss then a hit, equal to the whole build.
func CheckIncrementalEdges(t *testing.T, w Incremental) {
	t.Helper()
	for _, req := range []*llm.Request{
		{},
		{SystemPrompt: "sys"},
		{Messages: []llm.Message{llm.UserText("hi")}},
		{Messages: []llm.Message{{Role: llm.RoleUser}}}, // sends no message
		{SystemPrompt: "sys", Messages: []llm.Message{llm.UserText("hi")}},
		{Messages: []llm.Message{llm.UserText("hi"), {Role: llm.RoleAssistant, Content: []llm.Content{llm.Text("yes")}}}},
	} {
		for range 2 {
			got, err := w.Encode(req)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := w.Whole(req)
			if !bytes.Equal(got, want) {
				t.Fatalf("%+v:\n got %s\nwant %s", req, got, want)
			}
		}
	}
}
