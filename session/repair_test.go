package session

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/llm"
)

// Helpers building messages tersely.
func user(text string) llm.Message {
	return llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text(text)}}
}

func asst(blocks ...llm.Content) llm.Message {
	return llm.Message{Role: llm.RoleAssistant, Content: blocks, StopReason: llm.StopReasonStop}
}

func failed(reason llm.StopReason, blocks ...llm.Content) llm.Message {
	m := asst(blocks...)
	m.StopReason = reason
	return m
}

func call(id, name string) llm.Content { return llm.ToolCall(id, name, json.RawMessage(`{"a":1}`)) }

func result(id, name, text string) llm.Message {
	return llm.Message{Role: llm.RoleToolResult, ToolCallID: id, ToolName: name, Content: []llm.Content{llm.Text(text)}}
}

// shape renders messages as short strings: "u:text", "a:text|call:id", "r:id=text".
func shape(msgs []llm.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		var parts []string
		for _, c := range m.Content {
			switch c.Type {
			case llm.ContentText:
				parts = append(parts, c.Text)
			case llm.ContentToolCall:
				parts = append(parts, "call:"+c.ID+"/"+c.Name)
			case llm.ContentThinking:
				parts = append(parts, "think")
			}
		}
		switch m.Role {
		case llm.RoleUser:
			out[i] = "u:" + strings.Join(parts, "|")
		case llm.RoleAssistant:
			out[i] = "a:" + strings.Join(parts, "|")
		case llm.RoleToolResult:
			text := m.Text()
			switch text {
			case SyntheticResultText:
				text = "SYNTH"
			case AbortedResultText:
				text = "ABORTED"
			}
			out[i] = "r:" + m.ToolCallID + "/" + m.ToolName + "=" + text
		}
	}
	return out
}

