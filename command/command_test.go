package command

import "testing"

func TestParse(t *testing.T) {
	cases := []struct {
		line, name, args string
		ok, err          bool
	}{
		{line: "/compact keep the API decisions", name: "compact", args: "keep the API decisions", ok: true},
		{line: "  /model   openai/gpt-5  ", name: "model", args: "openai/gpt-5", ok: true},
		{line: "/quit", name: "quit", ok: true},
		{line: "/nosuch x", name: "nosuch", ok: true, err: true},
		{line: "/tmp/x is big", ok: false},
		{line: "//", ok: false},
		{line: "/", ok: false},
		{line: "hello /compact", ok: false},
	}
	for _, c := range cases {
		name, args, ok, err := Parse(c.line)
		if name != c.name || args != c.args || ok != c.ok || (err != nil) != c.err {
			t.Errorf("Parse(%q) = %q, %q, %v, %v; want %q, %q, %v, err %v", c.line, name, args, ok, err, c.name, c.args, c.ok, c.err)
		}
	}
}

func TestFaces(t *testing.T) {
	for _, name := range []string{Compact, Model, Thinking} {
		s, ok := Lookup(name)
		if !ok || !s.Offered(Gateway) || !s.Offered(ACP) || !s.Offered(Chat) {
			t.Errorf("%s must be offered on every face: %+v", name, s)
		}
	}
	if n := len(All(Gateway)); n != 3 {
		t.Errorf("the gateway offers %d commands, want compact, model and thinking", n)
	}
	if len(All(0)) != len(All(Chat)) {
		t.Errorf("every command is offered in the chat: %d of %d", len(All(Chat)), len(All(0)))
	}
	seen := map[string]bool{}
	for _, s := range All(0) {
		if seen[s.Name] {
			t.Errorf("%s is in the table twice", s.Name)
		}
		seen[s.Name] = true
	}
}
