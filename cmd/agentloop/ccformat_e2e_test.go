package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// ccResultWant is the result object of claude -p --output-format json, as
// scripts read it: decoded strictly, no field more or less.
type ccResultWant struct {
	Type          string  `json:"type"`
	Subtype       string  `json:"subtype"`
	IsError       bool    `json:"is_error"`
	Result        string  `json:"result"`
	SessionID     string  `json:"session_id"`
	NumTurns      int     `json:"num_turns"`
	DurationMS    int64   `json:"duration_ms"`
	DurationAPIMS int64   `json:"duration_api_ms"`
	TotalCostUSD  float64 `json:"total_cost_usd"`
	Usage         struct {
		InputTokens              int `json:"input_tokens"`
		OutputTokens             int `json:"output_tokens"`
		CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	} `json:"usage"`
	Model      string `json:"model"`
	StopReason string `json:"stop_reason"`
}

func decodeResult(t *testing.T, line string) ccResultWant {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	var r ccResultWant
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("result %q: %v", line, err)
	}
	if dec.More() {
		t.Fatalf("more than one object: %q", line)
	}
	return r
}

// Issue 21 item 4: `agentloop -p --output-format json` prints one result
// object in Claude Code's shape; a turn limit and a setup error are results
// too.
func TestE2EPrintOutputJSON(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	code, out, errs := runIn(t, ws, home, "-p", "--model", "faux/demo", "--output-format", "json", "what is here?")
	if code != 0 || strings.Count(out, "\n") != 1 {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, out, errs)
	}
	r := decodeResult(t, out)
	if r.Type != "result" || r.Subtype != "success" || r.IsError || r.Result == "" || r.SessionID == "" ||
		r.NumTurns != 2 || r.Usage.InputTokens == 0 || r.Usage.OutputTokens == 0 || r.Model != "faux/demo" {
		t.Errorf("result %+v", r)
	}
	if !strings.Contains(r.Result, "This folder") {
		t.Errorf("result text %q, want the last reply", r.Result)
	}
	// The session it names is the one -r takes.
	code, out, errs = runIn(t, ws, home, "-p", "--output-format", "json", "-r", r.SessionID[:8], "again")
	if code != 0 {
		t.Fatalf("-r %s: exit %d\n%s", r.SessionID[:8], code, errs)
	}
	if r2 := decodeResult(t, out); r2.SessionID != r.SessionID {
		t.Errorf("-r ID ran session %s, want %s", r2.SessionID, r.SessionID)
	}
	code, out, errs = runIn(t, ws, home, "-p", "--output-format", "json", "-r", "and again")
	if r3 := decodeResult(t, out); code != 0 || r3.SessionID != r.SessionID {
		t.Errorf("bare -r: exit %d, session %s, want %s\n%s", code, r3.SessionID, r.SessionID, errs)
	}

	code, out, _ = runIn(t, ws, home, "--print", "--model", "faux/demo", "--output-format", "json", "--max-turns", "1", "--no-session", "hi")
	if r := decodeResult(t, out); code != 1 || r.Subtype != "error_max_turns" || !r.IsError || r.NumTurns != 1 {
		t.Errorf("--max-turns 1: exit %d, result %+v", code, r)
	}
	code, out, _ = runIn(t, ws, home, "-p", "--model", "faux/demo", "--input-format", "stream-json", "--output-format", "stream-json", "hi")
	if r := decodeResult(t, out); code != exitUsage || !r.IsError || !strings.Contains(r.Result, "give no prompt argument") {
		t.Errorf("a prompt argument with --input-format stream-json: exit %d, result %+v", code, r)
	}
	code, out, _ = runIn(t, ws, home, "-p", "--model", "nosuch/model", "--output-format", "stream-json", "hi")
	if r := decodeResult(t, out); code == 0 || r.Subtype != "error_during_execution" || !r.IsError || !strings.Contains(r.Result, "nosuch") {
		t.Errorf("setup error: exit %d, result %+v", code, r)
	}
}

// stream-json: system/init first, then assistant and user (tool result)
// messages with Anthropic's content blocks, the result last.
func TestE2EPrintOutputStreamJSON(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	code, out, errs := runIn(t, ws, home, "-p", "--model", "faux/demo", "--output-format", "stream-json", "--verbose", "--disallowed-tools", "bash", "hi")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	type block struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
		ToolUseID string          `json:"tool_use_id"`
		Content   string          `json:"content"`
		IsError   bool            `json:"is_error"`
	}
	type line struct {
		Type      string   `json:"type"`
		Subtype   string   `json:"subtype"`
		SessionID string   `json:"session_id"`
		Tools     []string `json:"tools"`
		Model     string   `json:"model"`
		Cwd       string   `json:"cwd"`
		Message   struct {
			Role    string  `json:"role"`
			Content []block `json:"content"`
		} `json:"message"`
	}
	var got []line
	for _, l := range lines {
		var v line
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		got = append(got, v)
	}
	var kinds []string
	for _, v := range got {
		kinds = append(kinds, v.Type)
	}
	if want := []string{"system", "assistant", "user", "assistant", "result"}; !slices.Equal(kinds, want) {
		t.Fatalf("lines %v, want %v\n%s", kinds, want, out)
	}
	init := got[0]
	if init.Subtype != "init" || init.Model != "faux/demo" || init.Cwd != ws || init.SessionID == "" ||
		!slices.Contains(init.Tools, "ls") || slices.Contains(init.Tools, "bash") {
		t.Errorf("init %+v", init)
	}
	call := got[1].Message.Content
	if len(call) != 2 || call[0].Type != "text" || call[1].Type != "tool_use" || call[1].Name != "ls" || call[1].ID == "" || len(call[1].Input) == 0 {
		t.Errorf("assistant content %+v", call)
	}
	res := got[2].Message.Content
	if got[2].Message.Role != "user" || len(res) != 1 || res[0].Type != "tool_result" || res[0].ToolUseID != call[1].ID || res[0].IsError {
		t.Errorf("tool result line %+v", got[2])
	}
	if r := decodeResult(t, lines[len(lines)-1]); r.SessionID != init.SessionID || r.Subtype != "success" {
		t.Errorf("result %+v", r)
	}
	if !strings.Contains(errs, "← ls:") {
		t.Errorf("--verbose shows no tool result on stderr:\n%s", errs)
	}
}

