package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The chat offers the agent tools as agentloop run does: the scripted
// model starts a child, the child's bash call asks for approval naming
// its task, and the child's start and end are committed lines.
func TestE2EChatAgentForeground(t *testing.T) {
	script := fauxScript(t, `{"steps":[
		{"text":"Delegating.","toolCalls":[{"name":"agent","arguments":{"description":"make the file","prompt":"touch child-made"}}]},
		{"text":"On it.","toolCalls":[{"name":"bash","arguments":{"command":"touch child-made"}}]},
		{"text":"The child made it."},
		{"text":"All done."}]}`)
	c := startChat(t, "", "--script", script, "--approve", "ask")
	c.send("delegate it")
	// The agent call itself is the chat's run's: no task named.
	c.waitFor(10*time.Second, "the agent call's approval", func(s string) bool {
		return strings.Contains(s, "agent wants to run") && strings.Contains(s, "[y] allow once")
	})
	c.keys("y")
	s := c.waitFor(10*time.Second, "the child's approval", func(s string) bool {
		return strings.Contains(s, "$ touch child-made")
	})
	if !regexp.MustCompile(`subagent t_\w+ \(general\): bash wants to run`).MatchString(strings.Join(s, "\n")) {
		t.Errorf("the child's approval does not name its task:\n%s", strings.Join(s, "\n"))
	}
	c.keys("y")
	h := c.waitHistory(15*time.Second, "the end", func(s string) bool { return strings.Contains(s, "All done.") })
	for _, re := range []string{`⎿ agent t_\w+ \(general\) "make the file" started`,
		`⎿ agent t_\w+ \(general\) "make the file": completed in \S+, 2 turns`} {
		if !regexp.MustCompile(re).MatchString(h) {
			t.Errorf("no line matching %s:\n%s", re, h)
		}
	}
	if strings.Index(h, "started") > strings.Index(h, "completed in") {
		t.Errorf("the child's end before its start:\n%s", h)
	}
	c.quit()
	if _, err := os.Stat(filepath.Join(c.ws, "child-made")); err != nil {
		t.Errorf("the child's allowed call did not run: %v", err)
	}
}

// --no-agents: the model is not offered agent, and /agents says so.
func TestE2EChatNoAgents(t *testing.T) {
	capture := filepath.Join(t.TempDir(), "capture.jsonl")
	base := mockLLM(t, "-rounds", "0", "-text", "3", "-capture", capture)
	for _, tc := range []struct {
		flag  string
		agent bool
	}{{"--no-session=false", true}, {"--no-agents", false}} {
		c := startChat(t, mockModels, "--model", "openai/mock-model", "--base-url", base+"/v1", tc.flag)
		c.send("/agents")
		want := "no subagents running"
		if !tc.agent {
			want = "this chat offers no agent tool"
		}
		c.waitHistory(5*time.Second, want, func(s string) bool { return strings.Contains(s, want) })
		c.send("hi")
		c.waitHistory(10*time.Second, "the reply", func(s string) bool { return strings.Contains(s, "word word done") })
		c.quit()
		reqs := readLines(t, capture)
		if got := strings.Contains(reqs[len(reqs)-1], `"name":"agent"`); got != tc.agent {
			t.Errorf("%s: agent offered %v, want %v", tc.flag, got, tc.agent)
		}
	}
}

// A background child: /agents lists it while the chat is idle, /agents
// stop stops it, and its result reaches the idle session as a follow-up
// run whose reply the chat shows.
func TestE2EChatAgentBackgroundStop(t *testing.T) {
	capture := filepath.Join(t.TempDir(), "capture.jsonl")
	base := mockLLM(t, "-tool", "agent", "-args", `{"description":"slow survey","prompt":"look around","background":true}`,
		"-rounds", "1", "-text", "3", "-delay", "8s", "-capture", capture) // the child lives ~8 s: time for /agents on a loaded machine
	c := startChat(t, mockModels, "--model", "openai/mock-model", "--base-url", base+"/v1", "--approve", "auto")
	c.send("survey in the background")
	c.waitHistory(30*time.Second, "the parent's reply", func(s string) bool { return strings.Contains(s, "word word done") })
	c.send("/agents")
	h := c.waitHistory(5*time.Second, "the live child", func(s string) bool { return strings.Contains(s, "subagents running") })
	id := regexpFind(t, h, `\n  (t_\w+)  general  "slow survey"  running, background  `)
	c.send("/agents stop " + id)
	c.waitHistory(5*time.Second, "the stop", func(s string) bool { return strings.Contains(s, "stopped "+id+": cancelled") })
	h = c.waitHistory(30*time.Second, "the follow-up run's reply", func(s string) bool {
		return strings.Count(s, "word word done") >= 2
	})
	if !regexp.MustCompile(`⎿ agent ` + id + ` \(general, background\) "slow survey": cancelled`).MatchString(h) {
		t.Errorf("no end line of the stopped child:\n%s", h)
	}
	c.send("/agents")
	c.waitHistory(5*time.Second, "no live child", func(s string) bool { return strings.Contains(s, "no subagents running") })
	c.quit()
	reqs := readLines(t, capture)
	if !strings.Contains(reqs[len(reqs)-1], id) {
		t.Errorf("the follow-up run's request does not carry the stopped task's result: %.600s", reqs[len(reqs)-1])
	}
}
