package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/tool"
)

// rpcClient is a JSON-RPC client of the gateway over a real transport
// (a WebSocket, or the two pipes of ServeStdio), as a program would be.
type rpcClient struct {
	t     *testing.T
	send  func([]byte) error
	close func()

	mu      sync.Mutex
	nextID  int64
	waiting map[int64]chan rpcMessage
	// Everything the server sent that was not a response: notifications
	// and its requests, in order.
	incoming chan rpcMessage
	done     chan struct{}
	err      error
}

func newRPCClient(t *testing.T, send func([]byte) error, close func()) *rpcClient {
	return &rpcClient{t: t, send: send, close: close, waiting: map[int64]chan rpcMessage{},
		incoming: make(chan rpcMessage, 200000), done: make(chan struct{})}
}

// deliver is called by the reading goroutine for each frame.
func (c *rpcClient) deliver(b []byte) {
	var m rpcMessage
	if err := json.Unmarshal(b, &m); err != nil {
		c.t.Errorf("the server sent a frame that is not JSON: %v: %s", err, b)
		return
	}
	if m.Method == "" {
		var id int64
		json.Unmarshal(m.ID, &id)
		c.mu.Lock()
		ch := c.waiting[id]
		delete(c.waiting, id)
		c.mu.Unlock()
		if ch != nil {
			ch <- m
		}
		return
	}
	c.incoming <- m
}

func (c *rpcClient) ended(err error) {
	c.mu.Lock()
	c.err = err
	c.mu.Unlock()
	close(c.done)
}

// call sends a request and waits for its response.
func (c *rpcClient) call(method string, params any) rpcMessage {
	c.t.Helper()
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	ch := make(chan rpcMessage, 1)
	c.waiting[id] = ch
	c.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err := c.send(b); err != nil {
		c.t.Fatalf("%s: send: %v", method, err)
	}
	select {
	case m := <-ch:
		return m
	case <-c.done:
		c.t.Fatalf("%s: the connection ended before the answer: %v", method, c.err)
	case <-time.After(10 * time.Second):
		c.t.Fatalf("%s: no answer within 10s", method)
	}
	return rpcMessage{}
}

// result calls and decodes a successful result into out.
func (c *rpcClient) result(method string, params, out any) {
	c.t.Helper()
	m := c.call(method, params)
	if m.Error != nil {
		c.t.Fatalf("%s: error %d %s", method, m.Error.Code, m.Error.Message)
	}
	if out != nil {
		if err := json.Unmarshal(m.Result, out); err != nil {
			c.t.Fatalf("%s: result %s: %v", method, m.Result, err)
		}
	}
}

// answer sends a response to a request of the server.
func (c *rpcClient) answer(id json.RawMessage, result any) {
	c.t.Helper()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
	if err := c.send(b); err != nil {
		c.t.Fatalf("answer: %v", err)
	}
}

// next returns the next notification or request of the server.
func (c *rpcClient) next() rpcMessage {
	c.t.Helper()
	select {
	case m := <-c.incoming:
		return m
	case <-time.After(10 * time.Second):
		c.t.Fatal("no message from the server within 10s")
	case <-c.done:
		select {
		case m := <-c.incoming:
			return m
		default:
		}
		c.t.Fatalf("the connection ended: %v", c.err)
	}
	return rpcMessage{}
}

// eventsUntil collects the params of event notifications until one of
// type typ, and returns them with the other messages seen meanwhile.
func (c *rpcClient) eventsUntil(typ string) (events []json.RawMessage, others []rpcMessage) {
	c.t.Helper()
	for {
		m := c.next()
		if m.Method != "event" {
			others = append(others, m)
			continue
		}
		events = append(events, m.Params)
		var e struct {
			Type string `json:"type"`
		}
		json.Unmarshal(m.Params, &e)
		if e.Type == typ {
			return events, others
		}
	}
}

