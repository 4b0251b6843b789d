package session

import (
	"encoding/json"
	"github.com/agentloop/agentloop/internal/vectortest"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentloop/agentloop/llm"
)

// The shared reference vectors (OpenClaw's own test cases as data), run
// through a small adapter from their message shape to llm.Message.

type vectorCase struct {
	Name     string                     `json:"name"`
	Function string                     `json:"function"`
	Input    map[string]json.RawMessage `json:"input"`
	Expected map[string]json.RawMessage `json:"expected"`
}

// skippedVectors are cases encoding behaviour we deliberately do not share.
var skippedVectors = map[string]string{
	// Our names follow the provider-safe rule ^[a-zA-Z0-9_-]{1,64}$, which
	// rejects '.' and ':' (OpenClaw accepts them).
	"accepts punctuation-safe tool names during transcript repair": "stricter tool-name rule",
	// sessions_spawn attachment redaction belongs to an OpenClaw tool we do not have.
	"redacts sessions_spawn attachments for mixed-case and padded tool names":       "OpenClaw-only tool",
	"drops signed-thinking assistant turns that would require attachment redaction": "OpenClaw-only tool",
	// History limits per chat channel come from OpenClaw's channel config.
	"dm session kind uses dmHistoryLimit":                                             "channel config is not ours",
	"channel session kind uses historyLimit":                                          "channel config is not ours",
	"unsupported session kind returns undefined":                                      "channel config is not ours",
	"matches channel history limits across canonical provider aliases (z-ai == z.ai)": "channel config is not ours",
}

func loadVectors(t *testing.T, file string) []vectorCase {
	t.Helper()
	data := vectortest.Read(t, file)
	var cases []vectorCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatalf("decode %s: %v", file, err)
	}
	return cases
}

// vecMessages converts a vector message list. toolUse and functionCall
// blocks become toolCall blocks with their input as arguments: our runtime
// has one tool-call block type. Synthetic markers are returned by index.
func vecMessages(t *testing.T, raw json.RawMessage) ([]llm.Message, map[int]bool) {
	t.Helper()
	var list []map[string]any
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatalf("decode messages: %v", err)
	}
	synthetic := map[int]bool{}
	out := make([]llm.Message, len(list))
	for i, m := range list {
		if m["__synthetic"] == true {
			synthetic[i] = true
			delete(m, "__synthetic")
		}
		out[i] = vecMessage(t, m)
	}
	return out, synthetic
}

func vecMessage(t *testing.T, m map[string]any) llm.Message {
	t.Helper()
	if blocks, ok := m["content"].([]any); ok {
		for _, b := range blocks {
			blk, _ := b.(map[string]any)
			if typ := blk["type"]; typ == "toolUse" || typ == "functionCall" {
				blk["type"] = "toolCall"
				if in, ok := blk["input"]; ok {
					if _, has := blk["arguments"]; !has {
						blk["arguments"] = in
					}
					delete(blk, "input")
				}
			}
		}
	}
	b, _ := json.Marshal(m)
	var msg llm.Message
	if err := json.Unmarshal(b, &msg); err != nil {
		t.Fatalf("decode message %s: %v", b, err)
	}
	return msg
}

// asJSON renders messages as generic JSON values for comparison.
func asJSON(t *testing.T, msgs []llm.Message) any {
	t.Helper()
	b, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	_ = json.Unmarshal(b, &v)
	return v
}

func compareMessages(t *testing.T, got, want []llm.Message, synthetic map[int]bool) {
	t.Helper()
	got = append([]llm.Message(nil), got...)
	want = append([]llm.Message(nil), want...)
	for i := range synthetic {
		if i >= len(got) {
			t.Fatalf("expected a synthetic result at %d, got %d messages", i, len(got))
		}
		g := got[i]
		if g.Role != llm.RoleToolResult || !g.IsError || g.ToolCallID != want[i].ToolCallID ||
			g.ToolName != want[i].ToolName || !strings.HasPrefix(g.Text(), "[agentloop]") {
			t.Errorf("message %d: want a synthetic error result for %s, got %+v", i, want[i].ToolCallID, g)
		}
		got[i], want[i] = llm.Message{}, llm.Message{}
	}
	if d := cmp.Diff(asJSON(t, want), asJSON(t, got)); d != "" {
		t.Errorf("messages differ (-want +got):\n%s", d)
	}
}

