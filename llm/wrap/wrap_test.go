package wrap_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/jsonpartial"
	"github.com/agentloop/agentloop/llm/wrap"
)

// splits returns ways to stream s: whole, split in two at every rune
// boundary, and one rune per delta.
func splits(s string) [][]string {
	out := [][]string{{s}}
	for i := 1; i < len(s); i++ {
		if utf8.RuneStart(s[i]) {
			out = append(out, []string{s[:i], s[i:]})
		}
	}
	var runes []string
	for _, r := range s {
		runes = append(runes, string(r))
	}
	return append(out, runes)
}

func TestTextTransforms(t *testing.T) {
	rs := []wrap.Replace{{Old: "<|im_end|>", New: ""}, {Old: "&amp;", New: "&"}, {Old: "ß", New: "ss"}}
	tests := []struct{ in, want string }{
		{"plain text", "plain text"},
		{"fish &amp; chips<|im_end|>", "fish & chips"},
		{"Straße &am", "Strasse &am"},
		{"<|im_<|im_end|>", "<|im_"},
		{"&amp;&amp;<", "&&<"},
	}
	for _, tt := range tests {
		for _, chunks := range splits(tt.in) {
			t.Run(fmt.Sprintf("%q/%d", tt.in, len(chunks)), func(t *testing.T) {
				m := wrap.TextTransforms(rs...)(scripted{blocks: []blk{thinking("a &amp; b"), text(chunks...), call("c1", "read", `{"path":"&amp;"}`)}})
				o := run(t, m, nil)
				want := "thinking:a &amp; b | text:" + tt.want + ` | call:read{"path":"&amp;"} .toolUse`
				if got := shape(o.msg); got != want {
					t.Errorf("\n got %s\nwant %s", got, want)
				}
			})
		}
	}
	t.Run("no patterns is the model itself", func(t *testing.T) {
		m := scripted{}
		if got := wrap.TextTransforms(wrap.Replace{})(m); fmt.Sprint(got) != fmt.Sprint(m) {
			t.Errorf("got %v", got)
		}
	})
}

func TestRepairArguments(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a": 1}`, `{"a": 1}`},
		{"  {\"a\": 1}\n", `{"a": 1}`},
		{`{"a": [1, 2,], "b": {"c": 3,},}`, `{"a": [1, 2], "b": {"c": 3}}`},
		{`{'path': 'it\'s "here"'}`, `{"path": "it's \"here\""}`},
		{`{"ok": True, "no": False, "x": None}`, `{"ok": true, "no": false, "x": null}`},
		{`{path: "a", limit: 2}`, `{"path": "a", "limit": 2}`},
		{"```json\n{\"a\": 1,}\n```", `{"a": 1}`},
		{`"{\"path\": \"README.md\"}"`, `{"path": "README.md"}`},
		{`"{'path': 'a',}"`, `{"path": "a"}`},
		{`{"s": "a, }", "t": 'x,]'}`, `{"s": "a, }", "t": "x,]"}`},
		// Ambiguous or not an object: left alone.
		{`{"a": 1}}`, ``},
		{`{'it's': 1}`, ``},
		{`[1, 2]`, ``},
		{`hello`, ``},
		{`{"a": }`, ``},
		{`"just a string"`, ``},
		{`{"a": 1}{"b": 2}`, ``},
		{`{mode: fast}`, ``},
		{``, ``},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := wrap.RepairArguments(tt.in)
			if ok != (tt.want != "") || string(got) != tt.want {
				t.Errorf("got %s %v, want %s", got, ok, tt.want)
			}
			if ok && !json.Valid(got) {
				t.Errorf("repair %s is not JSON", got)
			}
		})
	}
}