// dialWS opens GET /v1/ws with the test server's token (or token, when
// given), with dial options changed by opt.
func (tsv *testServer) dialWS(token string, opt func(*websocket.DialOptions)) (*rpcClient, *websocket.Conn) {
	tsv.t.Helper()
	if token == "" {
		token = tsv.token
	}
	o := &websocket.DialOptions{HTTPHeader: http.Header{}}
	if token != "" {
		o.HTTPHeader.Set("Authorization", "Bearer "+token)
	}
	if opt != nil {
		opt(o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(tsv.ts.URL, "http")+"/v1/ws", o)
	if err != nil {
		st := 0
		if resp != nil {
			st = resp.StatusCode
		}
		tsv.t.Fatalf("dial /v1/ws: %d %v", st, err)
	}
	conn.SetReadLimit(64 << 20)
	c := newRPCClient(tsv.t, func(b []byte) error {
		return conn.Write(context.Background(), websocket.MessageText, b)
	}, func() { conn.Close(websocket.StatusNormalClosure, "") })
	go func() {
		for {
			_, b, err := conn.Read(context.Background())
			if err != nil {
				c.ended(err)
				return
			}
			c.deliver(b)
		}
	}()
	tsv.t.Cleanup(func() {
		conn.CloseNow()
		<-c.done
	})
	return c, conn
}

// stdioClient serves ServeStdio over two pipes, as a parent process
// talking to agentloop serve --stdio would.
func (tsv *testServer) stdioClient() *rpcClient {
	tsv.t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- tsv.s.ServeStdio(context.Background(), inR, outW); outW.Close() }()
	c := newRPCClient(tsv.t, func(b []byte) error {
		_, err := inW.Write(append(b, '\n'))
		return err
	}, func() { inW.Close() })
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			if bytes.Contains(sc.Bytes(), []byte("\n")) {
				tsv.t.Errorf("a stdio frame spans lines")
			}
			c.deliver(append([]byte(nil), sc.Bytes()...))
		}
		c.ended(sc.Err())
	}()
	tsv.t.Cleanup(func() {
		inW.Close()
		if err := <-served; err != nil {
			tsv.t.Errorf("ServeStdio: %v", err)
		}
		<-c.done
	})
	return c
}

// sseData is the data of every SSE message up to and including the first
// run_end.
func sseData(t *testing.T, st *sseStream) []string {
	var out []string
	for _, m := range st.until(t, "run_end") {
		out = append(out, m.data)
	}
	return out
}

func rawStrings(rs []json.RawMessage) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return out
}

func eventType(t *testing.T, raw json.RawMessage) (string, int64) {
	t.Helper()
	var e struct {
		Type string `json:"type"`
		Seq  int64  `json:"seq"`
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatalf("event %s: %v", raw, err)
	}
	return e.Type, e.Seq
}