func expectInt(t *testing.T, exp map[string]json.RawMessage, key string, got int) {
	t.Helper()
	if raw, ok := exp[key]; ok {
		var want int
		_ = json.Unmarshal(raw, &want)
		if got != want {
			t.Errorf("%s = %d, want %d", key, got, want)
		}
	}
}

func sameBacking(a, b []llm.Message) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

func TestVectorsToolPairing(t *testing.T) {
	for _, c := range loadVectors(t, "tool_pairing.json") {
		t.Run(c.Name, func(t *testing.T) {
			if why, ok := skippedVectors[c.Name]; ok {
				t.Skip(why)
			}
			in, _ := vecMessages(t, c.Input["messages"])
			want, synthetic := vecMessages(t, c.Expected["messages"])
			var opts struct {
				Policy       string   `json:"erroredAssistantResultPolicy"`
				Allowed      []string `json:"allowedToolNames"`
				ThinkingSafe bool     `json:"allowProviderOwnedThinkingReplay"`
			}
			if raw, ok := c.Input["options"]; ok {
				_ = json.Unmarshal(raw, &opts)
			}
			var got []llm.Message
			switch c.Function {
			case "repairToolUseResultPairing":
				po := PairingOptions{}
				if opts.Policy == "drop" {
					po.FailedTurns = FailedTurnDrop
				}
				var rep PairingReport
				got, rep = RepairPairing(in, po)
				if raw, ok := c.Expected["addedToolCallIds"]; ok {
					var ids []string
					_ = json.Unmarshal(raw, &ids)
					if d := cmp.Diff(ids, rep.Added, cmpEmpty); d != "" {
						t.Errorf("added (-want +got):\n%s", d)
					}
				}
				expectInt(t, c.Expected, "droppedDuplicateCount", rep.DroppedDuplicates)
				expectInt(t, c.Expected, "droppedOrphanCount", rep.DroppedOrphans)
				if raw, ok := c.Expected["moved"]; ok {
					var moved bool
					_ = json.Unmarshal(raw, &moved)
					if rep.Moved != moved {
						t.Errorf("moved = %v, want %v", rep.Moved, moved)
					}
				}
				if want, ok := expectBool(t, c.Expected, "unchanged"); ok && (!rep.Changed && sameBacking(got, in)) != want {
					t.Errorf("returned unchanged = %v, want %v", !rep.Changed && sameBacking(got, in), want)
				}
			case "sanitizeToolCallInputs":
				got = SanitizeToolCalls(in, SanitizeOptions{AllowedTools: opts.Allowed, PreserveSignedThinking: opts.ThinkingSafe})
				var ids, names, types []string
				for _, m := range got {
					for _, b := range m.Content {
						if b.Type == llm.ContentToolCall {
							ids, names = append(ids, b.ID), append(names, b.Name)
						}
						types = append(types, string(b.Type))
					}
				}
				expectStrings(t, c.Expected, "toolCallIds", ids)
				expectStrings(t, c.Expected, "toolCallNames", names)
				if raw, ok := c.Expected["blockTypes"]; ok {
					// OpenClaw's toolUse alias is our toolCall.
					var want []string
					_ = json.Unmarshal(raw, &want)
					for i, w := range want {
						if w == "toolUse" || w == "functionCall" {
							want[i] = string(llm.ContentToolCall)
						}
					}
					if d := cmp.Diff(want, types, cmpEmpty); d != "" {
						t.Errorf("block types (-want +got):\n%s", d)
					}
				}
				if raw, ok := c.Expected["outputMustNotContain"]; ok {
					var secret string
					_ = json.Unmarshal(raw, &secret)
					if out, _ := json.Marshal(got); strings.Contains(string(out), secret) {
						t.Errorf("the output contains %q", secret)
					}
				}
			case "stripToolResultDetails":
				got = StripToolResultDetails(in)
			default:
				t.Fatalf("no adapter for %s", c.Function)
			}
			compareMessages(t, got, want, synthetic)
			checkedKeys(t, c.Expected, "messages", "addedToolCallIds", "droppedDuplicateCount", "droppedOrphanCount",
				"moved", "unchanged", "toolCallIds", "toolCallNames", "blockTypes", "outputMustNotContain")
		})
	}
}

