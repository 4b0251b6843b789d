package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sessionEvents follows a session's SSE stream (GET
// /v1/sessions/{id}/events) until stop says it has seen enough, or the
// deadline; it returns the data of each message.
func (sc *servedCLI) sessionEvents(t *testing.T, sessionID string, start func(), stop func([]map[string]any) bool) []map[string]any {
	t.Helper()
	req, _ := http.NewRequest("GET", sc.url+"/v1/sessions/"+sessionID+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("session events: %d", resp.StatusCode)
	}
	msgs := make(chan map[string]any, 1024)
	go func() {
		defer close(msgs)
		rd := bufio.NewScanner(resp.Body)
		rd.Buffer(make([]byte, 1<<20), 16<<20)
		for rd.Scan() {
			if d, ok := strings.CutPrefix(rd.Text(), "data: "); ok {
				var m map[string]any
				if json.Unmarshal([]byte(d), &m) == nil {
					msgs <- m
				}
			}
		}
	}()
	defer func() {
		resp.Body.Close()
		for range msgs {
		}
	}()
	start()
	var out []map[string]any
	deadline := time.After(30 * time.Second)
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				t.Fatalf("the stream ended after %d events", len(out))
			}
			out = append(out, m)
			if stop(out) {
				return out
			}
		case <-deadline:
			b, _ := json.Marshal(out)
			t.Fatalf("timed out; events so far: %s\nserver stderr: %s", b, sc.stderr)
		}
	}
}

// idleAfterEnd reports whether the events hold a subagent_end followed by
// the session going idle.
func idleAfterEnd(evs []map[string]any) bool {
	seenEnd := false
	for _, m := range evs {
		if m["type"] == "subagent_end" {
			seenEnd = true
		}
		if seenEnd && m["type"] == "session_status" && m["status"] == "idle" {
			return true
		}
	}
	return false
}

// Issue 24 on agentloop serve, against mockllm's real wire: the model of a
// gateway session calls agent; the session's stream shows the child's
// subagent_start and subagent_end (named by its task), the child is a
// session of its own naming its parent, and the parent answers. In the
// background, the result reaches the session (steered into its run or as
// a follow-up run of the gateway, whichever the timing gives): one
// subagent_end on the stream, one result entry and one notification in the
// transcript, and the session answers it.
func TestServeAgentTool(t *testing.T) {
	for _, tc := range []struct {
		name       string
		background bool
	}{{"foreground", false}, {"background", true}} {
		t.Run(tc.name, func(t *testing.T) {
			home, ws := t.TempDir(), t.TempDir()
			args := `{"description":"survey the files","prompt":"list what is here"}`
			if tc.background {
				args = `{"description":"survey the files","prompt":"list what is here","background":true}`
			}
			base := mockLLM(t, "-tool", "agent", "-args", args, "-rounds", "1", "-text", "3")
			sc := startServe(t, ws, home, []string{"OPENAI_API_KEY=sk-mock"}, "--model", "openai/mock-model", "--base-url", base+"/v1")
			var sess struct{ ID string }
			if st := sc.call(t, "POST", "/v1/sessions", "", map[string]any{"cwd": ws}, &sess); st != 201 {
				t.Fatalf("create session: %d", st)
			}
			evs := sc.sessionEvents(t, sess.ID, func() {
				var run struct{ RunID string }
				if st := sc.call(t, "POST", "/v1/sessions/"+sess.ID+"/runs", "", map[string]any{"input": "count the files", "idempotencyKey": "k1"}, &run); st != 202 {
					t.Errorf("start run: %d", st)
				}
			}, idleAfterEnd)
			var starts, ends []map[string]any
			answers, runs := 0, 0
			for _, m := range evs {
				switch m["type"] {
				case "run_start":
					runs++
				case "subagent_start":
					starts = append(starts, m)
				case "subagent_end":
					ends = append(ends, m)
				case "message_end":
					if msg, _ := m["message"].(map[string]any); msg["role"] == "assistant" && strings.Contains(toJSON(msg["content"]), "word word done") {
						answers++
					}
				}
			}
			if len(starts) != 1 || len(ends) != 1 || starts[0]["taskId"] == nil || ends[0]["taskId"] != starts[0]["taskId"] ||
				ends[0]["status"] != "completed" || (ends[0]["background"] == true) != tc.background {
				t.Fatalf("subagent_start %v, subagent_end %v", starts, ends)
			}
			wantAnswers := 1
			if tc.background {
				wantAnswers = 2 // the run's, and the answer to the result
			}
			t.Logf("%d runs on the session's stream (2: a follow-up run read the result)", runs)
			if answers != wantAnswers {
				t.Fatalf("%d answers of the parent on the stream, want %d", answers, wantAnswers)
			}
			// The child's session names its parent; the parent's
			// transcript has one result (and, in the background, one
			// notification).
			var parent, child string
			filepath.WalkDir(filepath.Join(home, "sessions"), func(p string, d os.DirEntry, err error) error {
				if err == nil && strings.HasSuffix(p, ".jsonl") {
					b, _ := os.ReadFile(p)
					if head := strings.SplitN(string(b), "\n", 2)[0]; strings.Contains(head, `"taskId"`) {
						child = head
					} else {
						parent = string(b)
					}
				}
				return err
			})
			if !strings.Contains(child, `"parentSessionId":"`+sess.ID+`"`) || !strings.Contains(child, starts[0]["taskId"].(string)) {
				t.Fatalf("child header %s", child)
			}
			notes := strings.Count(parent, `\u003ctask-notification`) + strings.Count(parent, `<task-notification`)
			wantNotes := 0
			if tc.background {
				wantNotes = 1
			}
			if strings.Count(parent, `"customType":"subagent_result"`) != 1 || notes != wantNotes {
				t.Fatalf("parent transcript:\n%s", parent)
			}
		})
	}
}

func toJSON(v any) string { b, _ := json.Marshal(v); return string(b) }
