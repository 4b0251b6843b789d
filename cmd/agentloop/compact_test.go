package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
)

// longSession stores a session of n turns of about 1,000 tokens each for
// cwd and returns its id.
func longSession(t *testing.T, home, cwd string, n int) string {
	t.Helper()
	st := session.NewJSONLStore(filepath.Join(home, "sessions"))
	s, err := st.Create(t.Context(), session.CreateOptions{Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		u := llm.UserText("question " + string(rune('A'+i%26)) + " " + strings.Repeat("u", 400))
		a := llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text(strings.Repeat("a", 3_600))},
			StopReason: llm.StopReasonStop, Provider: "faux", Model: "faux-1"}
		for _, m := range []llm.Message{u, a} {
			if _, err := s.Append(t.Context(), session.MessageEntry(m)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return s.ID()
}

// summaryScript is a faux summariser on a 32,000-token window.
func summaryScript(t *testing.T, dir string) string {
	return writeFile(t, filepath.Join(dir, "summary.json"),
		`{"model": {"id": "sum", "contextWindow": 32000}, "repeat": true, "steps": [{"text": "## Goal\nShip the ZEBRA report"}]}`)
}

func TestCompactCommand(t *testing.T) {
	home, ws, tmp := t.TempDir(), t.TempDir(), t.TempDir()
	id := longSession(t, home, ws, 40)
	script := summaryScript(t, tmp)
	pre, post := filepath.Join(tmp, "pre.json"), filepath.Join(tmp, "post.json")
	settings, _ := json.Marshal(map[string]any{"hooks": map[string]any{
		"PreCompact":  []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": "cat > " + pre}}}},
		"PostCompact": []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": "cat > " + post}}}},
	}})
	writeFile(t, filepath.Join(home, "settings.json"), string(settings))

	env, out, errb := testEnv(home, "")
	code := execute(t.Context(), env, []string{"compact", "--cwd", ws, "--model", "faux/sum", "--script", script, "keep the API decisions"})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if got := out.String(); !strings.Contains(got, "compacted session "+id) || !strings.Contains(got, "tokens before") {
		t.Errorf("stdout: %q", got)
	}

	// The session gained one compaction entry, and nothing else changed.
	st := session.NewJSONLStore(filepath.Join(home, "sessions"))
	tr, err := st.Load(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	var comps []session.Entry
	for _, e := range tr.Entries {
		if e.Type == session.EntryCompaction {
			comps = append(comps, e)
		}
	}
	if len(tr.Entries) != 81 || len(comps) != 1 || !strings.Contains(comps[0].Summary, "ZEBRA report") || comps[0].FirstKeptEntryID == "" {
		t.Fatalf("%d entries, compactions %+v", len(tr.Entries), comps)
	}

	// The shell hooks saw a manual compaction with the instructions.
	var in struct {
		Event        string `json:"hook_event_name"`
		Trigger      string `json:"trigger"`
		Instructions string `json:"custom_instructions"`
		Summary      string `json:"compact_summary"`
	}
	data, err := os.ReadFile(pre)
	if err != nil {
		t.Fatalf("PreCompact did not run: %v", err)
	}
	if err := json.Unmarshal(data, &in); err != nil || in.Event != "PreCompact" || in.Trigger != "manual" || in.Instructions != "keep the API decisions" {
		t.Errorf("PreCompact input %s (%v)", data, err)
	}
	data, _ = os.ReadFile(post)
	if err := json.Unmarshal(data, &in); err != nil || in.Event != "PostCompact" || !strings.Contains(in.Summary, "ZEBRA report") {
		t.Errorf("PostCompact input %s (%v)", data, err)
	}

	// sessions show renders the summary.
	out.Reset()
	if code := execute(t.Context(), env, []string{"sessions", "show", id}); code != 0 || !strings.Contains(out.String(), "ZEBRA report") {
		t.Errorf("sessions show: exit %d\n%s", code, out.String())
	}

	// A resumed run starts from the summary and the recent messages.
	model := faux.New(faux.Say("ok"))
	r, err := runner.New(runner.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	res, err := r.Run(context.Background(), runner.Request{Prompt: "go on", Model: model, Info: model.ModelInfo(),
		Session: runner.SessionSpec{ID: id}})
	if err != nil || res.Reason != runner.ReasonStop {
		t.Fatalf("resumed run: %v %+v", err, res)
	}
	reqs := model.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	msgs := reqs[0].Messages
	if !strings.HasPrefix(msgs[0].Text(), llm.SummaryPrefix) || !strings.Contains(msgs[0].Text(), "ZEBRA report") {
		t.Errorf("the resumed run does not start from the summary: %.80q", msgs[0].Text())
	}
	if len(msgs) >= 80 {
		t.Errorf("the resumed run sent %d messages; the compaction should have left far fewer", len(msgs))
	}
}

func TestCompactCommandRefusals(t *testing.T) {
	home, ws, tmp := t.TempDir(), t.TempDir(), t.TempDir()
	script := summaryScript(t, tmp)
	env, out, errb := testEnv(home, "")
	run := func(args ...string) int {
		out.Reset()
		errb.Reset()
		return execute(t.Context(), env, append([]string{"compact", "--model", "faux/sum", "--script", script}, args...))
	}

	if code := run("--cwd", ws); code != exitUsage || !strings.Contains(errb.String(), "no session for") {
		t.Errorf("no session: exit %d: %s", code, errb.String())
	}

	short, _ := storedSession(t, home, t.TempDir())
	if code := run("--session", short); code != 0 || !strings.Contains(out.String(), "nothing to compact") {
		t.Errorf("short session: exit %d: %s%s", code, out.String(), errb.String())
	}

	// A session a run is writing is refused with the lock's message, and
	// left as it was.
	id := longSession(t, home, ws, 40)
	st := session.NewJSONLStore(filepath.Join(home, "sessions"))
	held, err := st.Open(t.Context(), id, nil)
	if err != nil {
		t.Fatal(err)
	}
	code := run("--cwd", ws)
	held.Close()
	if code != exitFailed || !strings.Contains(errb.String(), "is in use by") {
		t.Errorf("locked session: exit %d: %s", code, errb.String())
	}
	tr, err := st.Load(t.Context(), id)
	if err != nil || len(tr.Entries) != 80 {
		t.Errorf("the locked session changed: %d entries, %v", len(tr.Entries), err)
	}

	// Without --model the session's own model is used: faux/faux-1 is no
	// built-in script, which is a usage error naming it.
	errb.Reset()
	if code := execute(t.Context(), env, []string{"compact", "--cwd", ws}); code != exitUsage || !strings.Contains(errb.String(), "faux/faux-1") {
		t.Errorf("default model: exit %d: %s", code, errb.String())
	}

	// A summariser that always fails: history is dropped without a
	// summary, and the command says so.
	bad := writeFile(t, filepath.Join(tmp, "bad.json"),
		`{"model": {"contextWindow": 32000}, "repeat": true, "steps": [{"error": {"reason": "auth", "status": 401, "message": "bad key", "beforeStart": true}}]}`)
	out.Reset()
	errb.Reset()
	code = execute(t.Context(), env, []string{"compact", "--cwd", ws, "--script", bad})
	if code != 0 || !strings.Contains(out.String(), "dropped without a summary") || !strings.Contains(errb.String(), "summarisation failed") {
		t.Errorf("failing summariser: exit %d\n%s%s", code, out.String(), errb.String())
	}
}