// The notifications of a faux run, over a real WebSocket and over stdio
// pipes, are the SSE data of the same run, byte for byte and in order.
func TestRPCEventsEqualSSE(t *testing.T) {
	for _, transport := range []string{"ws", "stdio"} {
		t.Run(transport, func(t *testing.T) {
			tsv := newTestServer(t, []faux.Step{
				faux.Call("Let me echo <a> & b.", "echo", map[string]any{"text": "x > f && y"}),
				faux.Say("Done: x > f && y."),
			})
			var c *rpcClient
			if transport == "ws" {
				c, _ = tsv.dialWS("", nil)
			} else {
				c = tsv.stdioClient()
			}
			var init map[string]any
			c.result("initialize", map[string]any{"client": map[string]any{"name": "test", "version": "1"}}, &init)
			if init["protocolVersion"] != float64(2) {
				t.Fatalf("initialize: %v", init)
			}
			var sess Session
			c.result("session/create", CreateSessionRequest{Cwd: tsv.cwd}, &sess)
			sse := tsv.events("/v1/sessions/"+sess.ID+"/events", nil)
			var sub subscribeResult
			c.result("events/subscribe", map[string]any{"sessionId": sess.ID}, &sub)
			if sub.Subscription == "" || sub.Resync || sub.Replayed != 0 {
				t.Fatalf("subscribe: %+v", sub)
			}
			var info RunInfo
			c.result("run/start", map[string]any{"sessionId": sess.ID, "input": "echo it", "idempotencyKey": "k1"}, &info)
			if info.RunID == "" {
				t.Fatalf("run/start: %+v", info)
			}
			got, others := c.eventsUntil("run_end")
			if len(others) > 0 {
				t.Errorf("a full-scope client got %d other messages without approvals: %v", len(others), others[0].Method)
			}
			want := sseData(t, sse)
			// The session is idle (and its transcript listed) once its
			// status says so, after run_end.
			for {
				evs, _ := c.eventsUntil(EventSessionStatus)
				var st struct {
					Status string `json:"status"`
				}
				json.Unmarshal(evs[len(evs)-1], &st)
				if st.Status == StatusIdle {
					break
				}
			}
			if g, w := strings.Join(rawStrings(got), "\n"), strings.Join(want, "\n"); g != w {
				t.Fatalf("notifications differ from SSE data:\n--- rpc\n%s\n--- sse\n%s", g, w)
			}
			// The stream is the whole run: seq grows by one, the tool ran.
			var prev int64
			var types []string
			for _, raw := range got {
				typ, seq := eventType(t, raw)
				if prev != 0 && seq != prev+1 {
					t.Fatalf("seq %d after %d", seq, prev)
				}
				prev = seq
				types = append(types, typ)
			}
			joined := strings.Join(types, " ")
			for _, w := range []string{"run_start", "tool_execution_start", "tool_execution_end", "run_end"} {
				if !strings.Contains(joined, w) {
					t.Fatalf("no %s in %s", w, joined)
				}
			}
			var run Run
			c.result("run/get", map[string]any{"runId": info.RunID}, &run)
			if run.ID != info.RunID {
				t.Fatalf("run/get: %+v", run)
			}
			var page MessagePage
			c.result("session/messages", map[string]any{"sessionId": sess.ID}, &page)
			if len(page.Entries) < 4 {
				t.Fatalf("session/messages: %d entries", len(page.Entries))
			}
			var list SessionList
			c.result("session/list", map[string]any{}, &list)
			if len(list.Sessions) != 1 || list.Sessions[0].ID != sess.ID {
				t.Fatalf("session/list: %+v", list)
			}
		})
	}
}

