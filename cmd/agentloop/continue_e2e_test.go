package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/session"
)

// longCompactedSession stores a session of n turns (user, tool call, result,
// answer) in ws, compacted every 100 turns keeping the last 10 entries,
// big enough to be continued from its tail.
func longCompactedSession(t *testing.T, home, ws string, n int) string {
	t.Helper()
	ctx := context.Background()
	st := session.NewJSONLStore(filepath.Join(home, "sessions"))
	s, err := st.Create(ctx, session.CreateOptions{Cwd: ws})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pad := strings.Repeat("filler ", 100)
	var ids []string
	add := func(e session.Entry) {
		id, err := s.Append(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for k := range n {
		call := fmt.Sprintf("call%d", k%3) // ids repeat across turns
		add(session.MessageEntry(llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text(fmt.Sprintf("question %d %s", k, pad))}, Timestamp: int64(4 * k)}))
		add(session.MessageEntry(llm.Message{Role: llm.RoleAssistant, Provider: "openai", Model: "mock-model", StopReason: llm.StopReasonToolUse,
			Content: []llm.Content{llm.ToolCall(call, "bash", json.RawMessage(`{"command":"echo ok"}`))}, Timestamp: int64(4*k + 1)}))
		add(session.MessageEntry(llm.Message{Role: llm.RoleToolResult, ToolCallID: call, ToolName: "bash",
			Content: []llm.Content{llm.Text(fmt.Sprintf("result %d %s", k, pad))}, Timestamp: int64(4*k + 2)}))
		add(session.MessageEntry(llm.Message{Role: llm.RoleAssistant, Provider: "openai", Model: "mock-model", StopReason: llm.StopReasonStop,
			Content: []llm.Content{llm.Text(fmt.Sprintf("answer %d", k))}, Timestamp: int64(4*k + 3)}))
		if k%100 == 99 {
			add(session.CompactionEntry(fmt.Sprintf("summary up to turn %d", k), ids[len(ids)-10], 1000))
		}
	}
	// A truncation of a kept result, by its entry, then one more turn.
	add(session.TruncationEntry(ids[len(ids)-3], fmt.Sprintf("call%d", (n-1)%3), []llm.Content{llm.Text("[cut]")}))
	add(session.MessageEntry(llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text("last question")}, Timestamp: int64(4 * n)}))
	add(session.MessageEntry(llm.Message{Role: llm.RoleAssistant, Provider: "openai", Model: "mock-model", StopReason: llm.StopReasonStop,
		Content: []llm.Content{llm.Text("last answer")}, Timestamp: int64(4*n + 1)}))
	return s.(*session.FileSession).Path()
}

// Issue 20.3: `run --continue` on a long compacted session (read from its
// tail) sends the model what it sends when the file must be read whole:
// the same session with a thinking level change at its root, which the
// tail read cannot place. Two rounds, so the second continues what the
// first wrote.
func TestE2EContinueLongSession(t *testing.T) {
	ws := t.TempDir()
	homeTail, homeFull := t.TempDir(), t.TempDir()
	path := longCompactedSession(t, homeTail, ws, 1000)
	if st, _ := os.Stat(path); st.Size() < 2<<20 {
		t.Fatalf("the session has %d bytes: too small to be read from its tail", st.Size())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	nl := strings.IndexByte(string(data), '\n') + 1
	root := `{"type":"thinking_level_change","id":"7e000000","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","thinkingLevel":"off"}` + "\n"
	rest := strings.Replace(string(data[nl:]), `"parentId":null`, `"parentId":"7e000000"`, 1)
	fullPath := filepath.Join(homeFull, "sessions", filepath.Base(filepath.Dir(path)), filepath.Base(path))
	os.MkdirAll(filepath.Dir(fullPath), 0o700)
	if err := os.WriteFile(fullPath, []byte(string(data[:nl])+root+rest), 0o600); err != nil {
		t.Fatal(err)
	}
	capture := filepath.Join(t.TempDir(), "requests.jsonl")
	base := mockLLM(t, "-rounds", "0", "-capture", capture)
	for round, prompt := range []string{"next question", "and one more", "after a listing"} {
		if round == 2 {
			// A listing caches each transcript's summary, which then tells
			// the tail read where no thinking change is.
			for _, home := range []string{homeTail, homeFull} {
				env, out, errb := cliEnvWith(home, nil)
				if code := execute(context.Background(), env, []string{"sessions", "list", "--cwd", ws}); code != 0 || !strings.Contains(out.String(), "question 0") {
					t.Fatalf("sessions list: exit %d\n%s%s", code, out, errb)
				}
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(path), ".summaries.json")); err != nil {
				t.Fatalf("no summary cache after sessions list: %v", err)
			}
		}
		var got [2][]string
		for i, home := range []string{homeTail, homeFull} {
			code, _, errs := runMock(t, home, ws, base, "--continue", prompt)
			if code != 0 {
				t.Fatalf("--continue: exit %d\n%s", code, errs)
			}
			got[i] = lastRequest(t, capture)
		}
		if strings.Join(got[0], "\n") != strings.Join(got[1], "\n") {
			t.Fatalf("round %d: continued from the tail, the request is\n%s\n\nread whole, it is\n%s", round,
				strings.Join(got[0], "\n"), strings.Join(got[1], "\n"))
		}
		if len(got[0]) < 10 || !strings.Contains(got[0][0], "summary up to turn 999") || got[0][len(got[0])-1] != "user: "+prompt {
			t.Fatalf("round %d: request %q", round, got[0])
		}
		if !strings.Contains(strings.Join(got[0], "\n"), "[cut]") {
			t.Fatalf("round %d: the truncated result is not cut: %q", round, got[0])
		}
	}
}

// describe says a message's role and text (and a call's id), as
// lastRequest reads them from the Chat Completions request.
func describe(m llm.Message) string {
	switch m.Role {
	case llm.RoleToolResult:
		return "tool " + m.ToolCallID + ": " + m.Text()
	case llm.RoleAssistant:
		var calls []string
		for _, c := range m.Content {
			if c.Type == llm.ContentToolCall {
				calls = append(calls, c.ID)
			}
		}
		return "assistant: " + m.Text() + " " + strings.Join(calls, ",")
	}
	return "user: " + m.Text()
}

// lastRequest reads the messages of the last request mockllm captured,
// without the system prompt.
func lastRequest(t *testing.T, capture string) []string {
	t.Helper()
	lines := readLines(t, capture)
	if len(lines) == 0 {
		t.Fatal("mockllm captured no request")
	}
	last := []byte(lines[len(lines)-1])
	var req struct {
		Messages []struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
			ToolCalls  []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(last, &req); err != nil {
		t.Fatalf("captured request: %v", err)
	}
	var out []string
	for _, m := range req.Messages {
		text := contentText(m.Content)
		switch m.Role {
		case "system", "developer":
			continue
		case "tool":
			out = append(out, "tool "+m.ToolCallID+": "+text)
		case "assistant":
			var calls []string
			for _, c := range m.ToolCalls {
				calls = append(calls, c.ID)
			}
			out = append(out, "assistant: "+text+" "+strings.Join(calls, ","))
		default:
			out = append(out, m.Role+": "+text)
		}
	}
	return out
}

// contentText joins a Chat Completions content, a string or text parts.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}