// --input-format stream-json: three user lines, the second while the first
// turn runs (it steers it), the third after the first result (a second turn
// of the same session, in the same process).
func TestE2EInputStreamJSONSteer(t *testing.T) {
	capture := filepath.Join(t.TempDir(), "requests.jsonl")
	base := mockLLM(t, "-rounds", "1", "-delay", "500ms", "-capture", capture)
	home, ws := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(home, "models.json"), `{"providers":{"local":{"baseUrl":"`+base+`/v1","api":"openai-completions","apiKey":"sk-x","models":[{"id":"m"}]}}}`)
	cmd := exec.Command(builtCLI(t), "-p", "--model", "local/m", "--input-format", "stream-json", "--output-format", "stream-json")
	cmd.Dir = ws
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "AGENTLOOP_HOME=" + home}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	user := func(text string) {
		b, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text}})
		if _, err := stdin.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	sc := bufio.NewScanner(stdout)
	next := func() map[string]any {
		if !sc.Scan() {
			t.Fatalf("stdout ended early: %v\n%s", sc.Err(), errb.String())
		}
		var v map[string]any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		return v
	}
	user("first question")
	if v := next(); v["type"] != "system" { // the turn runs: its model call is delayed
		t.Fatalf("first line %v", v)
	}
	// Steer once the model call is on the wire, so the steer comes while
	// the turn runs, after its first request.
	for i := 0; mockStats(t, base)["requests"] < 1; i++ {
		if i > 300 {
			t.Fatal("no request reached the model")
		}
		time.Sleep(10 * time.Millisecond) // polling a child process
	}
	user("steer: say done")
	var results []ccResultWant
	for len(results) < 1 {
		v := next()
		if v["type"] == "result" {
			b, _ := json.Marshal(v)
			results = append(results, decodeResult(t, string(b)))
		}
	}
	user("third question")
	stdin.Close()
	rest, _ := io.ReadAll(stdout)
	for _, l := range strings.Split(strings.TrimSpace(string(rest)), "\n") {
		if strings.Contains(l, `"type":"result"`) {
			results = append(results, decodeResult(t, l))
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	if len(results) != 2 || results[0].SessionID == "" || results[1].SessionID != results[0].SessionID ||
		results[0].Subtype != "success" || results[1].Subtype != "success" {
		t.Fatalf("results %+v, want two turns of one session\n%s", results, errb.String())
	}
	b, err := os.ReadFile(capture)
	if err != nil {
		t.Fatal(err)
	}
	reqs := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3 (call, answer after the steer, the third turn)", len(reqs))
	}
	users := func(req string) []string {
		var body struct {
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal([]byte(req), &body); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range body.Messages {
			if s, ok := m.Content.(string); ok && m.Role == "user" {
				out = append(out, s)
			}
		}
		return out
	}
	if got := users(reqs[0]); !slices.Equal(got, []string{"first question"}) {
		t.Errorf("first request's user messages %q", got)
	}
	if got := users(reqs[1]); !slices.Equal(got, []string{"first question", "steer: say done"}) {
		t.Errorf("second request's user messages %q, want the steer after the tool result", got)
	}
	if got := users(reqs[2]); !slices.Equal(got, []string{"first question", "steer: say done", "third question"}) {
		t.Errorf("third request's user messages %q, want the whole session", got)
	}
}

// `agentloop -p "prompt"` is a run in text; --verbose shows tool results;
// --version answers; a bare prompt says to use -p.
func TestE2EPrintModeText(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	code, out, errs := runIn(t, ws, home, "-p", "--model", "faux/demo", "--no-session", "--verbose", "what is here?")
	if code != 0 || !strings.Contains(out, "This folder") || !strings.Contains(errs, "→ ls") || !strings.Contains(errs, "← ls: ") {
		t.Errorf("-p --verbose: exit %d, stdout %q, stderr:\n%s", code, out, errs)
	}
	code, _, errs = runIn(t, ws, home, "-p", "--model", "faux/demo", "--no-session", "what is here?")
	if code != 0 || strings.Contains(errs, "← ls") {
		t.Errorf("without --verbose: exit %d, stderr:\n%s", code, errs)
	}
	if code, out, _ := runIn(t, ws, home, "--version"); code != 0 || !strings.HasPrefix(out, "agentloop version ") {
		t.Errorf("--version: exit %d, %q", code, out)
	}
	code, _, errs = runIn(t, ws, home, "what is here?")
	if code != exitUsage || !strings.Contains(errs, `agentloop -p "what is here?"`) {
		t.Errorf("bare prompt: exit %d, stderr:\n%s", code, errs)
	}
	// A subcommand name is not a prompt, with -p after it too.
	if code, out, _ := runIn(t, ws, home, "sessions", "list"); code != 0 || !strings.Contains(out, "no sessions") {
		t.Errorf("sessions list: exit %d, %q", code, out)
	}
}