// events/subscribe with afterSeq replays from the ring exactly what came
// after it, then goes live; a seq older than the ring gets one resync.
func TestRPCSubscribeAfterSeq(t *testing.T) {
	tsv := newTestServer(t, []faux.Step{faux.Say("one two three four five six seven eight nine ten"), faux.Say("again")})
	c, _ := tsv.dialWS("", nil)
	var sess Session
	c.result("session/create", CreateSessionRequest{Cwd: tsv.cwd}, &sess)
	var all subscribeResult
	c.result("events/subscribe", map[string]any{"sessionId": sess.ID}, &all)
	c.result("run/start", map[string]any{"sessionId": sess.ID, "input": "count", "idempotencyKey": "a"}, nil)
	first, _ := c.eventsUntil("run_end")
	_, head := eventType(t, first[len(first)-1])
	c.result("events/unsubscribe", map[string]any{"subscription": all.Subscription}, nil)

	// A new connection (the first one may still hold the end of its
	// stream) subscribes after seq k.
	c, _ = tsv.dialWS("", nil)
	const k = 5
	var res subscribeResult
	c.result("events/subscribe", map[string]any{"sessionId": sess.ID, "afterSeq": k}, &res)
	if res.Resync || res.HeadSeq < head || res.Replayed != int(res.HeadSeq-k) {
		t.Fatalf("subscribe afterSeq %d: %+v (head %d)", k, res, head)
	}
	for want := int64(k + 1); want <= res.HeadSeq; want++ {
		m := c.next()
		_, seq := eventType(t, m.Params)
		if m.Method != "event" || seq != want {
			t.Fatalf("replay: got %s seq %d, want seq %d", m.Method, seq, want)
		}
	}
	// Live events follow the replay, with no gap and no repeat.
	c.result("run/start", map[string]any{"sessionId": sess.ID, "input": "again", "idempotencyKey": "b"}, nil)
	live, _ := c.eventsUntil("run_end")
	if _, seq := eventType(t, live[0]); seq != res.HeadSeq+1 {
		t.Fatalf("first live event has seq %d, want %d", seq, res.HeadSeq+1)
	}
	c.result("events/unsubscribe", map[string]any{"subscription": res.Subscription}, nil)

	// A ring of 4 events: afterSeq 0 is too old.
	small := newTestServer(t, []faux.Step{faux.Say("one two three four five six seven eight nine ten")},
		func(cfg *Config, _ *testServer) { cfg.Ring = RingLimit{Events: 4} })
	sc, _ := small.dialWS("", nil)
	var s2 Session
	sc.result("session/create", CreateSessionRequest{Cwd: small.cwd}, &s2)
	info, _ := small.startRun(s2.ID, "count", "a", "")
	small.events("/v1/runs/"+info.RunID+"/events", nil).rest(t)
	var r2 subscribeResult
	sc.result("events/subscribe", map[string]any{"sessionId": s2.ID, "afterSeq": 0}, &r2)
	if !r2.Resync {
		t.Fatalf("afterSeq older than the ring: %+v", r2)
	}
	m := sc.next()
	if typ, _ := eventType(t, m.Params); typ != EventResync {
		t.Fatalf("first message after a resync subscribe: %s", m.Params)
	}
}

// A client with the approve scope gets approval/request for each pending
// action and answers it; the first answer wins, a second client that was
// asked gets approval/resolved, a read-only client only sees the events,
// and a late approval/respond is a conflict.
func TestRPCApprovalRequest(t *testing.T) {
	tokens := TokenSet{"ap1": ScopeAll, "ap2": ScopeRead | ScopeApprove, "ro": ScopeRead}
	tsv := newTestServer(t, []faux.Step{faux.Call("", "echo", map[string]any{"text": "hi"}), faux.Say("done")},
		func(cfg *Config, tsv *testServer) {
			cfg.Tokens = tokens
			tsv.token = "ap1"
			tsv.policy = tool.ApproveAsk
		})
	a, _ := tsv.dialWS("ap1", nil)
	b, _ := tsv.dialWS("ap2", nil)
	ro, _ := tsv.dialWS("ro", nil)
	var sess Session
	a.result("session/create", CreateSessionRequest{Cwd: tsv.cwd}, &sess)
	for _, c := range []*rpcClient{a, b, ro} {
		c.result("events/subscribe", map[string]any{"sessionId": sess.ID}, nil)
	}
	if m := ro.call("run/start", map[string]any{"sessionId": sess.ID, "input": "x", "idempotencyKey": "k"}); m.Error == nil || m.Error.Code != rpcForbidden {
		t.Fatalf("run/start with a read token: %+v", m)
	}
	var info RunInfo
	a.result("run/start", map[string]any{"sessionId": sess.ID, "input": "echo", "idempotencyKey": "k"}, &info)

	waitRequest := func(c *rpcClient) rpcMessage {
		t.Helper()
		for {
			m := c.next()
			if m.Method == "approval/request" {
				return m
			}
		}
	}
	ra, rb := waitRequest(a), waitRequest(b)
	var pa, pb approvalFields
	json.Unmarshal(ra.Params, &pa)
	json.Unmarshal(rb.Params, &pb)
	if pa.ApprovalID == "" || pa.ApprovalID != pb.ApprovalID || pa.ToolName != "echo" || pa.RunID != info.RunID {
		t.Fatalf("approval/request params: %s / %s", ra.Params, rb.Params)
	}
	a.answer(ra.ID, map[string]any{"decision": "allow_once"})
	// b was asked too: it is told the action was resolved, and by whom.
	for {
		m := b.next()
		if m.Method == "approval/resolved" {
			var r approvalFields
			json.Unmarshal(m.Params, &r)
			if r.ApprovalID != pa.ApprovalID || r.Decision != "allow_once" || r.By != "client" {
				t.Fatalf("approval/resolved: %s", m.Params)
			}
			break
		}
	}
	// b's answer after that changes nothing; approval/respond says why.
	b.answer(rb.ID, map[string]any{"decision": "deny"})
	if m := b.call("approval/respond", map[string]any{"approvalId": pa.ApprovalID, "decision": "deny"}); m.Error == nil || m.Error.Code != rpcConflict {
		t.Fatalf("second approval/respond: %+v", m)
	}
	evs, others := ro.eventsUntil("run_end")
	for _, o := range others {
		if o.Method == "approval/request" {
			t.Fatalf("a read-only client was asked to approve")
		}
	}
	var sawRequested, sawEnd bool
	for _, raw := range evs {
		var e struct {
			Type    string `json:"type"`
			IsError bool   `json:"isError"`
		}
		json.Unmarshal(raw, &e)
		sawRequested = sawRequested || e.Type == EventApprovalRequested
		if e.Type == "tool_execution_end" {
			sawEnd = true
			if e.IsError {
				t.Fatalf("the approved call failed: %s", raw)
			}
		}
	}
	if !sawRequested || !sawEnd {
		t.Fatalf("read-only client: requested %v, tool end %v", sawRequested, sawEnd)
	}
	var run Run
	a.result("run/get", map[string]any{"runId": info.RunID}, &run)
	if run.Status != RunSucceeded {
		t.Fatalf("run: %+v", run)
	}
}

