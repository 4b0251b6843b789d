package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// servedCLI is a running `agentloop serve`.
type servedCLI struct {
	url    string
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	done   chan struct{}
}

var listenLine = regexp.MustCompile(`listening on (http://[0-9.:\[\]]+)`)

// startServe starts the built CLI's serve on a free port (--listen
// 127.0.0.1:0; it prints the address it got) and stops it with SIGTERM at
// the end of the test.
func startServe(t *testing.T, dir, home string, env []string, args ...string) *servedCLI {
	t.Helper()
	cmd := exec.Command(builtCLI(t), append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "AGENTLOOP_HOME=" + home}, env...)
	pr, pw := io.Pipe()
	sc := &servedCLI{cmd: cmd, stderr: &bytes.Buffer{}, done: make(chan struct{})}
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	found := make(chan string, 1)
	go func() {
		defer close(sc.done)
		rd := bufio.NewReader(pr)
		for {
			line, err := rd.ReadString('\n')
			sc.stderr.WriteString(line)
			if m := listenLine.FindStringSubmatch(line); m != nil {
				found <- m[1]
			}
			if err != nil {
				return
			}
		}
	}()
	go func() { cmd.Wait(); pw.Close() }()
	select {
	case sc.url = <-found:
	case <-sc.done:
		t.Fatalf("agentloop serve exited: %s", sc.stderr)
	case <-time.After(20 * time.Second):
		t.Fatalf("agentloop serve did not say where it listens: %s", sc.stderr)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-sc.done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-sc.done
		}
	})
	return sc
}

// call sends a JSON request to the served CLI.
func (sc *servedCLI) call(t *testing.T, method, path, token string, body, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, sc.url+path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && json.Unmarshal(b, out) != nil {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode
}

// runEvents reads a run's SSE stream (GET /v1/runs/{id}/events) to its
// end and returns the data of each message.
func (sc *servedCLI) runEvents(t *testing.T, runID, token string) []map[string]any {
	t.Helper()
	req, _ := http.NewRequest("GET", sc.url+"/v1/runs/"+runID+"/events", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("events: %d", resp.StatusCode)
	}
	var out []map[string]any
	sc2 := bufio.NewScanner(resp.Body)
	sc2.Buffer(make([]byte, 1<<20), 16<<20)
	for sc2.Scan() {
		if d, ok := strings.CutPrefix(sc2.Text(), "data: "); ok {
			var m map[string]any
			if err := json.Unmarshal([]byte(d), &m); err != nil {
				t.Fatalf("data is not JSON: %s", d)
			}
			out = append(out, m)
		}
	}
	return out
}

// normalise drops what two runs of one script differ in however they are
// made: the envelope (seq, runId, sessionId), the session's file, and the
// clock's readings (message timestamps, tool durations).
func normalise(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			switch k {
			case "seq", "runId", "sessionId", "sessionPath", "timestamp", "durationMs":
				continue
			}
			out[k] = normalise(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalise(e)
		}
		return out
	}
	return v
}

// agentloop serve against mockllm's real wire: create a session, start a
// run, read its events over SSE — the same events, field by field, as
// agentloop run --json prints for the same run (bar the envelope, the
// session file and clock readings), without its CLI-only reply lines.
func TestServeCurlARun(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hello\n"), 0o644)
	env := []string{"OPENAI_API_KEY=sk-mock"}
	mockFlags := []string{"-rounds", "2", "-text", "5"}

	// The reference: agentloop run --json on its own mockllm.
	refBase := mockLLM(t, mockFlags...)
	// Both offer the agent tools (the comparison covers them).
	code, out, errs := execCLIIn(t, "", ws, home, env, "run", "--json", "--model", "openai/mock-model", "--base-url", refBase+"/v1", "--cwd", ws, "say hello")
	if code != 0 {
		t.Fatalf("run --json: exit %d: %s", code, errs)
	}
	var want []any
	wantText := ""
	for line := range strings.Lines(out) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("--json line: %v: %s", err, line)
		}
		if m["type"] == "reply" { // the CLI's own line, not an event of the run
			continue
		}
		if m["type"] == "message_update" && m["event"] == "text_delta" {
			wantText += m["delta"].(string)
		}
		want = append(want, normalise(m))
	}

	base := mockLLM(t, mockFlags...)
	sc := startServe(t, ws, home, env, "--model", "openai/mock-model", "--base-url", base+"/v1")
	var sess struct{ ID, Cwd string }
	if st := sc.call(t, "POST", "/v1/sessions", "", map[string]any{"cwd": ws}, &sess); st != 201 || sess.ID == "" {
		t.Fatalf("create session: %d", st)
	}
	var run struct{ RunID string }
	if st := sc.call(t, "POST", "/v1/sessions/"+sess.ID+"/runs", "", map[string]any{"input": "say hello", "idempotencyKey": "k1"}, &run); st != 202 {
		t.Fatalf("start run: %d", st)
	}
	var got []any
	text := ""
	for _, m := range sc.runEvents(t, run.RunID, "") {
		if m["type"] == "session_status" {
			continue
		}
		if m["type"] == "message_update" && m["event"] == "text_delta" {
			text += m["delta"].(string)
		}
		got = append(got, normalise(m))
	}
	if text == "" || text != wantText {
		t.Fatalf("streamed text %q, --json streamed %q", text, wantText)
	}
	sameEventStrands(t, "SSE", got, want)
	var r struct{ Status string }
	sc.call(t, "GET", "/v1/runs/"+run.RunID, "", nil, &r)
	if r.Status != "succeeded" {
		t.Fatalf("run status %q", r.Status)
	}
}

