package session

import (
	"strings"
	"testing"
)

func resultLine(id, parent, callID, text string) string {
	return `{"type":"message","id":"` + id + `","parentId":"` + parent + `","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"toolResult",` +
		`"toolCallId":"` + callID + `","toolName":"read","content":[{"type":"text","text":"` + text + `"}],"timestamp":1}}` + "\n"
}

func callLine(id, parent, callID string) string {
	return `{"type":"message","id":"` + id + `","parentId":"` + parent + `","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"assistant",` +
		`"content":[{"type":"toolCall","id":"` + callID + `","name":"read","arguments":{}}],"stopReason":"toolUse","timestamp":1}}` + "\n"
}

func truncLine(id, parent, target, callID, text string) string {
	t := ""
	if target != "" {
		t = `"targetId":"` + target + `",`
	}
	return `{"type":"tool_result_truncation","id":"` + id + `","parentId":"` + parent + `","timestamp":"2026-01-01T00:00:01.000Z",` + t +
		`"toolCallId":"` + callID + `","content":[{"type":"text","text":"` + text + `"}]}` + "\n"
}

// Issue 16.3: with ids repeated across turns, a truncation changes the one
// result it was made for: the one its TargetID names, or (a file written
// before TargetID) the latest result of its call id before it.
func TestTruncationOfARepeatedID(t *testing.T) {
	const id = "functions.read:0"
	base := []string{treeLine("u1", "", "user", "go"), callLine("a1", "u1", id), resultLine("r1", "a1", id, "first"),
		callLine("a2", "r1", id), resultLine("r2", "a2", id, "second")}
	tests := []struct {
		name  string
		trunc string
		want  string
	}{
		{"named result", truncLine("t1", "r2", "r1", id, "cut"), "cut|second"},
		{"latest before it", truncLine("t1", "r2", "", id, "cut"), "first|cut"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines := append(append([]string(nil), base...), tt.trunc, callLine("a3", "t1", id), resultLine("r3", "a3", id, "third"))
			tr, err := LoadFile(writeTree(t, lines...))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range tr.Context("").Messages {
				if m.ToolCallID != "" && m.Role == "toolResult" {
					got = append(got, m.Text())
				}
			}
			if s := strings.Join(got, "|"); s != tt.want+"|third" {
				t.Errorf("results %s, want %s|third", s, tt.want)
			}
		})
	}
}
