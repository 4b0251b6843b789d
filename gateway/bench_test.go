package gateway

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/openai"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
)

// The gateway's load benchmark (docs/benchmarks.md): N sessions, each with
// an open SSE stream, and 100 runs streaming at once from mockllm over real
// HTTP. The server runs in a child process (this test binary again, as
// TestBenchServerChild), so its peak RSS is its own and not the clients'.
// Between the server and mockllm sits a proxy that paces mockllm's text
// deltas like a model (one every -bench.tick) and stamps each with the
// moment it leaves for the server: a client's receive time minus the stamp
// is the delay from the model's byte to the client's.
//
//	go test -run '^$' -bench BenchmarkGatewayStreams -benchtime 3x ./gateway

const benchChildEnv = "AGENTLOOP_GATEWAY_BENCH_CHILD"

// TestBenchServerChild is the server of the benchmark; it does nothing
// unless the benchmark started it.
func TestBenchServerChild(t *testing.T) {
	base := os.Getenv(benchChildEnv)
	if base == "" {
		t.Skip("the gateway benchmark's server process; runs only when BenchmarkGatewayStreams starts it")
	}
	if os.Getenv(benchRelayEnv) != "" {
		serveRelay(t, base)
		return
	}
	store := session.NewJSONLStore(t.TempDir())
	rn, err := runner.New(runner.Config{Store: store, LaneCaps: map[string]int{runner.LaneMain: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	info := llm.ModelInfo{ID: "mock-model", Provider: "openai", API: llm.APIOpenAICompletions, ContextWindow: 128_000, MaxTokens: 4096}
	tr := &http.Transport{MaxIdleConnsPerHost: 1000}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	s, err := New(Config{Runner: rn, Store: store,
		Prepare: func(ctx context.Context, rs RunSettings) (runner.Request, error) {
			m := openai.New(openai.Config{Info: info, APIKey: "sk-mock", BaseURL: base + "/v1", HTTPClient: hc})
			return runner.Request{Model: m, Info: info, Retry: &runner.RetryPolicy{Base: time.Millisecond}}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: s.Handler()}
	go srv.Serve(ln)
	fmt.Printf("listening http://%s\n", ln.Addr())
	io.Copy(io.Discard, os.Stdin) // until the benchmark closes our stdin
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.Shutdown(ctx)
	srv.Shutdown(ctx)
	rn.Close()
}

var (
	mockOnce sync.Once
	mockBin  string
	mockErr  error
)

// benchMockLLM starts mockllm (built from shared/bench beside the checkout)
// on a free port.
func benchMockLLM(b *testing.B, args ...string) string {
	mockOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gateway-bench-")
		if err != nil {
			mockErr = err
			return
		}
		mockBin = filepath.Join(dir, "mockllm")
		cmd := exec.Command("go", "build", "-o", mockBin, ".")
		cmd.Dir = filepath.Join("..", "..", "shared", "bench", "mockllm")
		if out, err := cmd.CombinedOutput(); err != nil {
			mockErr = fmt.Errorf("%v: %s", err, out)
		}
	})
	if mockErr != nil {
		b.Skipf("mockllm cannot be built from ../shared/bench/mockllm: %v", mockErr)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(mockBin, append([]string{"-addr", addr}, args...)...)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	poll := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for i := 0; ; i++ {
		if resp, err := poll.Get("http://" + addr + "/stats"); err == nil {
			resp.Body.Close()
			return "http://" + addr
		}
		if i > 300 {
			b.Fatal("mockllm did not come up")
		}
		time.Sleep(10 * time.Millisecond) // polling a child process's port
	}
}

// stampProxy forwards to mockllm and rewrites each text delta ("word ")
// into "@<unix ns> " as it sends it on, tick after the previous one.
func stampProxy(b *testing.B, upstream string, tick time.Duration) string {
	word := []byte(`"content":"word "`)
	tr := &http.Transport{DisableKeepAlives: true}
	b.Cleanup(tr.CloseIdleConnections)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, upstream+r.URL.Path, r.Body)
		req.Header = r.Header.Clone()
		resp, err := tr.RoundTrip(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		fl := w.(http.Flusher)
		rd := bufio.NewReader(resp.Body)
		for {
			line, err := rd.ReadBytes('\n')
			if i := bytes.Index(line, word); i >= 0 {
				time.Sleep(tick)
				stamp := `"content":"@` + strconv.FormatInt(time.Now().UnixNano(), 10) + ` "`
				line = append(append(append([]byte{}, line[:i]...), stamp...), line[i+len(word):]...)
			}
			w.Write(line)
			if len(line) > 0 && line[len(line)-1] == '\n' {
				fl.Flush()
			}
			if err != nil {
				return
			}
		}
	})
	ts := httptest.NewServer(h)
	b.Cleanup(ts.Close)
	return ts.URL
}

// benchServer is the server child.
type benchServer struct {
	url   string
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// startBenchServer starts the server child: the gateway, or the trivial
// relay (relay_bench_test.go). GATEWAY_BENCH_CPUPROFILE profiles the
// gateway's child; both take the test flags in GATEWAY_BENCH_CHILD_FLAGS
// (-test.trace, -test.blockprofile, -test.mutexprofile ...) for go tool
// trace and pprof, so -bench should then select one case, as each child
// writes the same files.
func startBenchServer(b *testing.B, base string, relay bool) *benchServer {
	args := []string{"-test.run", "^TestBenchServerChild$", "-test.v"}
	env := append(os.Environ(), benchChildEnv+"="+base)
	if relay {
		env = append(env, benchRelayEnv+"=1")
	} else if p := os.Getenv("GATEWAY_BENCH_CPUPROFILE"); p != "" { // the gateway's profile, for go tool pprof
		args = append(args, "-test.cpuprofile", p)
	}
	args = append(args, strings.Fields(os.Getenv("GATEWAY_BENCH_CHILD_FLAGS"))...)
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = env
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	bs := &benchServer{cmd: cmd, stdin: stdin}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
			bs.url = u
			break
		}
	}
	go io.Copy(io.Discard, out)
	if bs.url == "" {
		cmd.Process.Kill()
		cmd.Wait()
		b.Fatal("the server child did not start")
	}
	b.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return bs
}

// procKiB reads a field (VmRSS, VmHWM) of /proc/<pid>/status, in KiB.
func procKiB(pid int, field string) int64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// loadAvg1 is the machine's load average over the last minute.
func loadAvg1() float64 {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// procCPU is the CPU time (user + system) process pid has used.
func procCPU(pid int) time.Duration {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	// The fields after the command name, which is in parentheses.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}

// benchStream is one client's SSE stream of a session.
type benchStream struct {
	events atomic.Int64
	ends   chan string // runIds of run_end events
	mu     sync.Mutex
	delays []time.Duration
}

// readSSE reads an SSE stream's data lines.
func (st *benchStream) readSSE(body io.ReadCloser) {
	defer body.Close()
	rd := bufio.NewReaderSize(body, 16<<10)
	for {
		line, err := rd.ReadSlice('\n')
		if err != nil {
			return
		}
		if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			st.handle(data, time.Now())
		}
	}
}

// readWS reads a WebSocket's event notifications.
func (st *benchStream) readWS(ctx context.Context, c *websocket.Conn) {
	defer c.CloseNow()
	var m struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			return
		}
		now := time.Now()
		m.Method, m.Params = "", nil
		if json.Unmarshal(b, &m) == nil && m.Method == "event" {
			st.handle(m.Params, now)
		}
	}
}

