package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 24: the built CLI against mockllm's real wire. The scripted model
// calls agent; the child (a session of its own, on the subagent lane)
// works, its one line shows on stderr, and the parent's answer is on
// stdout. With --agent-depth 2 the child's own agent call starts a
// grandchild, whose result the child reports.
func TestE2EAgentToolRunsChild(t *testing.T) {
	for _, tc := range []struct {
		name    string
		depth   string
		headers int // child sessions written
	}{{"depth1", "1", 1}, {"depth2", "2", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			base := mockLLM(t, "-tool", "agent", "-args", `{"description":"survey the files","prompt":"list what is here"}`,
				"-rounds", "1", "-text", "3")
			home, ws := t.TempDir(), t.TempDir()
			code, out, errs := execCLI(t, []string{"OPENAI_API_KEY=sk-mock"}, home, "run", "--model", "openai/mock-model",
				"--base-url", base+"/v1", "--cwd", ws, "--agent-depth", tc.depth, "count the files")
			if code != 0 {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
			}
			if strings.TrimSpace(out) != "word word done" {
				t.Fatalf("stdout %q, want the parent's answer", out)
			}
			var lines []string
			for _, l := range strings.Split(errs, "\n") {
				if strings.Contains(l, "⎿ agent t_") {
					lines = append(lines, l)
				}
			}
			if len(lines) != 1 || !strings.Contains(lines[0], `(general) "survey the files": completed`) || !strings.Contains(lines[0], "word word done") {
				t.Fatalf("child lines %q in stderr:\n%s", lines, errs)
			}
			// The child's sessions: their headers name the parent, and the
			// child's work (its own calls and answer) is in its transcript.
			var children []map[string]any
			var parents int
			filepath.WalkDir(filepath.Join(home, "sessions"), func(p string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() || !strings.HasSuffix(p, ".jsonl") {
					return err
				}
				f, err := os.Open(p)
				if err != nil {
					return err
				}
				defer f.Close()
				sc := bufio.NewScanner(f)
				sc.Buffer(nil, 1<<20)
				sc.Scan()
				var h map[string]any
				json.Unmarshal(sc.Bytes(), &h)
				if h["taskId"] == nil {
					parents++
					return nil
				}
				var body strings.Builder
				for sc.Scan() {
					body.WriteString(sc.Text())
				}
				h["body"] = body.String()
				children = append(children, h)
				return nil
			})
			if parents != 1 || len(children) != tc.headers {
				t.Fatalf("%d parent and %d child sessions, want 1 and %d", parents, len(children), tc.headers)
			}
			for _, c := range children {
				if c["parentSessionId"] == "" || c["parentToolCallId"] == "" || c["agent"] != "general" {
					t.Fatalf("child header %v", c)
				}
				body := c["body"].(string)
				if !strings.Contains(body, `"toolName":"agent"`) || !strings.Contains(body, "word word done") {
					t.Fatalf("child transcript lacks its work: %s", body)
				}
				if c["depth"].(float64) == 2 && !strings.Contains(body, "Unknown tool") && !strings.Contains(body, "not found") && !strings.Contains(body, "unknown") {
					t.Fatalf("the grandchild was offered agent: %s", body)
				}
			}
		})
	}
}

// A background agent: the call returns at once, the CLI waits for the
// child, prints its one line, and the parent reads the result (a steer or
// a follow-up run, whichever the timing gives): exactly one result entry
// and one notification in the parent's transcript.
func TestE2EBackgroundAgentDelivered(t *testing.T) {
	base := mockLLM(t, "-tool", "agent", "-args", `{"description":"look later","prompt":"look","background":true}`, "-rounds", "1", "-text", "3")
	home, ws := t.TempDir(), t.TempDir()
	code, out, errs := execCLI(t, []string{"OPENAI_API_KEY=sk-mock"}, home, "run", "--model", "openai/mock-model",
		"--base-url", base+"/v1", "--cwd", ws, "start it")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	if n := strings.Count(out, "word word done"); n != 2 {
		t.Fatalf("stdout %q: want the parent's answer and its answer to the result", out)
	}
	if n := strings.Count(errs, `(general, background) "look later": completed`); n != 1 {
		t.Fatalf("%d background child lines in stderr:\n%s", n, errs)
	}
	var parent string
	filepath.WalkDir(filepath.Join(home, "sessions"), func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".jsonl") {
			b, _ := os.ReadFile(p)
			if !strings.Contains(strings.SplitN(string(b), "\n", 2)[0], `"taskId"`) {
				parent = string(b)
			}
		}
		return err
	})
	if strings.Count(parent, `"customType":"subagent_result"`) != 1 || strings.Count(parent, `\u003ctask-notification`)+strings.Count(parent, `<task-notification`) != 1 {
		t.Fatalf("parent transcript:\n%s", parent)
	}
}
