package wrap_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm/wrap"
)

// FuzzRepairArguments: a repair never panics and is always one JSON
// object.
func FuzzRepairArguments(f *testing.F) {
	for _, s := range []string{`{"a": 1,}`, `{'a': 'b'}`, `"{\"a\":1}"`, "```json\n{a: True}\n```", `{"a": "\`, `{'`, `{a:`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, ok := wrap.RepairArguments(s)
		if !ok {
			return
		}
		var v map[string]any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("repair of %q is %q: %v", s, out, err)
		}
	})
}

// FuzzWrap streams arbitrary text, split at arbitrary points, through
// every layer: the wrapped stream must stay consistent (run checks the
// events), and with nothing promoted the text must come out whole.
func FuzzWrap(f *testing.F) {
	f.Add(`Hi <tool_call>{"name": "read", "arguments": {"path": "a"}}</tool_call> bye`, uint16(7))
	f.Add("```json\n{\"name\": \"bash\", \"arguments\": {}}\n```", uint16(3))
	f.Add(`<function=read>{"path": 1,}</function>[TOOL_CALLS][{"name":"bash"}]`, uint16(11))
	f.Add(` {"name": "read", "arguments": {}}`, uint16(1))
	f.Add("&quot;<tool_<|im_end|>", uint16(2))
	f.Fuzz(func(t *testing.T, s string, cut uint16) {
		var chunks []string
		step := int(cut%17) + 1
		for i := 0; i < len(s); i += step {
			chunks = append(chunks, s[i:min(len(s), i+step)])
		}
		cfg := wrap.Config{Text: []wrap.Replace{{Old: "&quot;", New: `"`}, {Old: "<|im_end|>", New: ""}}, Repair: true, Promote: true, Normalize: true}
		o := run(t, wrap.Wrap(scripted{blocks: []blk{text(chunks...), call("c1", "READ", `{"a": 1,}`)}}, cfg), nil)
		if len(o.msg.ToolCalls()) == 1 {
			want := strings.NewReplacer("&quot;", `"`, "<|im_end|>", "").Replace(s)
			if got := o.msg.Text(); got != want {
				t.Fatalf("text %q, want %q", got, want)
			}
		}
	})
}
