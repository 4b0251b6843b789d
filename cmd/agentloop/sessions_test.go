package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/session"
)

// storedSession writes a short session into home's store and returns its
// id and file path.
func storedSession(t *testing.T, home, cwd string) (string, string) {
	t.Helper()
	call := llm.ToolCall("c1", "ls", json.RawMessage(`{"path":"."}`))
	return storeMessages(t, home, cwd, []llm.Message{
		llm.UserText("what is in the ZEBRA folder?"),
		{Role: llm.RoleAssistant, Content: []llm.Content{call}, StopReason: llm.StopReasonToolUse,
			Usage: &llm.Usage{Input: 100, Output: 20, Total: 120, Cost: llm.Cost{Total: 0.5}}},
		{Role: llm.RoleToolResult, ToolCallID: "c1", ToolName: "ls", Content: []llm.Content{llm.Text("a.txt")}},
		{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text("There is a.txt.")}, StopReason: llm.StopReasonStop},
	})
}

// storeMessages stores a session of msgs for cwd and returns its id and
// file.
func storeMessages(t *testing.T, home, cwd string, msgs []llm.Message) (string, string) {
	t.Helper()
	st := session.NewJSONLStore(filepath.Join(home, "sessions"))
	s, err := st.Create(t.Context(), session.CreateOptions{Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if _, err := s.Append(t.Context(), session.MessageEntry(m)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	path, err := st.Resolve(s.ID())
	if err != nil {
		t.Fatal(err)
	}
	return s.ID(), path
}

func TestSessionsCommands(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	id, path := storedSession(t, home, ws)
	env, out, errb := testEnv(home, "")
	run := func(args ...string) string {
		t.Helper()
		out.Reset()
		errb.Reset()
		if code := execute(t.Context(), env, args); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		return out.String()
	}

	got := run("sessions", "list", "--cwd", ws)
	if !strings.Contains(got, id) || !strings.Contains(got, "ZEBRA") || !strings.Contains(got, "$0.5000") {
		t.Errorf("list:\n%s", got)
	}
	if got := run("sessions", "list", "--cwd", t.TempDir()); !strings.Contains(got, "no sessions") {
		t.Errorf("list of another dir:\n%s", got)
	}
	if got := run("sessions", "list", "--all"); !strings.Contains(got, id) {
		t.Errorf("list --all:\n%s", got)
	}
	if got := run("sessions", "show", id); !strings.Contains(got, "ZEBRA") || !strings.Contains(got, "There is a.txt.") {
		t.Errorf("show:\n%s", got)
	}
	if got := run("sessions", "export", path, "--format", "md"); !strings.Contains(got, "There is a.txt.") {
		t.Errorf("export md:\n%s", got)
	}
	if got := run("sessions", "export", id, "--format", "json"); !json.Valid([]byte(got)) || !strings.Contains(got, "ZEBRA") {
		t.Errorf("export json:\n%s", got)
	}
	if got, file := run("sessions", "export", id, "--format", "jsonl"), mustRead(t, path); got != file {
		t.Errorf("export jsonl is not the session file:\n%s\nfile:\n%s", got, file)
	}
	if got := run("sessions", "repair", id); !strings.Contains(got, "nothing to repair") {
		t.Errorf("repair of a sound file:\n%s", got)
	}

	// Corrupt a middle line: loading refuses it with the line number, and
	// repair drops it after a backup.
	data, _ := os.ReadFile(path)
	lines := strings.Split(string(data), "\n")
	lines[2] = `{"type":"message", this is not json`
	os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644)
	out.Reset()
	errb.Reset()
	if code := execute(t.Context(), env, []string{"sessions", "show", id}); code == 0 || !strings.Contains(errb.String(), "line 3") {
		t.Errorf("show of a corrupt file: exit %d, stderr %q", code, errb.String())
	}
	got = run("sessions", "repair", id)
	if !strings.Contains(got, "dropped lines [3]") {
		t.Errorf("repair:\n%s", got)
	}
	if got := run("sessions", "show", id); !strings.Contains(got, "There is a.txt.") {
		t.Errorf("show after repair:\n%s", got)
	}

	out.Reset()
	errb.Reset()
	if code := execute(t.Context(), env, []string{"sessions", "show", "nope"}); code != 2 || !strings.Contains(errb.String(), "no session") {
		t.Errorf("unknown session: exit %d, %q", code, errb.String())
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