func TestRepairLayer(t *testing.T) {
	tests := []struct {
		name   string
		s      scripted
		want   string
		checks func(t *testing.T, m *llm.Message)
	}{
		{"trailing comma repaired", scripted{blocks: []blk{call("c1", "read", `{"path": "a",`, `}`)}},
			`call:read{"path": "a"} .toolUse`, nil},
		{"unrepairable stays invalid", scripted{blocks: []blk{call("c1", "read", `{"path": "a`)}},
			`call:read"{\"path\": \"a" .toolUse`,
			func(t *testing.T, m *llm.Message) {
				if !jsonpartial.IsInvalid(m.Content[0].Arguments) {
					t.Errorf("arguments %s not marked invalid", m.Content[0].Arguments)
				}
			}},
		{"empty name dropped, indexes stay dense", scripted{blocks: []blk{text("Hi"), call("c1", "  ", `{"a":1}`), call("c2", "bash", `{"command":"ls"}`), text("bye")}},
			`text:Hi | call:bash{"command":"ls"} | text:bye .toolUse`, nil},
		{"only call dropped: stop", scripted{blocks: []blk{text("Hi"), call("c1", "", `{}`)}},
			`text:Hi .stop`, nil},
		{"name arriving with the first delta", scripted{blocks: []blk{{typ: llm.ContentToolCall, id: "c1", name: "read", lateName: true, chunks: []string{`{"path":`, ` "x"}`}}}},
			`call:read{"path": "x"} .toolUse`, nil},
		{"valid call untouched", scripted{blocks: []blk{thinking("hm"), call("c1", "read", `{"path": "a"}`)}},
			`thinking:hm | call:read{"path": "a"} .toolUse`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := run(t, wrap.RepairToolCalls()(tt.s), nil)
			if got := shape(o.msg); got != tt.want {
				t.Errorf("\n got %s\nwant %s", got, tt.want)
			}
			if tt.checks != nil {
				tt.checks(t, o.msg)
			}
		})
	}
}

func TestPromote(t *testing.T) {
	tests := []struct {
		name string
		text string
		want string // shape of the message; CALL stands for any promoted id
	}{
		{"hermes tag", `Let me read it.<tool_call>{"name": "read", "arguments": {"path": "a.go"}}</tool_call>`,
			`text:Let me read it. | call:read{"path": "a.go"} .toolUse`},
		{"hermes tag, two calls and prose after", "<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\n</tool_call>\n<tool_call>{\"name\": \"bash\", \"parameters\": {\"command\": \"ls\"}}</tool_call>\nDone.",
			`call:read{"path": "a"} | call:bash{"command": "ls"} | text:` + "\nDone. .toolUse"},
		{"unterminated tag at the end", `<tool_call>{"name": "read", "arguments": "{\"path\": \"b\"}"}`,
			`call:read{"path": "b"} .toolUse`},
		{"llama function tag", `<function=bash>{"command": "pwd"}</function>`,
			`call:bash{"command": "pwd"} .toolUse`},
		{"mistral", `[TOOL_CALLS][{"name": "read", "arguments": {"path": "x"}}, {"name": "bash", "arguments": {"command": "id"}}]`,
			`call:read{"path": "x"} | call:bash{"command": "id"} .toolUse`},
		{"fenced object", "I'll run:\n```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"make\"}}\n```\n",
			"text:I'll run:\n | call:bash{\"command\": \"make\"} .toolUse"},
		{"bare object", ` {"name": "read", "arguments": {"path": "go.mod"}}`,
			`call:read{"path": "go.mod"} .toolUse`},
		{"openai shape", `<tool_call>{"type": "function", "function": {"name": "read", "arguments": "{\"path\": \"z\"}"}}</tool_call>`,
			`call:read{"path": "z"} .toolUse`},
		{"name matched loosely", `<tool_call>{"name": "functions.Read", "arguments": {}}</tool_call>`,
			`call:read{} .toolUse`},
		{"tagged call with broken JSON is an invalid call", `<tool_call>{"name": "read", "arguments": {"path": "a",}}</tool_call>`,
			`call:read"{\"name\": \"read\", \"arguments\": {\"path\": \"a\",}}" .toolUse`},
		// Left as text.
		{"unknown tool", `<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>`,
			`text:<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call> .stop`},
		{"prose mentioning the tag", `Models write <tool_call> tags; we parse them.`,
			`text:Models write <tool_call> tags; we parse them. .stop`},
		{"go code fence", "Here:\n```go\nfmt.Println(\"{}\")\n```\nok",
			"text:Here:\n```go\nfmt.Println(\"{}\")\n```\nok .stop"},
		{"fenced JSON without arguments", "```json\n{\"name\": \"read\", \"path\": \"a\"}\n```",
			"text:```json\n{\"name\": \"read\", \"path\": \"a\"}\n``` .stop"},
		{"fenced JSON that is invalid", "```json\n{\"name\": \"read\", \"arguments\": {},}\n```",
			"text:```json\n{\"name\": \"read\", \"arguments\": {},}\n``` .stop"},
		{"bare JSON answer", `{"status": "ok", "count": 3}`,
			`text:{"status": "ok", "count": 3} .stop`},
		{"JSON after prose is not bare", `Result: {"name": "read", "arguments": {}}`,
			`text:Result: {"name": "read", "arguments": {}} .stop`},
	}
	for _, tt := range tests {
		for _, chunks := range splits(tt.text) {
			if len(chunks) > 2 && len(tt.text) > 200 {
				continue
			}
			t.Run(fmt.Sprintf("%s/%d", tt.name, len(chunks)), func(t *testing.T) {
				m := wrap.PromoteTextToolCalls()(scripted{blocks: []blk{text(chunks...)}})
				o := run(t, m, nil)
				if got := shape(o.msg); got != tt.want {
					t.Fatalf("\n got %s\nwant %s", got, tt.want)
				}
				seen := map[string]bool{}
				for _, c := range o.msg.ToolCalls() {
					if c.ID == "" || seen[c.ID] {
						t.Errorf("call id %q", c.ID)
					}
					seen[c.ID] = true
				}
			})
		}
	}
}

