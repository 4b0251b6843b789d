package gateway

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
)

// /model and /thinking change what the session's next runs are prepared
// with; an unknown command and a chat-only one are refused.
func TestModelAndThinkingCommands(t *testing.T) {
	var mu sync.Mutex
	var seen []RunSettings
	tsv := newTestServer(t, []faux.Step{faux.Say("one"), faux.Say("two")}, func(c *Config, _ *testServer) {
		prep := c.Prepare
		c.Prepare = func(ctx context.Context, rs RunSettings) (runner.Request, error) {
			mu.Lock()
			seen = append(seen, rs)
			mu.Unlock()
			return prep(ctx, rs)
		}
	})
	sess := tsv.newSession()
	tsv.runToIdle(sess.ID, "go", "a")
	var res CommandResult
	if code := tsv.do("POST", "/v1/sessions/"+sess.ID+"/command", CommandRequest{Name: "model", Args: "faux/other"}, &res); code != 200 || res.Session.Model != "faux/other" {
		t.Fatalf("model: %d %+v", code, res)
	}
	if code := tsv.do("POST", "/v1/sessions/"+sess.ID+"/command", CommandRequest{Name: "/thinking", Args: "high"}, &res); code != 200 || res.Session.Thinking != "high" {
		t.Fatalf("thinking: %d %+v", code, res)
	}
	tsv.runToIdle(sess.ID, "go", "b")
	mu.Lock()
	last := seen[len(seen)-1]
	mu.Unlock()
	if last.Model != "faux/other" || last.Thinking != "high" || last.SessionID != sess.ID || last.Cwd != tsv.cwd {
		t.Fatalf("the second run was prepared with %+v", last)
	}
	for _, c := range []CommandRequest{{Name: "thinking", Args: "loud"}, {Name: "nope"}, {Name: "quit"}} {
		var e wireError
		if code := tsv.do("POST", "/v1/sessions/"+sess.ID+"/command", c, &e); code != http.StatusBadRequest {
			t.Errorf("%+v: %d %+v", c, code, e)
		}
	}
}

// /compact summarises the session with the model of its runs and appends
// a compaction entry; it is refused while a run is active.
func TestCompactCommand(t *testing.T) {
	long := strings.Repeat("a long answer that fills the window. ", 200)
	tsv := newTestServer(t, []faux.Step{faux.Say(long), faux.Say(long), faux.Say(long), faux.Say(long), faux.Say("SUMMARY of it all")})
	tsv.model.Info.ContextWindow = 16000 // the least the runner takes: 4,000 tokens kept verbatim
	sess := tsv.newSession()
	for _, k := range []string{"a", "b", "c", "d"} {
		tsv.runToIdle(sess.ID, "tell me more", k)
	}
	var res CommandResult
	if code := tsv.do("POST", "/v1/sessions/"+sess.ID+"/command", CommandRequest{Name: "compact", Args: "keep the gist"}, &res); code != 200 || !strings.HasPrefix(res.Text, "compacted:") {
		t.Fatalf("compact: %d %+v", code, res)
	}
	tr, err := tsv.store.Load(context.Background(), sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, en := range tr.Entries {
		if en.Type == session.EntryCompaction && strings.Contains(en.Summary, "SUMMARY") {
			found = true
		}
	}
	if !found {
		t.Fatal("no compaction entry with the summary")
	}
}