// handle counts one event received at now, and its delay when it is a
// stamped text delta.
func (st *benchStream) handle(data []byte, now time.Time) {
	var ev struct {
		Type  string `json:"type"`
		RunID string `json:"runId"`
		Event string `json:"event"`
		Delta string `json:"delta"`
	}
	st.events.Add(1)
	if json.Unmarshal(data, &ev) != nil {
		return
	}
	if ev.Type == "message_update" && ev.Event == "text_delta" && strings.HasPrefix(ev.Delta, "@") {
		if ns, err := strconv.ParseInt(strings.TrimSpace(ev.Delta[1:]), 10, 64); err == nil {
			st.mu.Lock()
			st.delays = append(st.delays, now.Sub(time.Unix(0, ns)))
			st.mu.Unlock()
		}
	}
	if ev.Type == "run_end" {
		st.ends <- ev.RunID
	}
}

func BenchmarkGatewayStreams(b *testing.B) {
	runs, _ := strconv.Atoi(cmp.Or(os.Getenv("GATEWAY_BENCH_RUNS"), "100"))
	face := cmp.Or(os.Getenv("GATEWAY_BENCH_FACE"), "sse") // or ws: events/subscribe over GET /v1/ws
	const deltas = 50
	tick := 20 * time.Millisecond // 50 deltas a second per run
	// server=relay is the trivial relay beside the gateway (SSE only):
	// the same streams from the same mockllm through the same proxy to the
	// same clients, so what the machine adds to the delays shows beside
	// what the gateway adds.
	servers := []string{"gateway", "relay"}
	if face != "sse" {
		servers = servers[:1]
	}
	for _, streams := range []int{250, 500, 1000} {
		for _, server := range servers {
			b.Run(fmt.Sprintf("%s/streams=%d/runs=%d/server=%s", face, streams, runs, server), func(b *testing.B) {
				benchStreams(b, face, server == "relay", streams, runs, deltas, tick)
			})
		}
	}
}

