package session

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/llm"
)

// scriptedAppend appends what one step of a long, untidy run adds to a
// history: tool turns with ids repeated across turns (call_0 every time),
// unknown and invalid tool names, calls without arguments, aborted and
// errored turns with missing results, results behind a steering message,
// orphan and duplicate results, results with details, consecutive user
// and assistant messages, empty assistant messages, thinking turns.
func scriptedAppend(rng *rand.Rand, h []llm.Message, step int) []llm.Message {
	ts := int64(1000 + step)
	at := func(m llm.Message) llm.Message { m.Timestamp = ts; return m }
	ids := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = "call_" + strconv.Itoa(i) // repeated in every turn
		}
		return out
	}
	names := []string{"read", "bash", "nosuch", "bad name", " read ", ""}
	switch rng.IntN(12) {
	case 0, 1, 2, 3: // a tool turn, answered
		calls := ids(1 + rng.IntN(3))
		var blocks []llm.Content
		if rng.IntN(3) == 0 {
			blocks = append(blocks, llm.Content{Type: llm.ContentThinking, Thinking: "hm", ThinkingSignature: "sig"})
		}
		for _, id := range calls {
			c := call(id, names[rng.IntN(len(names))])
			if rng.IntN(10) == 0 {
				c.Arguments = nil
			}
			blocks = append(blocks, c)
		}
		h = append(h, at(asst(blocks...)))
		if rng.IntN(6) == 0 { // the user steers before the results land
			h = append(h, at(user("steer "+strconv.Itoa(step))))
		}
		for i, c := range blocks {
			if c.Type != llm.ContentToolCall || rng.IntN(8) == 0 {
				continue // a missing result
			}
			r := at(result(c.ID, c.Name, "out "+strconv.Itoa(i)))
			if rng.IntN(3) == 0 {
				r.Details = json.RawMessage(`{"d":1}`)
			}
			if rng.IntN(10) == 0 {
				r.ToolName = ""
			}
			h = append(h, r)
			if rng.IntN(12) == 0 {
				h = append(h, r) // a second result for the call
			}
		}
	case 4: // an aborted or errored turn, some calls never answered
		reason := llm.StopReasonAborted
		if rng.IntN(2) == 0 {
			reason = llm.StopReasonError
		}
		m := failed(reason, call("call_0", "read"), call("call_1", "bash"))
		h = append(h, at(m))
		if rng.IntN(2) == 0 {
			h = append(h, at(result("call_0", "read", "partial")))
		}
	case 5: // a plain answer
		h = append(h, at(asst(llm.Text("answer "+strconv.Itoa(step)))))
	case 6: // two user messages in a row
		h = append(h, at(user("a")), at(user("b")))
	case 7: // an orphan result
		h = append(h, at(result("ghost", "read", "boo")))
	case 8: // an empty assistant message, then another assistant message
		h = append(h, at(llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{}, StopReason: llm.StopReasonError}))
		h = append(h, at(asst(llm.Text("again"))))
	case 9: // a turn whose only call is dropped by the sanitiser
		h = append(h, at(asst(call("call_0", "bad name"))), at(result("call_0", "bad name", "x")))
	default:
		h = append(h, at(user("next "+strconv.Itoa(step))))
	}
	return h
}

func marshal(t *testing.T, msgs []llm.Message) string {
	t.Helper()
	b, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRepairerMatchesRepair compares the incremental repair with a
// from-scratch Repair after every step of long scripted runs, on every
// API's validation, with and without a tool allow-list, through rewrites
// of the history (a snip of its head, a message replaced, the last turn
// withdrawn, another conversation).
func TestRepairerMatchesRepair(t *testing.T) {
	now := func() int64 { return 42 }
	apis := []llm.API{llm.APIOpenAICompletions, llm.APIOpenAIResponses, llm.APIAnthropicMessages, llm.APIGoogleGenerativeAI}
	for _, api := range apis {
		for _, allowed := range [][]string{nil, {"read", "bash"}, {}} {
			name := string(api) + "/allowed=" + strconv.Itoa(len(allowed))
			if allowed == nil {
				name = string(api) + "/allowed=nil"
			}
			t.Run(name, func(t *testing.T) {
				opts := RepairOptions{API: api, AllowedTools: allowed, Now: now}
				r := NewRepairer(opts)
				rng := rand.New(rand.NewPCG(7, uint64(len(api)+len(allowed))))
				var h []llm.Message
				kept := 0
				for step := range 600 {
					switch {
					case step%97 == 96: // snip: the head goes
						h = append([]llm.Message(nil), h[len(h)/3:]...)
					case step%89 == 88 && len(h) > 4: // a message replaced by an edited copy
						i := rng.IntN(len(h) - 1)
						m := h[i].Clone()
						if len(m.Content) > 0 {
							m.Content[0].Text += " (edited)"
						}
						h = append(append(append([]llm.Message(nil), h[:i]...), m), h[i+1:]...)
					case step%71 == 70 && len(h) > 2: // the last turn withdrawn, then regrown
						h = h[:len(h)-2]
					case step == 300: // another conversation
						h = []llm.Message{user("fresh")}
					default:
						h = scriptedAppend(rng, h, step)
					}
					gotMsgs, wantMsgs := r.Repair(h), Repair(h, opts)
					if got, want := marshal(t, gotMsgs), marshal(t, wantMsgs); got != want {
						t.Fatalf("step %d (%d messages): incremental repair differs (-want +got):\n%s\nkept %d, tail %q",
							step, len(h), cmp.Diff(shape(wantMsgs), shape(gotMsgs)), len(r.in), shape(h[max(0, len(h)-12):]))
					}
					if len(r.in) > 0 {
						kept++
					}
				}
				if kept < 400 {
					t.Errorf("the prefix was kept on %d of 600 steps; want most", kept)
				}
			})
		}
	}
}

// TestRepairerEditedInPlaceOfAppend: a history whose kept messages are
// replaced by others of the same shape (not appended to) is repaired from
// scratch.
func TestRepairerSeesReplacedMessages(t *testing.T) {
	opts := RepairOptions{API: llm.APIOpenAICompletions, Now: func() int64 { return 1 }}
	r := NewRepairer(opts)
	h := []llm.Message{user("q"), asst(call("call_0", "read")), result("call_0", "read", "one"),
		asst(call("call_0", "read")), result("call_0", "read", "two")}
	r.Repair(h)
	h2 := append([]llm.Message(nil), h...)
	h2[2] = result("call_0", "read", "changed")
	if got, want := marshal(t, r.Repair(h2)), marshal(t, Repair(h2, opts)); got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
}

// BenchmarkTransformLongHistory is one turn of a read-tool loop: the
// repair of a history of n messages that grew by one turn.
func BenchmarkTransformLongHistory(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			var h []llm.Message
			h = append(h, user("q"))
			for len(h) < n {
				// Results carry Details, as the read tool's do, which the
				// repair strips: the full pass copies the history for it.
				r := result("call_0", "read", "out")
				r.Details = json.RawMessage(`{"path":"hello.txt"}`)
				h = append(h, asst(call("call_0", "read")), r)
			}
			opts := RepairOptions{API: llm.APIOpenAICompletions}
			b.Run("full", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					Repair(h, opts)
				}
			})
			b.Run("incremental", func(b *testing.B) {
				r := NewRepairer(opts)
				r.Repair(h[:len(h)-2])
				b.ReportAllocs()
				for b.Loop() {
					r.Repair(h)
				}
			})
		})
	}
}
