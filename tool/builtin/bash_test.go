package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"go.uber.org/goleak"

	"github.com/agentloop/agentloop/internal/proc"
	"github.com/agentloop/agentloop/tool"
)

func bashCall(t *testing.T, command string, timeout float64) tool.Call {
	t.Helper()
	args := map[string]any{"command": command}
	if timeout > 0 {
		args["timeout"] = timeout
	}
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return tool.Call{ID: "call_1", Name: "bash", Args: raw}
}

func bashDetails(t *testing.T, res tool.Result) BashDetails {
	t.Helper()
	var d BashDetails
	if err := json.Unmarshal(res.Details, &d); err != nil {
		t.Fatalf("details %s: %v", res.Details, err)
	}
	return d
}

// processesWith returns the pids of live processes whose command line
// contains s.
func processesWith(s string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		if bytes.Contains(bytes.ReplaceAll(b, []byte{0}, []byte{' '}), []byte(s)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func assertNoLeftovers(t *testing.T, marker string) {
	t.Helper()
	if pids := processesWith(marker); len(pids) > 0 {
		t.Errorf("processes left running: %v", pids)
	}
	if _, zombies := proc.Alive(""); len(zombies) > 0 {
		var desc []string
		for _, z := range zombies {
			stat, _ := os.ReadFile("/proc/" + strconv.Itoa(z) + "/stat")
			status, _ := os.ReadFile("/proc/" + strconv.Itoa(z) + "/status")
			ns := ""
			for line := range strings.Lines(string(status)) {
				if strings.HasPrefix(line, "NSpid:") {
					ns = strings.TrimSpace(line)
				}
			}
			desc = append(desc, strings.TrimSpace(string(stat))+" "+ns)
		}
		t.Errorf("zombie children left unreaped: %q", desc)
	}
}

func TestBashResults(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hi there\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := NewBash(BashOptions{Dir: dir, SpillDir: t.TempDir(), Env: append(os.Environ(), "AGENTLOOP_TEST_VAR=from-env")})
	tests := []struct {
		name     string
		command  string
		want     string
		isError  bool
		exitCode int
	}{
		{"stdout", "echo hello", "hello\n", false, 0},
		{"runs in the workspace", "cat hello.txt", "hi there\n", false, 0},
		{"stderr is merged", "echo out; echo err >&2", "out\nerr\n", false, 0},
		{"no output", "true", "(no output)", false, 0},
		{"environment", "echo $AGENTLOOP_TEST_VAR", "from-env\n", false, 0},
		{"non-zero exit", "echo failing; exit 3", "failing\n\n\nCommand exited with code 3.", true, 3},
		{"killed by a signal", "kill -TERM $$", "(no output)\n\nCommand was killed by signal terminated.", true, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := b.Execute(context.Background(), bashCall(t, tt.command, 0), func(tool.Partial) {})
			if err != nil {
				t.Fatalf("Execute: %v", err)
			}
			if got := res.Text(); got != tt.want {
				t.Errorf("text %q, want %q", got, tt.want)
			}
			if res.IsError != tt.isError {
				t.Errorf("IsError %v, want %v", res.IsError, tt.isError)
			}
			if d := bashDetails(t, res); d.ExitCode != tt.exitCode {
				t.Errorf("exit code %d, want %d", d.ExitCode, tt.exitCode)
			}
		})
	}
}

func TestBashBadCalls(t *testing.T) {
	defer goleak.VerifyNone(t)
	tests := []struct {
		name    string
		dir     string
		command string
		want    string
	}{
		{"empty command", "", "  ", "command is empty"},
		{"missing directory", filepath.Join(t.TempDir(), "gone"), "ls", "does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBash(BashOptions{Dir: tt.dir})
			_, err := b.Execute(context.Background(), bashCall(t, tt.command, 0), func(tool.Partial) {})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestBashAbortKillsWholeTreeIncludingSetsid(t *testing.T) {
	defer goleak.VerifyNone(t)
	const marker = "300.4173"
	b := NewBash(BashOptions{Dir: t.TempDir(), SpillDir: t.TempDir()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var once sync.Once
	update := func(p tool.Partial) {
		if strings.Contains(tool.Result{Content: p.Content}.Text(), "started") {
			once.Do(cancel)
		}
	}
	cmd := "setsid sleep " + marker + " >/dev/null 2>&1 & sleep " + marker + " & (setsid sleep " + marker + " &); echo started; wait"
	res, err := b.Execute(ctx, bashCall(t, cmd, 30), update)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if !res.IsError || !strings.Contains(res.Text(), "started") || !strings.HasSuffix(res.Text(), "Command aborted.") {
		t.Errorf("result %q (isError %v), want the output and the abort notice", res.Text(), res.IsError)
	}
	d := bashDetails(t, res)
	if !d.Aborted || d.Killed < 3 {
		t.Errorf("details %+v, want aborted with the three sleepers killed", d)
	}
	assertNoLeftovers(t, "sleep "+marker)
}

func TestBashTimeout(t *testing.T) {
	defer goleak.VerifyNone(t)
	const marker = "300.5291"
	b := NewBash(BashOptions{Dir: t.TempDir()})
	start := time.Now()
	res, err := b.Execute(context.Background(), bashCall(t, "echo before; setsid sleep "+marker+" & sleep "+marker, 0.3), func(tool.Partial) {})
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("took %v to time out after 0.3 s", time.Since(start))
	}
	// On a loaded machine the shell may not get to the echo in 0.3 s.
	notice := "\n\nCommand timed out after 0.3 seconds and was killed with every process it started."
	output, ok := strings.CutSuffix(res.Text(), notice)
	if !res.IsError || !ok || (output != "before\n" && output != "(no output)") {
		t.Errorf("result %q (isError %v), want the output so far and %q", res.Text(), res.IsError, notice)
	}
	if d := bashDetails(t, res); !d.TimedOut {
		t.Errorf("details %+v, want timedOut", d)
	}
	assertNoLeftovers(t, "sleep "+marker)
}

func TestBashTimeoutIsCapped(t *testing.T) {
	b := NewBash(BashOptions{})
	tests := []struct {
		seconds *float64
		want    time.Duration
	}{
		{nil, BashDefaultTimeout},
		{ptr(0.0), BashDefaultTimeout},
		{ptr(-5.0), BashDefaultTimeout},
		{ptr(30.0), 30 * time.Second},
		{ptr(601.0), BashMaxTimeout},
		{ptr(1e300), BashMaxTimeout},
	}
	for _, tt := range tests {
		if got := b.timeout(tt.seconds); got != tt.want {
			t.Errorf("timeout(%v) = %v, want %v", tt.seconds, got, tt.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestBashBackgroundJobDoesNotHoldTheCall(t *testing.T) {
	defer goleak.VerifyNone(t)
	const marker = "300.6337"
	b := NewBash(BashOptions{Dir: t.TempDir()})
	start := time.Now()
	// The sleeper inherits stdout, so the pipe stays open after the shell
	// exits: the call must neither wait for it nor leave it running.
	res, err := b.Execute(context.Background(), bashCall(t, "sleep "+marker+" & echo done", 0), func(tool.Partial) {})
	if err != nil || res.IsError || res.Text() != "done\n" {
		t.Fatalf("result %q, %v", res.Text(), err)
	}
	if el := time.Since(start); el >= bashDrainTimeout {
		t.Errorf("took %v: waited for the background job's pipe", el)
	}
	if d := bashDetails(t, res); d.Killed != 1 {
		t.Errorf("killed %d, want the one background sleeper", d.Killed)
	}
	assertNoLeftovers(t, "sleep "+marker)
}

func TestBashStreamsUpdates(t *testing.T) {
	defer goleak.VerifyNone(t)
	b := NewBash(BashOptions{Dir: t.TempDir()})
	var (
		mu      sync.Mutex
		updates []string
	)
	// The second echo waits for a file the update callback creates, so the
	// test proves the first line was streamed before the command ended.
	dir := t.TempDir()
	flag := filepath.Join(dir, "seen")
	cmd := "echo first; for i in $(seq 1 500); do [ -e " + flag + " ] && break; sleep 0.01; done; echo second"
	res, err := b.Execute(context.Background(), bashCall(t, cmd, 30), func(p tool.Partial) {
		text := tool.Result{Content: p.Content}.Text()
		mu.Lock()
		updates = append(updates, text)
		mu.Unlock()
		if strings.Contains(text, "first") {
			_ = os.WriteFile(flag, nil, 0o644)
		}
	})
	if err != nil || res.Text() != "first\nsecond\n" {
		t.Fatalf("result %q, %v", res.Text(), err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(updates) == 0 || updates[0] != "first\n" {
		t.Errorf("updates %q, want the first line streamed first", updates)
	}
}

func TestBashSpillsLongOutput(t *testing.T) {
	defer goleak.VerifyNone(t)
	spill := filepath.Join(t.TempDir(), "session")
	b := NewBash(BashOptions{Dir: t.TempDir(), SpillDir: spill})
	tests := []struct {
		name      string
		n         int
		firstLine int
		lastLine  int
	}{
		// 30,000 lines are 168,894 bytes: cut by bytes.
		{"over the byte limit", 30000, 0, 30000},
		// 3,000 short lines: cut by lines, the file written at the end.
		{"over the line limit", 3000, 1001, 3000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := b.Execute(context.Background(), bashCall(t, "seq 1 "+strconv.Itoa(tt.n), 0), func(tool.Partial) {})
			if err != nil || res.IsError {
				t.Fatalf("result %q, %v", res.Text(), err)
			}
			d := bashDetails(t, res)
			if !d.Truncated || d.FullOutputPath == "" || filepath.Dir(d.FullOutputPath) != spill {
				t.Fatalf("details %+v, want truncated with a spill file in %s", d, spill)
			}
			full, err := os.ReadFile(d.FullOutputPath)
			if err != nil {
				t.Fatal(err)
			}
			var want strings.Builder
			for i := 1; i <= tt.n; i++ {
				want.WriteString(strconv.Itoa(i) + "\n")
			}
			if string(full) != want.String() {
				t.Errorf("spill file has %d bytes, want the %d of the whole output", len(full), want.Len())
			}
			text := res.Text()
			body, notice, ok := strings.Cut(text, "\n\n[Output cut: ")
			if !ok {
				t.Fatalf("no notice in %q", text[max(0, len(text)-300):])
			}
			if len(body) > BashMaxBytes || strings.Count(body, "\n") > BashMaxLines {
				t.Errorf("shown %d bytes, %d lines: over the limits", len(body), strings.Count(body, "\n"))
			}
			if !strings.HasSuffix(body, "\n"+strconv.Itoa(tt.n)+"\n") {
				t.Errorf("shown text does not end with the last line")
			}
			first := tt.firstLine
			if first == 0 { // cut by bytes: the first shown line is whole
				first, _ = strconv.Atoi(strings.SplitN(body, "\n", 2)[0])
			}
			wantNotice := "showing lines " + strconv.Itoa(first) + "-" + strconv.Itoa(tt.lastLine) + " of " + strconv.Itoa(tt.n) + ". Full output: " + d.FullOutputPath + "]"
			if notice != wantNotice {
				t.Errorf("notice %q, want %q", notice, wantNotice)
			}
		})
	}
}

func TestBashTail(t *testing.T) {
	long := strings.Repeat("x", 100)
	tests := []struct {
		name     string
		in       string
		maxLines int
		maxBytes int
		want     string
		lines    int
		partial  bool
	}{
		{"empty", "", 10, 100, "", 0, false},
		{"fits", "a\nb\n", 10, 100, "a\nb\n", 2, false},
		{"no final newline", "a\nb", 10, 100, "a\nb", 2, false},
		{"line limit", "a\nb\nc\n", 2, 100, "b\nc\n", 2, false},
		{"byte limit keeps whole lines", "aaaa\nbb\ncc\n", 10, 7, "bb\ncc\n", 2, false},
		{"one long line keeps its end", long + "\n", 10, 10, strings.Repeat("x", 9) + "\n", 1, true},
		{"never splits a rune", "ééééé", 10, 4, "éé", 1, true},
		{"only newlines", "\n\n\n", 2, 100, "\n\n", 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, lines, partial := bashTail([]byte(tt.in), tt.maxLines, tt.maxBytes)
			if got != tt.want || lines != tt.lines || partial != tt.partial {
				t.Errorf("bashTail = %q, %d, %v; want %q, %d, %v", got, lines, partial, tt.want, tt.lines, tt.partial)
			}
		})
	}
}

func TestBashConcurrencyClass(t *testing.T) {
	b := NewBash(BashOptions{})
	tests := []struct {
		args string
		want bool
	}{
		{`{"command":"git status && ls"}`, true},
		{`{"command":"rm -rf build"}`, false},
		{`{"command":`, false},
	}
	for _, tt := range tests {
		call := tool.Call{Name: "bash", Args: json.RawMessage(tt.args)}
		if got := b.ConcurrencySafe(call); got != tt.want {
			t.Errorf("ConcurrencySafe(%s) = %v, want %v", tt.args, got, tt.want)
		}
		if got := b.ReadOnlyCall(call); got != tt.want {
			t.Errorf("ReadOnlyCall(%s) = %v, want %v", tt.args, got, tt.want)
		}
	}
	if b.ReadOnly() {
		t.Error("the bash tool as a whole must not claim to be read-only")
	}
	var _ tool.ConcurrencyClassifier = b
}

func BenchmarkBashEcho(b *testing.B) {
	bt := NewBash(BashOptions{Dir: b.TempDir()})
	call := tool.Call{ID: "c", Name: "bash", Args: json.RawMessage(`{"command":"echo hi"}`)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := bt.Execute(context.Background(), call, func(tool.Partial) {}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestBashConcurrentCallsKeepTheirOwnProcesses(t *testing.T) {
	defer goleak.VerifyNone(t)
	b := NewBash(BashOptions{Dir: t.TempDir()})
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	// A waits (in a background job of its own) until B has finished; B's
	// sweep must not touch A's processes.
	slow := "(while [ ! -e " + ready + " ]; do sleep 0.01; done; echo a-done) & wait"
	type out struct {
		res tool.Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := b.Execute(context.Background(), bashCall(t, slow, 30), func(tool.Partial) {})
		done <- out{res, err}
	}()
	for range 5 {
		if res, err := b.Execute(context.Background(), bashCall(t, "sleep 0.01 & echo b", 30), func(tool.Partial) {}); err != nil || res.Text() != "b\n" {
			t.Fatalf("B: %q, %v", res.Text(), err)
		}
	}
	if err := os.WriteFile(ready, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	a := <-done
	if a.err != nil || a.res.IsError || a.res.Text() != "a-done\n" {
		t.Fatalf("A: %q (isError %v), %v: its background job was killed by another call's sweep", a.res.Text(), a.res.IsError, a.err)
	}
	assertNoLeftovers(t, "no such process")
}

func FuzzBashTail(f *testing.F) {
	f.Add([]byte("a\nb\nc\n"), 2, 100)
	f.Add([]byte("ééé\n"), 5, 3)
	f.Add([]byte("\n\n\n"), 1, 1)
	f.Fuzz(func(t *testing.T, data []byte, maxLines, maxBytes int) {
		if maxLines < 1 || maxLines > 5000 || maxBytes < 4 || maxBytes > 1<<20 {
			t.Skip()
		}
		out, lines, partial := bashTail(data, maxLines, maxBytes)
		if !bytes.HasSuffix(data, []byte(out)) {
			t.Fatalf("%q is not a suffix of the input", out)
		}
		if len(out) > maxBytes {
			t.Fatalf("%d bytes kept, limit %d", len(out), maxBytes)
		}
		if lines > maxLines || (len(data) > 0) != (lines > 0) {
			t.Fatalf("%d lines kept, limit %d, input %d bytes", lines, maxLines, len(data))
		}
		start := len(data) - len(out)
		if !partial && start > 0 && data[start-1] != '\n' {
			t.Fatalf("cut inside a line at %d without saying so", start)
		}
		if partial && start < len(data) && utf8.Valid(data) && !utf8.RuneStart(data[start]) {
			t.Fatalf("cut inside a UTF-8 sequence at %d", start)
		}
	})
}

func TestBashKeepBackground(t *testing.T) {
	defer goleak.VerifyNone(t)
	const marker = "300.2468"
	b := NewBash(BashOptions{Dir: t.TempDir(), KeepBackground: true})
	defer b.Close()
	run := func(cmd string, timeout float64) tool.Result {
		t.Helper()
		res, err := b.Execute(context.Background(), bashCall(t, cmd, timeout), func(tool.Partial) {})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	run("sleep "+marker+" >/dev/null 2>&1 & setsid sleep "+marker+" >/dev/null 2>&1 & echo started", 0)
	run("true", 0)
	if n := len(processesWith("sleep " + marker)); n != 2 {
		t.Fatalf("%d background sleepers after the calls, want 2 kept", n)
	}
	// A timeout still kills everything the timed-out command started.
	if res := run("sleep 300.1357 >/dev/null 2>&1 & sleep 300.1357", 0.3); !strings.Contains(res.Text(), "timed out") {
		t.Fatalf("result %q, want a timeout", res.Text())
	}
	if n := len(processesWith("sleep 300.1357")); n != 0 {
		t.Errorf("%d processes of the timed-out command left", n)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	assertNoLeftovers(t, "sleep "+marker)
}

func TestBashSpillFailureIsReported(t *testing.T) {
	defer goleak.VerifyNone(t)
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	b := NewBash(BashOptions{Dir: t.TempDir(), SpillDir: notADir})
	res, err := b.Execute(context.Background(), bashCall(t, "seq 1 30000", 0), func(tool.Partial) {})
	if err != nil || res.IsError {
		t.Fatalf("result %q, %v", res.Text()[:100], err)
	}
	if !strings.Contains(res.Text(), "the full output could not be saved: ") {
		t.Errorf("notice %q does not say the spill file failed", res.Text()[len(res.Text())-200:])
	}
	if d := bashDetails(t, res); !d.Truncated || d.FullOutputPath != "" {
		t.Errorf("details %+v, want truncated without a path", d)
	}
}