func TestPromoteStreamsPlainText(t *testing.T) {
	// Text with no marker in sight is passed on delta by delta, not held.
	m := wrap.PromoteTextToolCalls()(scripted{blocks: []blk{text("Hello", ", world", ". <tool", "_call> is a tag.")}})
	o := run(t, m, nil)
	want := "start text_start text_delta text_delta text_delta text_delta text_end done"
	if got := strings.Join(o.types, " "); got != want {
		t.Errorf("events\n got %s\nwant %s", got, want)
	}
}

func TestPromoteOther(t *testing.T) {
	t.Run("no tools offered", func(t *testing.T) {
		m := wrap.PromoteTextToolCalls()(scripted{blocks: []blk{text(`<tool_call>{"name": "read", "arguments": {}}</tool_call>`)}})
		o := run(t, m, &llm.Request{})
		if o.msg.StopReason != llm.StopReasonStop || len(o.msg.ToolCalls()) != 0 {
			t.Errorf("%s", shape(o.msg))
		}
	})
	t.Run("failed stream keeps held text as text", func(t *testing.T) {
		m := wrap.PromoteTextToolCalls()(scripted{blocks: []blk{text(`Hi <tool_call>{"name": "read", "arguments": {}}</tool_call>`)}, fail: errBoom})
		o := run(t, m, nil)
		if !errors.Is(o.err, errBoom) || o.msg.StopReason != llm.StopReasonError {
			t.Fatalf("err %v stop %q", o.err, o.msg.StopReason)
		}
	})
	t.Run("bare error passes", func(t *testing.T) {
		o := run(t, wrap.PromoteTextToolCalls()(scripted{bare: errBoom}), nil)
		if !errors.Is(o.err, errBoom) || o.msg != nil {
			t.Fatalf("%+v", o)
		}
	})
	t.Run("length stays length", func(t *testing.T) {
		m := wrap.PromoteTextToolCalls()(scripted{blocks: []blk{text(`<tool_call>{"name": "read", "arguments": {}}</tool_call>`)}, reason: llm.StopReasonLength})
		if o := run(t, m, nil); o.msg.StopReason != llm.StopReasonLength {
			t.Errorf("stop %q", o.msg.StopReason)
		}
	})
	t.Run("consumer break stops the inner stream", func(t *testing.T) {
		m := wrap.Wrap(scripted{blocks: []blk{text("a", "b", "c"), call("c1", "read", "{}")}}, wrap.Config{Repair: true, Promote: true, Normalize: true, Text: []wrap.Replace{{Old: "x", New: "y"}}})
		n := 0
		for range m.Stream(t.Context(), toolsRequest()) {
			n++
			if n == 3 {
				break
			}
		}
		if n != 3 {
			t.Errorf("%d events", n)
		}
	})
}

