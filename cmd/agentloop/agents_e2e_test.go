package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/subagent"
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

// A session a crash left with a background agent that never reported:
// `agentloop run -c` settles it first (interrupted, one result entry, one
// notification), and the model reads it before the new prompt.
func TestE2EContinueSettlesInterruptedAgent(t *testing.T) {
	capture := filepath.Join(t.TempDir(), "requests.jsonl")
	base := mockLLM(t, "-rounds", "0", "-text", "3", "-capture", capture)
	home, ws := t.TempDir(), t.TempDir()
	store := session.NewJSONLStore(filepath.Join(home, "sessions"))
	ctx := context.Background()
	sess, err := store.Create(ctx, session.CreateOptions{Cwd: ws})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []session.Entry{
		session.MessageEntry(llm.UserText("start a background agent")),
		session.CustomEntry(subagent.SpawnedType, []byte(`{"taskId":"t_000000000001","childSessionId":"gone","background":true,"agent":"general","description":"lost work","depth":1}`)),
		session.MessageEntry(llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text("started it")}, StopReason: llm.StopReasonStop}),
	} {
		if _, err := sess.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	id := sess.ID()
	sess.Close()
	for range 2 { // the second run settles nothing more
		code, out, errs := execCLI(t, []string{"OPENAI_API_KEY=sk-mock"}, home, "run", "--model", "openai/mock-model",
			"--base-url", base+"/v1", "--cwd", ws, "-c", "what became of it?")
		if code != 0 {
			t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
		}
	}
	tr, err := store.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	results, notes := 0, 0
	for _, e := range tr.Entries {
		if e.CustomType == subagent.ResultType {
			results++
			if !strings.Contains(string(e.Data), `"status":"interrupted"`) {
				t.Fatalf("settled result %s", e.Data)
			}
		}
		if e.Message != nil && strings.Contains(e.Message.Text(), `<task-notification task="t_000000000001" status="interrupted"`) {
			notes++
		}
	}
	if results != 1 || notes != 1 {
		t.Fatalf("%d result entries and %d notifications, want 1 and 1", results, notes)
	}
	reqs, _ := os.ReadFile(capture)
	first := strings.SplitN(string(reqs), "\n", 2)[0]
	if !strings.Contains(first, "task-notification") || !strings.Contains(first, "what became of it?") {
		t.Fatalf("the first request lacks the notification or the prompt: %.400s", first)
	}
}

// Issue 24, item 4: run --json with a background agent prints the task's
// subagent_end once, whether the result was steered into the run or
// delivered to the idle session (then before the follow-up run's events).
func TestE2EBackgroundAgentEndInJSON(t *testing.T) {
	base := mockLLM(t, "-tool", "agent", "-args", `{"description":"look later","prompt":"look","background":true}`, "-rounds", "1", "-text", "3")
	home, ws := t.TempDir(), t.TempDir()
	code, out, errs := execCLI(t, []string{"OPENAI_API_KEY=sk-mock"}, home, "run", "--json", "--model", "openai/mock-model",
		"--base-url", base+"/v1", "--cwd", ws, "start it")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	var types []string
	var start, end map[string]any
	for line := range strings.Lines(out) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %s", line)
		}
		typ, _ := m["type"].(string)
		types = append(types, typ)
		switch typ {
		case "subagent_start":
			start = m
		case "subagent_end":
			if end != nil {
				t.Fatalf("a second subagent_end: %s", line)
			}
			end = m
		}
	}
	if start == nil || end == nil || end["taskId"] != start["taskId"] || end["status"] != "completed" || end["background"] != true || end["sessionId"] == "" {
		t.Fatalf("subagent_start %v, subagent_end %v", start, end)
	}
	runStarts := 0
	for _, typ := range types {
		if typ == "run_start" {
			runStarts++
		}
	}
	t.Logf("%d runs (2: the result was delivered to the idle session)", runStarts)
}