func TestRepairPairing(t *testing.T) {
	tests := []struct {
		name   string
		in     []llm.Message
		policy FailedTurnPolicy
		want   []string
		rep    PairingReport
	}{{
		name: "paired history is returned as is",
		in:   []llm.Message{user("hi"), asst(call("1", "read")), result("1", "read", "ok"), asst(llm.Text("done"))},
		want: []string{"u:hi", "a:call:1/read", "r:1/read=ok", "a:done"},
	}, {
		name: "result displaced behind a user message moves up",
		in:   []llm.Message{asst(call("1", "read")), user("steer"), result("1", "read", "ok")},
		want: []string{"a:call:1/read", "r:1/read=ok", "u:steer"},
		rep:  PairingReport{Moved: true, Changed: true},
	}, {
		name: "results out of call order are put in call order",
		in:   []llm.Message{asst(call("1", "a"), call("2", "b")), result("2", "b", "two"), result("1", "a", "one")},
		want: []string{"a:call:1/a|call:2/b", "r:1/a=one", "r:2/b=two"},
		rep:  PairingReport{Changed: true},
	}, {
		name: "missing result gets a synthetic error",
		in:   []llm.Message{asst(call("1", "a"), call("2", "b")), result("2", "b", "two"), user("next")},
		want: []string{"a:call:1/a|call:2/b", "r:1/a=SYNTH", "r:2/b=two", "u:next"},
		rep:  PairingReport{Added: []string{"1"}, Moved: true, Changed: true},
	}, {
		name: "orphan result before any call is dropped",
		in:   []llm.Message{result("x", "read", "?"), user("hi")},
		want: []string{"u:hi"},
		rep:  PairingReport{DroppedOrphans: 1, Changed: true},
	}, {
		name: "result for another turn's call is an orphan",
		in:   []llm.Message{asst(call("1", "a")), result("zz", "a", "?"), result("1", "a", "ok")},
		want: []string{"a:call:1/a", "r:1/a=ok"},
		rep:  PairingReport{DroppedOrphans: 1, Changed: true},
	}, {
		name: "duplicate in the same span is dropped silently",
		in:   []llm.Message{asst(call("1", "a")), result("1", "a", "first"), result("1", "a", "second")},
		want: []string{"a:call:1/a", "r:1/a=first"},
		rep:  PairingReport{Changed: true},
	}, {
		// Issue 16.3: Kimi K2 on Groq numbers ids per response, so every
		// turn's call is functions.weather:0; each turn keeps its pair.
		name: "call id reused by a later turn keeps both pairs",
		in: []llm.Message{asst(call("functions.weather:0", "a")), result("functions.weather:0", "a", "first"),
			asst(call("functions.weather:0", "a")), result("functions.weather:0", "a", "again")},
		want: []string{"a:call:functions.weather:0/a", "r:functions.weather:0/a=first",
			"a:call:functions.weather:0/a", "r:functions.weather:0/a=again"},
		rep: PairingReport{},
	}, {
		name: "call id reused by a later turn whose result is lost gets a synthetic one",
		in: []llm.Message{asst(call("call_0", "a")), result("call_0", "a", "first"),
			asst(call("call_0", "a")), user("next")},
		want: []string{"a:call:call_0/a", "r:call_0/a=first", "a:call:call_0/a", "r:call_0/a=SYNTH", "u:next"},
		rep:  PairingReport{Added: []string{"call_0"}, Changed: true},
	}, {
		name: "two calls with one id in one message pair in order",
		in: []llm.Message{asst(call("call_0", "a"), call("call_0", "b")), result("call_0", "", "one"), result("call_0", "", "two"),
			result("call_0", "", "three")},
		want: []string{"a:call:call_0/a|call:call_0/b", "r:call_0/a=one", "r:call_0/b=two"},
		rep:  PairingReport{Changed: true},
	}, {
		name: "a result repeating an answered id after a turn without that call is a duplicate",
		in: []llm.Message{asst(call("1", "a")), result("1", "a", "first"),
			asst(call("2", "a")), result("2", "a", "x"), result("1", "a", "again")},
		want: []string{"a:call:1/a", "r:1/a=first", "a:call:2/a", "r:2/a=x"},
		rep:  PairingReport{DroppedDuplicates: 1, Changed: true},
	}, {
		name: "aborted turn keeps real results and gets no synthetic ones",
		in:   []llm.Message{failed(llm.StopReasonAborted, call("1", "a"), call("2", "b")), result("2", "b", "ran"), user("again")},
		want: []string{"a:call:1/a|call:2/b", "r:2/b=ran", "u:again"},
		rep:  PairingReport{Moved: true},
	}, {
		name:   "errored turn with drop policy loses its results",
		in:     []llm.Message{failed(llm.StopReasonError, call("1", "a")), result("1", "a", "ran"), user("again")},
		policy: FailedTurnDrop,
		want:   []string{"a:call:1/a", "u:again"},
		rep:    PairingReport{Moved: true, Changed: true},
	}, {
		name:   "aborted turn with placeholder policy gets aborted results",
		in:     []llm.Message{failed(llm.StopReasonAborted, call("1", "a"), call("2", "b")), result("1", "a", "ran")},
		policy: FailedTurnPlaceholder,
		want:   []string{"a:call:1/a|call:2/b", "r:1/a=ran", "r:2/b=ABORTED"},
		rep:    PairingReport{Added: []string{"2"}, Changed: true},
	}, {
		name: "blank result name takes the call's",
		in:   []llm.Message{asst(call("1", "read")), result("1", " ", "ok")},
		want: []string{"a:call:1/read", "r:1/read=ok"},
		rep:  PairingReport{Changed: true},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, rep := RepairPairing(tt.in, PairingOptions{FailedTurns: tt.policy, Now: func() int64 { return 7 }})
			if d := cmp.Diff(tt.want, shape(got)); d != "" {
				t.Errorf("messages (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.rep, rep); d != "" {
				t.Errorf("report (-want +got):\n%s", d)
			}
			if !rep.Changed && !sameBacking(got, tt.in) {
				t.Errorf("unchanged input should be returned itself")
			}
			if err := CheckPairing(got); err != nil {
				t.Errorf("output breaks the pairing contract: %v", err)
			}
			again, rep2 := RepairPairing(got, PairingOptions{FailedTurns: tt.policy})
			if rep2.Changed {
				t.Errorf("repair is not idempotent: %v", shape(again))
			}
		})
	}
}

func TestCheckPairing(t *testing.T) {
	tests := []struct {
		name string
		in   []llm.Message
		ok   bool
	}{
		{"paired", []llm.Message{asst(call("1", "a")), result("1", "a", "")}, true},
		{"missing", []llm.Message{asst(call("1", "a")), user("x")}, false},
		{"orphan", []llm.Message{user("x"), result("1", "a", "")}, false},
		{"twice", []llm.Message{asst(call("1", "a")), result("1", "a", ""), result("1", "a", "")}, false},
		{"foreign", []llm.Message{asst(call("1", "a")), result("1", "a", ""), result("2", "a", "")}, false},
		{"aborted without results", []llm.Message{failed(llm.StopReasonAborted, call("1", "a")), user("x")}, true},
		{"id reused across turns", []llm.Message{asst(call("1", "a")), result("1", "a", ""), asst(call("1", "a")), result("1", "a", "")}, true},
		{"id reused across turns, second unanswered", []llm.Message{asst(call("1", "a")), result("1", "a", ""), asst(call("1", "a")), user("x")}, false},
		{"one id twice in a message", []llm.Message{asst(call("1", "a"), call("1", "b")), result("1", "a", ""), result("1", "b", "")}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckPairing(tt.in)
			if (err == nil) != tt.ok {
				t.Fatalf("CheckPairing = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrUnpaired) {
				t.Errorf("error %v does not match ErrUnpaired", err)
			}
		})
	}
}