func TestMatchToolName(t *testing.T) {
	offered := []string{"read", "Read_File", "bash", "mcp.search", "dup", "DUP"}
	tests := []struct {
		name, want string
		ok         bool
	}{
		{"read", "read", true},
		{" read\n", "read", true},
		{"READ", "read", true},
		{"functions.read", "read", true},
		{"default_api:bash", "bash", true},
		{"Functions.default_api:BASH", "bash", true},
		{"read_file", "Read_File", true},
		{"mcp.search", "mcp.search", true},
		{"tools.mcp.search", "mcp.search", true},
		{"dup", "dup", true},
		{"Dup", "", false},
		{"write", "", false},
		{"functions.", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := wrap.MatchToolName(tt.name, offered)
			if got != tt.want || ok != tt.ok {
				t.Errorf("got %q %v, want %q %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestNormalizeLayer(t *testing.T) {
	s := scripted{blocks: []blk{text("x"), call("c1", " functions.read ", `{"path":`, `"a"}`), call("c2", "Bash", "{}"), call("c3", "unknown", "{}")}}
	o := run(t, wrap.NormalizeToolNames()(s), nil)
	want := `text:x | call:read{"path":"a"} | call:bash{} | call:unknown{} .toolUse`
	if got := shape(o.msg); got != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
	t.Run("open call of a failed stream", func(t *testing.T) {
		s := scripted{blocks: []blk{call("c1", "READ", `{"path": "a`)}, fail: errBoom}
		o := run(t, wrap.NormalizeToolNames()(s), nil)
		if c := o.msg.Content[0]; c.Name != "read" {
			t.Errorf("final call %+v", c)
		}
	})
}

// The order test: repair (sanitising) must run before promotion. A call
// written as text with broken arguments is promoted with its arguments
// marked invalid, so it is answered with an error and never run. Were
// repair outside promotion, it would turn that text into a call that runs.
func TestLayerOrder(t *testing.T) {
	sloppy := `<function=bash>{"command": "rm -rf build",}</function>`
	s := scripted{blocks: []blk{
		// Layer 1 decodes the entities before layer 3 looks for calls.
		text(strings.ReplaceAll(sloppy, `"`, "&quot;")),
		call("c1", " default_api:read ", `{"path": "a",}`), // a real call: repaired, renamed
		call("c2", "", `{}`),                               // a real call without a name: dropped
	}}
	cfg := wrap.Config{Text: []wrap.Replace{{Old: "&quot;", New: `"`}}, Repair: true, Promote: true, Normalize: true}
	o := run(t, wrap.Wrap(s, cfg), nil)
	calls := o.msg.ToolCalls()
	if len(calls) != 2 {
		t.Fatalf("calls: %s", shape(o.msg))
	}
	if calls[0].Name != "bash" || !jsonpartial.IsInvalid(calls[0].Arguments) {
		t.Errorf("promoted call %s %s: want bash with invalid arguments", calls[0].Name, calls[0].Arguments)
	}
	if calls[1].Name != "read" || string(calls[1].Arguments) != `{"path": "a"}` {
		t.Errorf("real call %s %s: want read, repaired", calls[1].Name, calls[1].Arguments)
	}

	// The wrong order, for contrast: the sloppy text becomes a legal call.
	wrong := wrap.Chain(wrap.PromoteTextToolCalls(), wrap.RepairToolCalls())(scripted{blocks: []blk{text(sloppy)}})
	w := run(t, wrong, nil)
	if c := w.msg.ToolCalls(); len(c) != 1 || jsonpartial.IsInvalid(c[0].Arguments) {
		t.Fatalf("the contrast no longer holds: %s", shape(w.msg))
	}

	// Layers() lists them innermost first, as documented.
	if n := len(cfg.Layers()); n != 4 {
		t.Errorf("%d layers", n)
	}
}

func TestFor(t *testing.T) {
	tests := []struct {
		provider string
		api      llm.API
		want     wrap.Config
	}{
		{"anthropic", llm.APIAnthropicMessages, wrap.Config{Repair: true, Normalize: true}},
		{"openai", llm.APIOpenAICompletions, wrap.Config{Repair: true, Normalize: true}},
		{"google", llm.APIGoogleGenerativeAI, wrap.Config{Repair: true, Normalize: true}},
		{"ollama", llm.APIOpenAICompletions, wrap.Config{Repair: true, Promote: true, Normalize: true}},
		{"openrouter", llm.APIOpenAICompletions, wrap.Config{Repair: true, Promote: true, Normalize: true}},
	}
	for _, tt := range tests {
		if got := wrap.For(tt.provider, tt.api); fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%s: %+v, want %+v", tt.provider, got, tt.want)
		}
	}
	var c wrap.Config
	if err := json.Unmarshal([]byte(`{"text":[{"old":"a","new":"b"}],"promote":true}`), &c); err != nil || !c.Promote || c.Text[0].New != "b" {
		t.Errorf("config from JSON: %+v %v", c, err)
	}
}