// benchStreams is one case of BenchmarkGatewayStreams: streams open
// sessions, runs of them streaming at once, against the gateway or the
// relay.
func benchStreams(b *testing.B, face string, relay bool, streams, runs, deltas int, tick time.Duration) {
	mock := benchMockLLM(b, "-rounds", "0", "-text", strconv.Itoa(deltas))
	bs := startBenchServer(b, stampProxy(b, mock, tick), relay)
	pid := bs.cmd.Process.Pid
	ctr := &http.Transport{DisableKeepAlives: true}
	client := &http.Client{Transport: ctr}
	post := func(path string, body any, out any) {
		bb, _ := json.Marshal(body)
		resp, err := client.Post(bs.url+path, "application/json", bytes.NewReader(bb))
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode >= 300 {
			msg, _ := io.ReadAll(resp.Body)
			b.Fatalf("POST %s: %d %s", path, resp.StatusCode, msg)
		}
		if out != nil {
			json.NewDecoder(resp.Body).Decode(out)
		}
	}
	cwd := b.TempDir()
	rssBefore := procKiB(pid, "VmRSS")
	ids := make([]string, streams)
	sts := make([]*benchStream, streams)
	ctx, cancel := context.WithCancel(context.Background())
	var readers sync.WaitGroup
	b.Cleanup(func() { cancel(); readers.Wait(); ctr.CloseIdleConnections() })
	for i := range streams {
		var s Session
		post("/v1/sessions", CreateSessionRequest{Cwd: cwd}, &s)
		ids[i] = s.ID
		sts[i] = &benchStream{ends: make(chan string, 64)}
		if face == "ws" {
			c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(bs.url, "http")+"/v1/ws", &websocket.DialOptions{HTTPClient: client})
			if err != nil {
				b.Fatalf("dial %d: %v", i, err)
			}
			c.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":1,"method":"events/subscribe","params":{"sessionId":"`+s.ID+`"}}`))
			if _, ans, err := c.Read(ctx); err != nil || !bytes.Contains(ans, []byte(`"subscription"`)) {
				b.Fatalf("subscribe %d: %s %v", i, ans, err)
			}
			readers.Add(1)
			go func() { defer readers.Done(); sts[i].readWS(ctx, c) }()
			continue
		}
		req, _ := http.NewRequestWithContext(ctx, "GET", bs.url+"/v1/sessions/"+s.ID+"/events", nil)
		resp, err := client.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("open stream %d: %v %v", i, err, resp)
		}
		readers.Add(1)
		go func() { defer readers.Done(); sts[i].readSSE(resp.Body) }()
	}
	time.Sleep(500 * time.Millisecond) // let the server settle before reading its RSS
	rssIdle := procKiB(pid, "VmRSS")

	b.ResetTimer()
	cpu0 := procCPU(pid)
	start := time.Now()
	var before int64
	for _, st := range sts {
		before += st.events.Load()
	}
	for n := range b.N {
		var wg sync.WaitGroup
		for i := range runs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var info RunInfo
				post("/v1/sessions/"+ids[i]+"/runs", map[string]any{"input": "stream please", "idempotencyKey": fmt.Sprintf("k%d", n)}, &info)
				for {
					select {
					case id := <-sts[i].ends:
						if id == info.RunID {
							return
						}
					case <-time.After(60 * time.Second):
						b.Errorf("run %s on session %d did not end", info.RunID, i)
						return
					}
				}
			}()
		}
		wg.Wait()
	}
	elapsed := time.Since(start)
	cpu := procCPU(pid) - cpu0
	b.StopTimer()
	var events int64
	var delays []time.Duration
	for _, st := range sts {
		events += st.events.Load()
		st.mu.Lock()
		delays = append(delays, st.delays...)
		st.mu.Unlock()
	}
	events -= before
	slices.Sort(delays)
	pct := func(p float64) float64 {
		if len(delays) == 0 {
			return 0
		}
		return float64(delays[int(float64(len(delays)-1)*p)].Microseconds()) / 1000
	}
	if want := b.N * runs * (deltas - 1); len(delays) < want { // the last delta is "done", not stamped
		b.Errorf("%d stamped deltas reached the clients, want %d", len(delays), want)
	}
	b.ReportMetric(float64(events)/elapsed.Seconds(), "events/s")
	// The server's own CPU, whatever else the machine runs: what
	// the load costs it, per event and as a share of one core.
	b.ReportMetric(float64(cpu.Microseconds())/float64(max(events, 1)), "server-µs/event")
	b.ReportMetric(100*cpu.Seconds()/elapsed.Seconds(), "server-cpu-%")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.90), "p90-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(pct(1), "max-ms")
	// The machine's load as the case ends: the delays mean little without it.
	b.ReportMetric(loadAvg1(), "load1")
	b.ReportMetric(float64(procKiB(pid, "VmHWM"))/1024, "peak-MiB")
	b.ReportMetric(float64(rssIdle)/1024, "idle-MiB")
	b.ReportMetric(float64(rssIdle-rssBefore)/float64(streams), "KiB/stream")
}