// checkedKeys fails the case when it states a field outside keys, the
// fields the adapter checks: nothing a case states passes unchecked.
func checkedKeys(t *testing.T, expected map[string]json.RawMessage, keys ...string) {
	t.Helper()
	for k := range expected {
		if !slices.Contains(keys, k) {
			t.Errorf("no adapter for expected.%s", k)
		}
	}
}

func expectBool(t *testing.T, exp map[string]json.RawMessage, key string) (want, ok bool) {
	t.Helper()
	raw, ok := exp[key]
	if ok {
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatalf("expected.%s: %v", key, err)
		}
	}
	return want, ok
}

func expectStrings(t *testing.T, exp map[string]json.RawMessage, key string, got []string) {
	t.Helper()
	if raw, ok := exp[key]; ok {
		var want []string
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatalf("expected.%s: %v", key, err)
		}
		if d := cmp.Diff(want, got, cmpEmpty); d != "" {
			t.Errorf("%s (-want +got):\n%s", key, d)
		}
	}
}

var cmpEmpty = cmp.Transformer("nilToEmpty", func(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
})

func TestVectorsValidateTurns(t *testing.T) {
	for _, c := range loadVectors(t, "validate_turns.json") {
		t.Run(c.Name, func(t *testing.T) {
			if why, ok := skippedVectors[c.Name]; ok {
				t.Skip(why)
			}
			if c.Function == "mergeConsecutiveUserTurns" {
				prev, _ := vecMessages(t, json.RawMessage("["+string(c.Input["previous"])+"]"))
				cur, _ := vecMessages(t, json.RawMessage("["+string(c.Input["current"])+"]"))
				want, _ := vecMessages(t, json.RawMessage("["+string(c.Expected["message"])+"]"))
				compareMessages(t, []llm.Message{MergeUserTurns(prev[0], cur[0])}, want, nil)
				checkedKeys(t, c.Expected, "message")
				return
			}
			in, _ := vecMessages(t, c.Input["messages"])
			want, _ := vecMessages(t, c.Expected["messages"])
			var f func([]llm.Message) []llm.Message
			switch c.Function {
			case "validateAnthropicTurns":
				f = ValidateAnthropicTurns
			case "validateGeminiTurns":
				f = ValidateGeminiTurns
			default:
				t.Fatalf("no adapter for %s", c.Function)
			}
			got := f(in)
			compareMessages(t, got, want, nil)
			if idem, ok := expectBool(t, c.Expected, "idempotent"); ok {
				again, _ := json.Marshal(f(got))
				once, _ := json.Marshal(got)
				if (string(again) == string(once)) != idem {
					t.Errorf("a second pass gives the same messages: %v, want %v", !idem, idem)
				}
			}
			checkedKeys(t, c.Expected, "messages", "idempotent")
		})
	}
}

func TestVectorsLimitHistory(t *testing.T) {
	for _, c := range loadVectors(t, "limit_history.json") {
		t.Run(c.Name, func(t *testing.T) {
			if why, ok := skippedVectors[c.Name]; ok {
				t.Skip(why)
			}
			if c.Function != "limitHistoryTurns" {
				t.Fatalf("no adapter for %s", c.Function)
			}
			in, _ := vecMessages(t, c.Input["messages"])
			want, _ := vecMessages(t, c.Expected["messages"])
			var limit int // null means no limit
			_ = json.Unmarshal(c.Input["limit"], &limit)
			got := LimitHistoryTurns(in, limit)
			compareMessages(t, got, want, nil)
			if same, ok := expectBool(t, c.Expected, "sameReference"); ok && sameBacking(got, in) != same {
				t.Errorf("the input slice itself back: %v, want %v", sameBacking(got, in), same)
			}
			expectInt(t, c.Expected, "length", len(got))
			if raw, ok := c.Expected["roles"]; ok {
				var roles []llm.Role
				_ = json.Unmarshal(raw, &roles)
				var gotRoles []llm.Role
				for _, m := range got {
					gotRoles = append(gotRoles, m.Role)
				}
				if d := cmp.Diff(roles, gotRoles); d != "" {
					t.Errorf("roles (-want +got):\n%s", d)
				}
			}
			checkedKeys(t, c.Expected, "messages", "sameReference", "length", "roles")
		})
	}
}