// A subscribe while an action is pending re-sends it: a client that
// reconnects is asked again on its new connection.
func TestRPCApprovalAfterReconnect(t *testing.T) {
	tsv := newTestServer(t, []faux.Step{faux.Call("", "echo", map[string]any{"text": "hi"}), faux.Say("done")},
		func(cfg *Config, tsv *testServer) { tsv.policy = tool.ApproveAsk })
	first, conn := tsv.dialWS("", nil)
	var sess Session
	first.result("session/create", CreateSessionRequest{Cwd: tsv.cwd}, &sess)
	first.result("events/subscribe", map[string]any{"sessionId": sess.ID}, nil)
	first.result("run/start", map[string]any{"sessionId": sess.ID, "input": "echo", "idempotencyKey": "k"}, nil)
	for first.next().Method != "approval/request" {
	}
	conn.Close(websocket.StatusNormalClosure, "")
	<-first.done

	again, _ := tsv.dialWS("", nil)
	again.result("events/subscribe", map[string]any{"sessionId": sess.ID}, nil)
	var req rpcMessage
	for req = again.next(); req.Method != "approval/request"; req = again.next() {
	}
	again.answer(req.ID, map[string]any{"decision": "allow_session"})
	evs, _ := again.eventsUntil("run_end")
	var e struct {
		Reason string `json:"reason"`
	}
	json.Unmarshal(evs[len(evs)-1], &e)
	if e.Reason != "stop" {
		t.Fatalf("run_end after reconnect: %s", evs[len(evs)-1])
	}
}

