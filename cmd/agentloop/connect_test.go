package main

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/agentloop/agentloop/cmd/agentloop/internal/tui"
)

// --connect reads the gateway's protocol v2 lines: the runner's golden
// run, decoded line by line and folded by the chat's model, shows what the
// in-process chat shows (the tool call, its result, the answer).
func TestConnectDecodesProtocolLines(t *testing.T) {
	f, err := os.Open("../../runner/testdata/run.golden.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var m tea.Model = tui.New(tui.Options{Backend: &gatewayBackend{}})
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for sc.Scan() {
		var w wireEvent
		if err := json.Unmarshal(sc.Bytes(), &w); err != nil {
			t.Fatalf("line %d: %v", n+1, err)
		}
		m, _ = m.Update(tui.EventMsg{Event: w.event()})
		n++
	}
	if n < 20 {
		t.Fatalf("only %d lines in the golden run", n)
	}
	got := ansi.Strip(strings.Join(m.(tui.Model).Committed(), "\n"))
	for _, want := range []string{"Checking <a> & <b>.", "● echo", `│ {"text":"x > f && y"}`, "Done: x > f && y."} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in what the chat committed:\n%s", want, got)
		}
	}
}