// Off loopback without a token file, serve refuses to start (exit 2); with
// one, a request without a token is 401 and one with a read token may not
// start runs (403).
func TestServeAuth(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	code, _, errs := execCLIIn(t, "", ws, home, nil, "serve", "--model", "faux/demo", "--listen", "0.0.0.0:0")
	if code != exitUsage || !strings.Contains(errs, "--token-file") {
		t.Fatalf("non-loopback without tokens: exit %d: %s", code, errs)
	}
	tokens := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(tokens, []byte("read viewer-token\nread,write,approve admin-token\n"), 0o600)
	sc := startServe(t, ws, home, nil, "--model", "faux/demo", "--token-file", tokens)
	if st := sc.call(t, "GET", "/v1/sessions", "", nil, nil); st != 401 {
		t.Fatalf("no token: %d", st)
	}
	if st := sc.call(t, "POST", "/v1/sessions", "viewer-token", map[string]any{}, nil); st != 403 {
		t.Fatalf("read token creating: %d", st)
	}
	var sess struct{ ID string }
	if st := sc.call(t, "POST", "/v1/sessions", "admin-token", map[string]any{}, &sess); st != 201 {
		t.Fatalf("admin token: %d", st)
	}
}

// serve on a Unix socket: the socket is private to its user, and the API
// answers on it.
func TestServeUnixSocket(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	sock := filepath.Join(t.TempDir(), "agentloop.sock")
	cmd := exec.Command(builtCLI(t), "serve", "--model", "faux/demo", "--listen", "unix://"+sock)
	cmd.Dir = ws
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "AGENTLOOP_HOME=" + home}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if _, err := os.Stat(sock); !os.IsNotExist(err) {
			t.Errorf("the socket is left behind: %v", err)
		}
	}()
	var fi os.FileInfo
	for i := 0; ; i++ {
		var err error
		if fi, err = os.Stat(sock); err == nil {
			break
		}
		if i > 2000 {
			t.Fatalf("no socket: %s", errb.String())
		}
		time.Sleep(5 * time.Millisecond) // polling a child process's socket
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v", fi.Mode().Perm())
	}
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	resp, err := client.Post("http://agentloop/v1/sessions", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create over the socket: %d", resp.StatusCode)
	}
}

// A token file others can read hands every local user the server's tokens:
// serve refuses it (like ssh refuses a readable key), and says how to fix
// it; a malformed or missing file names the file and the line.
func TestServeTokenFileChecks(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	dir := t.TempDir()
	write := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		name, path string
		want       []string
	}{
		{"world-readable", write("tokens-world", "read,write,approve admin-token\n", 0o644), []string{"tokens-world", "0644", "chmod 600"}},
		{"group-readable", write("tokens-group", "read,write,approve admin-token\n", 0o640), []string{"tokens-group", "0640", "chmod 600"}},
		{"bad line", write("bad", "# tokens\nadmin admin-token\n", 0o600), []string{"bad", "line 2", `unknown scope "admin"`}},
		{"missing", filepath.Join(dir, "nope"), []string{"nope"}},
	} {
		// An unknown model: a file that passed would end serve there
		// (another message) instead of serving forever.
		code, _, errs := execCLIIn(t, "", ws, home, nil, "serve", "--model", "nosuch/model", "--listen", "127.0.0.1:0", "--token-file", c.path)
		if code != exitUsage {
			t.Errorf("%s: exit %d, want %d: %s", c.name, code, exitUsage, errs)
		}
		for _, w := range c.want {
			if !strings.Contains(errs, w) {
				t.Errorf("%s: %q not in %s", c.name, w, errs)
			}
		}
	}
}