// smallRecvBuf makes the client's socket buffer small, so a client that
// stops reading fills the server's queue soon.
func smallRecvBuf(o *websocket.DialOptions) {
	d := &net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	o.HTTPClient = &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// A client that stops reading is closed with 1008 "slow consumer" once its
// queue is full, what the server held for it is freed, and a resume from
// the last seq it saw has no gap.
func TestRPCSlowConsumer(t *testing.T) {
	// ~14,000 deltas (about 2 MB of events), all kept in the ring.
	long := strings.Repeat("many words of a long answer ", 8000)
	tsv := newTestServer(t, []faux.Step{faux.Say(long)}, func(cfg *Config, _ *testServer) {
		cfg.ClientQueue = QueueLimit{Frames: 64, Bytes: 1 << 20}
		cfg.Ring = RingLimit{Events: 100_000, Bytes: 256 << 20}
	})
	// The slow client reads by hand, so it can stop.
	ctx := context.Background()
	o := &websocket.DialOptions{}
	smallRecvBuf(o)
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(tsv.ts.URL, "http")+"/v1/ws", o)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(64 << 20)
	var sess Session
	tsv.do("POST", "/v1/sessions", CreateSessionRequest{Cwd: tsv.cwd}, &sess)
	conn.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":1,"method":"events/subscribe","params":{"sessionId":"`+sess.ID+`"}}`))
	if _, b, err := conn.Read(ctx); err != nil || !bytes.Contains(b, []byte(`"subscription"`)) {
		t.Fatalf("subscribe: %s %v", b, err)
	}
	info, _ := tsv.startRun(sess.ID, "talk", "k", "")
	// Stop reading until the server has cut the subscription.
	deadline := time.Now().Add(20 * time.Second)
	for {
		ss, _ := tsv.s.session(sess.ID)
		ss.emu.Lock()
		n := len(ss.subs)
		ss.emu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a client that did not read was not cut")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Now read what was sent: events in order, then the close frame.
	var last int64
	for {
		_, b, err := conn.Read(ctx)
		if err != nil {
			if st := websocket.CloseStatus(err); st != websocket.StatusPolicyViolation {
				t.Fatalf("closed with %v (%v), want 1008", st, err)
			}
			var ce websocket.CloseError
			if errors.As(err, &ce) && ce.Reason != "slow consumer" {
				t.Fatalf("close reason %q", ce.Reason)
			}
			break
		}
		var m rpcMessage
		json.Unmarshal(b, &m)
		_, seq := eventType(t, m.Params)
		if last != 0 && seq != last+1 {
			t.Fatalf("seq %d after %d", seq, last)
		}
		last = seq
	}
	if q := tsv.s.queuedBytes.Load(); q != 0 {
		t.Fatalf("%d bytes still queued for clients after the slow one was closed", q)
	}
	// Resume from the last seq seen, once the run is over: everything
	// after it, once, to run_end.
	tsv.waitRunEnd(info.RunID)
	c, _ := tsv.dialWS("", nil)
	var res subscribeResult
	c.result("events/subscribe", map[string]any{"runId": info.RunID, "afterSeq": last}, &res)
	if res.Resync {
		t.Fatalf("resume after %d needed a resync: %+v", last, res)
	}
	t.Logf("slow client saw up to seq %d; resume: %+v", last, res)
	evs, _ := c.eventsUntil("run_end")
	for i, raw := range evs {
		if _, seq := eventType(t, raw); seq != last+1+int64(i) {
			t.Fatalf("resumed event %d has seq %d, want %d", i, seq, last+1+int64(i))
		}
	}
}

// A client that does not answer pings is closed; -32001 answers a request
// over the in-flight cap; a WebSocket without a valid token is refused at
// the upgrade.
func TestRPCPingOverloadAuth(t *testing.T) {
	tsv := newTestServer(t, nil, func(cfg *Config, tsv *testServer) {
		cfg.MaxInflight = 2
		cfg.Tokens = TokenSet{"good": ScopeAll}
		tsv.token = "good"
	})
	ctx := context.Background()
	url := "ws" + strings.TrimPrefix(tsv.ts.URL, "http") + "/v1/ws"
	for _, tok := range []string{"", "bad"} {
		h := http.Header{}
		if tok != "" {
			h.Set("Authorization", "Bearer "+tok)
		}
		_, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: h})
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("token %q: %v %v", tok, resp, err)
		}
	}
	// A token in the URL is not a token.
	if _, resp, err := websocket.Dial(ctx, url+"?token=good", nil); err == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("token in the query: %v", err)
	}

	// No reads, so no pongs: the server closes within a few heartbeats.
	pinging := newTestServer(t, nil, func(cfg *Config, _ *testServer) { cfg.Heartbeat = 50 * time.Millisecond })
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(pinging.ts.URL, "http")+"/v1/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	time.Sleep(500 * time.Millisecond)
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, _, err = conn.Read(rctx)
	if st := websocket.CloseStatus(err); st != websocket.StatusPolicyViolation {
		t.Fatalf("a client without pongs: %v", err)
	}

	c, _ := tsv.dialWS("", nil)
	for range cap(tsv.s.inflight) {
		tsv.s.inflight <- struct{}{}
	}
	m := c.call("session/list", nil)
	for range cap(tsv.s.inflight) {
		<-tsv.s.inflight
	}
	if m.Error == nil || m.Error.Code != rpcOverloaded {
		t.Fatalf("over the in-flight cap: %+v", m)
	}
	if m := c.call("session/list", nil); m.Error != nil {
		t.Fatalf("after: %+v", m.Error)
	}
	if m := c.call("no/such", nil); m.Error == nil || m.Error.Code != rpcMethodNotFound {
		t.Fatalf("unknown method: %+v", m)
	}
}