func TestSanitizeToolCalls(t *testing.T) {
	long := strings.Repeat("x", 65)
	signed := llm.Thinking("hmm", "sig")
	tests := []struct {
		name string
		in   []llm.Message
		opts SanitizeOptions
		want []string
	}{
		{"valid calls kept", []llm.Message{asst(llm.Text("t"), call("1", "read_file-2"))}, SanitizeOptions{}, []string{"a:t|call:1/read_file-2"}},
		{"no id", []llm.Message{asst(llm.Text("t"), call(" ", "read"))}, SanitizeOptions{}, []string{"a:t"}},
		{"no arguments", []llm.Message{asst(llm.Text("t"), llm.Content{Type: llm.ContentToolCall, ID: "1", Name: "read"})}, SanitizeOptions{}, []string{"a:t"}},
		{"null arguments", []llm.Message{asst(llm.Text("t"), llm.Content{Type: llm.ContentToolCall, ID: "1", Name: "read", Arguments: json.RawMessage("null")})}, SanitizeOptions{}, []string{"a:t"}},
		{"name with a dot", []llm.Message{asst(llm.Text("t"), call("1", "fs.read"))}, SanitizeOptions{}, []string{"a:t"}},
		{"name of 65 chars", []llm.Message{asst(llm.Text("t"), call("1", long))}, SanitizeOptions{}, []string{"a:t"}},
		{"name of 64 chars", []llm.Message{asst(call("1", long[:64]))}, SanitizeOptions{}, []string{"a:call:1/" + long[:64]}},
		{"padded name trimmed", []llm.Message{asst(call("1", "  read "))}, SanitizeOptions{}, []string{"a:call:1/read"}},
		{"not allowed", []llm.Message{asst(call("1", "read"), call("2", "Write"))}, SanitizeOptions{AllowedTools: []string{"READ"}}, []string{"a:call:1/read"}},
		{"emptied message removed", []llm.Message{user("u"), asst(call("", "read")), user("v")}, SanitizeOptions{}, []string{"u:u", "u:v"}},
		{"signed turn kept whole", []llm.Message{asst(signed, call("1", "read"))}, SanitizeOptions{PreserveSignedThinking: true}, []string{"a:think|call:1/read"}},
		{"signed turn with a bad call dropped", []llm.Message{asst(signed, call("1", "read"), call("2", "bad name"))}, SanitizeOptions{PreserveSignedThinking: true}, []string{}},
		{"signed turn with a padded name dropped", []llm.Message{asst(signed, call("1", " read"))}, SanitizeOptions{PreserveSignedThinking: true}, []string{}},
		{"signed turns reusing an id", []llm.Message{asst(signed, call("1", "read")), asst(signed, call("1", "read"))}, SanitizeOptions{PreserveSignedThinking: true}, []string{"a:think|call:1/read"}},
		{"unsigned thinking is mutable", []llm.Message{asst(llm.Thinking("x", ""), call("1", " read"))}, SanitizeOptions{PreserveSignedThinking: true}, []string{"a:think|call:1/read"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := shape(tt.in)
			got := SanitizeToolCalls(tt.in, tt.opts)
			if d := cmp.Diff(tt.want, shape(got)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			if d := cmp.Diff(before, shape(tt.in)); d != "" {
				t.Errorf("input was modified:\n%s", d)
			}
		})
	}
}

func TestValidToolName(t *testing.T) {
	for name, want := range map[string]bool{
		"read": true, "a-b_C9": true, "": false, "a b": false, "a.b": false, "a:b": false, "ü": false,
		strings.Repeat("a", 64): true, strings.Repeat("a", 65): false,
	} {
		if got := ValidToolName(name); got != want {
			t.Errorf("ValidToolName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestValidateAnthropicTurns(t *testing.T) {
	tests := []struct {
		name string
		in   []llm.Message
		want []string
	}{
		{"consecutive users merged, nothing lost", []llm.Message{user("a"), user("b"), asst(llm.Text("c")), user("d")}, []string{"u:a|b", "a:c", "u:d"}},
		{"dangling call stripped", []llm.Message{user("go"), asst(llm.Text("t"), call("1", "x")), user("next")}, []string{"u:go", "a:t", "u:next"}},
		{"only dangling calls leave a note", []llm.Message{asst(call("1", "x")), user("next")}, []string{"a:" + OmittedCallsText, "u:next"}},
		{"failed turn left empty", []llm.Message{failed(llm.StopReasonError, call("1", "x")), user("next")}, []string{"a:", "u:next"}},
		{"answered call kept", []llm.Message{asst(call("1", "x")), result("1", "x", "r")}, []string{"a:call:1/x", "r:1/x=r"}},
		{"result after next assistant does not count", []llm.Message{asst(call("1", "x")), asst(llm.Text("y")), result("1", "x", "r")}, []string{"a:" + OmittedCallsText, "a:y", "r:1/x=r"}},
		{"thinking turn with wrong result name replaced", []llm.Message{asst(llm.Thinking("t", "s"), call("1", "x")), result("1", "y", "r")}, []string{"a:" + OmittedCallsText, "r:1/y=r"}},
		{"thinking turn fully answered kept", []llm.Message{asst(llm.Thinking("t", "s"), call("1", "x")), result("1", "x", "r")}, []string{"a:think|call:1/x", "r:1/x=r"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ValidateAnthropicTurns(tt.in)
			if d := cmp.Diff(tt.want, shape(got)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			if d := cmp.Diff(shape(got), shape(ValidateAnthropicTurns(got))); d != "" {
				t.Errorf("not idempotent:\n%s", d)
			}
		})
	}
}

func TestValidateGeminiTurns(t *testing.T) {
	a1 := asst(call("1", "x"))
	a1.Usage = &llm.Usage{Input: 1}
	a2 := asst(llm.Text("more"))
	a2.Usage = &llm.Usage{Input: 2}
	a2.StopReason = llm.StopReasonToolUse
	got := ValidateGeminiTurns([]llm.Message{user("u"), a1, a2, result("1", "x", "r")})
	if d := cmp.Diff([]string{"u:u", "a:call:1/x|more", "r:1/x=r"}, shape(got)); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if got[1].Usage.Input != 2 || got[1].StopReason != llm.StopReasonToolUse {
		t.Errorf("merged turn should carry the later usage and stop reason, got %+v", got[1])
	}
	if a1.Usage.Input != 1 || len(a1.Content) != 1 {
		t.Errorf("input message was modified: %+v", a1)
	}
}

func TestLimitHistoryTurns(t *testing.T) {
	in := []llm.Message{asst(llm.Text("hello")), user("1"), asst(llm.Text("a1")), user("2"), asst(llm.Text("a2")), user("3")}
	tests := []struct {
		n    int
		want []string
	}{
		{0, shape(in)}, {-1, shape(in)}, {5, shape(in)}, {3, shape(in)},
		{1, []string{"u:3"}}, {2, []string{"u:2", "a:a2", "u:3"}},
	}
	for _, tt := range tests {
		if d := cmp.Diff(tt.want, shape(LimitHistoryTurns(in, tt.n))); d != "" {
			t.Errorf("n=%d (-want +got):\n%s", tt.n, d)
		}
	}
}

func TestRepairPipeline(t *testing.T) {
	withDetails := result("1", "read", "r1")
	withDetails.Details = json.RawMessage(`{"secret":1}`)
	history := []llm.Message{
		user("first"), asst(call("1", "read")), withDetails,
		user("second"), asst(call("2", "bad.name"), call("3", "read")), result("2", "bad.name", "x"),
		user("third"), failed(llm.StopReasonAborted, call("4", "read")),
	}
	tests := []struct {
		name string
		opts RepairOptions
		want []string
	}{{
		name: "defaults",
		want: []string{"u:first", "a:call:1/read", "r:1/read=r1", "u:second", "a:call:3/read", "r:3/read=SYNTH", "u:third", "a:call:4/read", "r:4/read=ABORTED"},
	}, {
		name: "history limit then second pairing pass",
		opts: RepairOptions{HistoryTurns: 2},
		want: []string{"u:second", "a:call:3/read", "r:3/read=SYNTH", "u:third", "a:call:4/read", "r:4/read=ABORTED"},
	}, {
		name: "responses api fills aborted turns",
		opts: RepairOptions{API: llm.APIOpenAIResponses, HistoryTurns: 1},
		want: []string{"u:third", "a:call:4/read", "r:4/read=ABORTED"},
	}, {
		name: "anthropic answers the aborted call too",
		opts: RepairOptions{API: llm.APIAnthropicMessages, HistoryTurns: 1},
		want: []string{"u:third", "a:call:4/read", "r:4/read=ABORTED"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Transform(tt.opts)(context.Background(), history)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, shape(got)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			for _, m := range got {
				if m.Details != nil {
					t.Errorf("details reached the model: %s", m.Details)
				}
			}
			if err := CheckPairing(got); err != nil {
				t.Error(err)
			}
		})
	}
	if history[2].Details == nil {
		t.Error("the input history was modified")
	}

	// An aborted thinking turn where only the first call ran: the call
	// that did not run gets a placeholder, so the turn stays whole (its
	// signature forbids dropping one call) and the real result with it.
	thinking := []llm.Message{
		user("go"), failed(llm.StopReasonAborted, llm.Thinking("t", "sig"), call("1", "read"), call("2", "bash")),
		result("1", "read", "r"), user("again"),
	}
	got := Repair(thinking, RepairOptions{API: llm.APIAnthropicMessages})
	if d := cmp.Diff([]string{"u:go", "a:think|call:1/read|call:2/bash", "r:1/read=r", "r:2/bash=ABORTED", "u:again"}, shape(got)); d != "" {
		t.Errorf("aborted thinking turn for Anthropic (-want +got):\n%s", d)
	}
	if err := CheckPairing(got); err != nil {
		t.Error(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Transform(RepairOptions{})(ctx, history); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: err = %v", err)
	}
}

// Issue 17.3: whatever the stop reason of a turn and whatever the wire, a
// call that is sent has a result right after it (an aborted turn left by a
// double Ctrl-C was sent unpaired to Chat Completions, which refuses it).
func TestRepairPairsEveryStopReasonOnEveryWire(t *testing.T) {
	apis := []llm.API{llm.APIOpenAICompletions, llm.APIOpenAIResponses, llm.APIAnthropicMessages, llm.APIGoogleGenerativeAI}
	reasons := []llm.StopReason{llm.StopReasonAborted, llm.StopReasonError, llm.StopReasonToolUse, llm.StopReasonStop, llm.StopReasonLength}
	for _, api := range apis {
		for _, sr := range reasons {
			in := []llm.Message{user("go"), failed(sr, llm.Text("half"), call("1", "read"), call("2", "bash")), user("again")}
			got := Repair(in, RepairOptions{API: api})
			for i, m := range got {
				calls := m.ToolCalls()
				if m.Role != llm.RoleAssistant || len(calls) == 0 {
					continue
				}
				for k, c := range calls {
					if j := i + 1 + k; j >= len(got) || got[j].Role != llm.RoleToolResult || got[j].ToolCallID != c.ID {
						t.Errorf("%s, stop reason %s: call %s is sent without its result: %v", api, sr, c.ID, shape(got))
					}
				}
			}
		}
	}
}

// pairedAlready is a shortcut of RepairPairing; on random histories it must
// agree with the full repair about what needs no change.
func TestPairedAlreadyAgreesWithRepair(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	pick := func() llm.Message {
		id := strconv.Itoa(rng.IntN(3))
		switch rng.IntN(7) {
		case 0:
			return user("u")
		case 1:
			return asst(llm.Text("t"))
		case 2:
			return asst(call(id, "n"+id))
		case 3:
			return asst(call(id, "n"+id), call(strconv.Itoa(rng.IntN(3)), "n"))
		case 4:
			return failed(llm.StopReasonAborted, call(id, "n"+id))
		default:
			return result(id, "n"+id, "r")
		}
	}
	agreeOK := 0
	for range 20000 {
		msgs := make([]llm.Message, 1+rng.IntN(6))
		for i := range msgs {
			msgs[i] = pick()
		}
		for _, policy := range []FailedTurnPolicy{FailedTurnKeep, FailedTurnDrop, FailedTurnPlaceholder} {
			ok, moved := pairedAlready(msgs, policy)
			out, rep := repairPairing(msgs, policy, func() int64 { return 0 })
			if ok && (rep.Changed || rep.Moved != moved) {
				t.Fatalf("policy %d: shortcut says unchanged (moved %v) but repair says %+v for %v -> %v", policy, moved, rep, shape(msgs), shape(out))
			}
			if !ok && !rep.Changed {
				t.Fatalf("policy %d: shortcut missed an unchanged history %v", policy, shape(msgs))
			}
			if ok {
				agreeOK++
			}
		}
	}
	if agreeOK == 0 {
		t.Fatal("no random history was already paired; the test proves nothing")
	}
}