// sameEventStrands compares the events of two runs of one script. A tool
// that starts while the reply still streams (a read-only call) sends its
// tool_execution_* events beside the model's: within each strand (the
// run's own events, and each tool call's) the order is fixed and must be
// equal event for event, while how two strands interleave is up to the
// scheduler and differs from run to run.
func sameEventStrands(t *testing.T, face string, got, want []any) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d events over %s, %d from --json", len(got), face, len(want))
	}
	strands := func(evs []any) map[string][]any {
		out := map[string][]any{}
		for _, e := range evs {
			key := "run"
			if m, ok := e.(map[string]any); ok {
				if typ, _ := m["type"].(string); strings.HasPrefix(typ, "tool_execution_") {
					key = fmt.Sprint("tool ", m["toolCallId"])
				}
			}
			out[key] = append(out[key], e)
		}
		return out
	}
	gs, ws := strands(got), strands(want)
	if len(gs) != len(ws) {
		t.Fatalf("%d strands of events over %s, %d from --json", len(gs), face, len(ws))
	}
	for key, w := range ws {
		g := gs[key]
		if len(g) != len(w) {
			t.Errorf("%s: %d events over %s, %d from --json", key, len(g), face, len(w))
			continue
		}
		for i := range w {
			if !reflect.DeepEqual(g[i], w[i]) {
				gj, _ := json.Marshal(g[i])
				wj, _ := json.Marshal(w[i])
				t.Errorf("%s, event %d differs:\n%s: %s\n--json: %s", key, i, face, gj, wj)
			}
		}
	}
}

// A client of agentloop serve that trickles a request body (slowloris) is
// answered 408 after --body-timeout and its connection closed, while an
// event stream opened before lives on past it and carries a run on
// mockllm's wire; --max-streams bounds the streams open at once.
func TestServeSlowBodyAndStreamLimit(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	base := mockLLM(t, "-rounds", "1", "-text", "3")
	sc := startServe(t, ws, home, []string{"OPENAI_API_KEY=sk-mock"}, "--model", "openai/mock-model", "--base-url", base+"/v1",
		"--body-timeout", "500ms", "--max-streams", "1")
	var sess struct{ ID string }
	if st := sc.call(t, "POST", "/v1/sessions", "", map[string]any{"cwd": ws}, &sess); st != 201 {
		t.Fatalf("create session: %d", st)
	}
	resp, err := http.Get(sc.url + "/v1/sessions/" + sess.ID + "/events")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("events: %v %v", resp, err)
	}
	defer resp.Body.Close()
	var e struct {
		Error struct{ Code, Message string }
	}
	if st := sc.call(t, "GET", "/v1/sessions/"+sess.ID+"/events", "", nil, &e); st != http.StatusServiceUnavailable || e.Error.Code != "overloaded" {
		t.Fatalf("a second stream with --max-streams 1: %d %+v", st, e)
	}

	conn, err := net.Dial("tcp", strings.TrimPrefix(sc.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/sessions/%s/runs HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{\"input\":\"sl",
		sess.ID, strings.TrimPrefix(sc.url, "http://"))
	start := time.Now()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	rd := bufio.NewReader(conn)
	tr, err := http.ReadResponse(rd, nil)
	if err != nil {
		t.Fatalf("no answer to a trickled body within 10s: %v", err)
	}
	b, _ := io.ReadAll(tr.Body)
	if tr.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), `"request_timeout"`) {
		t.Fatalf("trickled body: %d %s", tr.StatusCode, b)
	}
	if _, err := rd.ReadByte(); err == nil {
		t.Fatal("the connection of a trickled body stays open")
	}
	if d := time.Since(start); d < 400*time.Millisecond {
		t.Fatalf("answered after %v, before the body timeout", d)
	}

	// The stream opened before is still there and carries a run.
	var run struct{ RunID string }
	if st := sc.call(t, "POST", "/v1/sessions/"+sess.ID+"/runs", "", map[string]any{"input": "hi", "idempotencyKey": "k"}, &run); st != 202 {
		t.Fatalf("start run: %d", st)
	}
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		if lines.Text() == "event: run_end" {
			return
		}
	}
	t.Fatalf("the event stream ended before the run's end: %v", lines.Err())
}