// waitRunEnd polls GET /v1/runs/{id} until the run has ended (a stream
// would be cut, in a test that makes clients slow on purpose).
func (tsv *testServer) waitRunEnd(runID string) Run {
	tsv.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var run Run
		tsv.do("GET", "/v1/runs/"+runID, nil, &run)
		if !run.EndedAt.IsZero() {
			return run
		}
		if time.Now().After(deadline) {
			tsv.t.Fatalf("run %s did not end: %+v", runID, run)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Shutdown closes open WebSockets with 1001 and ends ServeStdio, and waits
// for both.
func TestRPCShutdown(t *testing.T) {
	tsv := newTestServer(t, nil)
	c, _ := tsv.dialWS("", nil)
	var sess Session
	c.result("session/create", CreateSessionRequest{Cwd: tsv.cwd}, &sess)
	c.result("events/subscribe", map[string]any{"sessionId": sess.ID}, nil)
	inR, inW := io.Pipe()
	defer inW.Close()
	served := make(chan error, 1)
	go func() { served <- tsv.s.ServeStdio(context.Background(), inR, io.Discard) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tsv.s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	<-c.done
	if st := websocket.CloseStatus(c.err); st != websocket.StatusGoingAway {
		t.Fatalf("WebSocket closed with %v (%v), want 1001", st, c.err)
	}
	if err := <-served; !errors.Is(err, errShutdown) {
		t.Fatalf("ServeStdio after Shutdown: %v", err)
	}
}

// Event types a client opts out of in initialize are not sent to it; the
// rest come as ever.
func TestRPCOptOut(t *testing.T) {
	tsv := newTestServer(t, []faux.Step{faux.Say("a reply in several deltas, long enough to split")})
	c := tsv.stdioClient()
	c.result("initialize", map[string]any{"capabilities": map[string]any{"optOut": []string{"message_update"}}}, nil)
	var sess Session
	c.result("session/create", CreateSessionRequest{Cwd: tsv.cwd}, &sess)
	c.result("events/subscribe", map[string]any{"sessionId": sess.ID}, nil)
	c.result("run/start", map[string]any{"sessionId": sess.ID, "input": "hi", "idempotencyKey": "k"}, nil)
	evs, _ := c.eventsUntil("run_end")
	var sawEnd bool
	for _, raw := range evs {
		typ, _ := eventType(t, raw)
		if typ == "message_update" {
			t.Fatalf("an opted-out type was sent: %s", raw)
		}
		sawEnd = sawEnd || typ == "message_end"
	}
	if !sawEnd {
		t.Fatal("no message_end")
	}
}
