package llm

import (
	"encoding/json"
	"strings"
	"testing"
)

// Code and markup in messages are written as they are, at every level of
// nesting, as JavaScript's JSON.stringify writes them.
func TestMarshalJSONKeepsMarkup(t *testing.T) {
	m := Message{Role: RoleAssistant, Content: []Content{Text("if a < b && c > d { <b>x</b> }")},
		Extra: map[string]json.RawMessage{"note": json.RawMessage(`"<i>"`)}}
	ev := Event{Type: EventDone, Message: &m}
	for name, v := range map[string]any{"message": m, "event": ev} {
		b, err := MarshalJSON(v)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if strings.Contains(s, `\u003c`) || strings.Contains(s, `\u0026`) || !strings.Contains(s, "a < b && c > d") || !strings.Contains(s, `"note":"<i>"`) {
			t.Errorf("%s: %s", name, s)
		}
		var back map[string]any
		if err := json.Unmarshal(b, &back); err != nil {
			t.Errorf("%s: not JSON: %v", name, err)
		}
	}
}
