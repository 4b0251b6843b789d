package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Issue 26 item 5: agentloop chat --connect drives a gateway with the same
// model code: the reply streams from its SSE stream, an approval shows
// inline and y answers it over REST, Esc aborts the gateway's run.
func TestE2EChatConnect(t *testing.T) {
	home := t.TempDir()
	script := fauxScript(t, `{"steps":[
		{"text":"Making it.","toolCalls":[{"name":"bash","arguments":{"command":"touch via-gateway"}}]},
		{"text":"Made over the gateway."},
		{"text":"`+strings.Repeat("slow words ", 2000)+`","delayMs":20}]}`)
	sc := startServe(t, t.TempDir(), home, nil, "--script", script, "--approve", "ask")
	c := startChat(t, "", "--connect", sc.url)
	c.send("make the file")
	c.waitFor(10*time.Second, "the approval", func(s string) bool {
		return strings.Contains(s, "$ touch via-gateway") && strings.Contains(s, "[y] allow once")
	})
	c.keys("y")
	c.waitHistory(10*time.Second, "the reply", func(s string) bool { return strings.Contains(s, "Made over the gateway.") })
	if _, err := os.Stat(filepath.Join(c.ws, "via-gateway")); err != nil {
		t.Errorf("the call allowed with y did not run in the session's directory: %v", err)
	}
	c.send("talk slowly")
	c.waitFor(10*time.Second, "streaming text", func(s string) bool { return strings.Contains(s, "slow words slow") })
	c.keys("Escape")
	c.waitHistory(5*time.Second, "the abort", func(s string) bool { return strings.Contains(s, "✗ aborted") })
	h := c.quit()
	for _, want := range []string{"› make the file", "✓ allowed bash once", "● bash touch via-gateway"} {
		if !strings.Contains(h, want) {
			t.Errorf("no %q:\n%s", want, h)
		}
	}
	joined := c.tmux("capture-pane", "-p", "-J", "-S", "-3000") // the line is wider than the pane
	if !strings.Contains(joined, "agentloop chat --connect "+sc.url+" -r ") {
		t.Errorf("the chat did not say how to continue the gateway's session:\n%s", joined)
	}
}
