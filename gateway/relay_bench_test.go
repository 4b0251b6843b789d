package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// The trivial relay of BenchmarkGatewayStreams (server=relay): the same
// routes as the gateway's that the benchmark uses, and nothing else. A run
// is one streaming request to the model whose text deltas are handed to the
// session's open SSE stream, which writes and flushes each at once. No
// runner, no session store, no seq, no ring: what the machine (its
// scheduler, loopback TCP, the clients in the parent) adds to an event's
// delay, measured the same way as the gateway's.

// benchRelayEnv tells TestBenchServerChild to serve the relay.
const benchRelayEnv = "AGENTLOOP_GATEWAY_BENCH_RELAY"

// relayStream is a session of the relay: the frames for its open stream.
type relayStream struct{ ch chan []byte }

func serveRelay(t *testing.T, base string) {
	tr := &http.Transport{MaxIdleConnsPerHost: 1000}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	var (
		mu      sync.Mutex
		streams = map[string]*relayStream{}
		n       atomic.Int64
		runs    sync.WaitGroup
	)
	get := func(id string) *relayStream {
		mu.Lock()
		defer mu.Unlock()
		return streams[id]
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/sessions", func(w http.ResponseWriter, r *http.Request) {
		id := "rs" + strconv.FormatInt(n.Add(1), 10)
		mu.Lock()
		streams[id] = &relayStream{ch: make(chan []byte, 1024)}
		mu.Unlock()
		json.NewEncoder(w).Encode(Session{ID: id})
	})
	mux.HandleFunc("GET /v1/sessions/{id}/events", func(w http.ResponseWriter, r *http.Request) {
		st := get(r.PathValue("id"))
		if st == nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fl := w.(http.Flusher)
		io.WriteString(w, "retry: 2000\n\n")
		fl.Flush()
		for {
			select {
			case b := <-st.ch:
				if _, err := w.Write(b); err != nil {
					return
				}
				fl.Flush()
			case <-r.Context().Done():
				return
			}
		}
	})
	mux.HandleFunc("POST /v1/sessions/{id}/runs", func(w http.ResponseWriter, r *http.Request) {
		st := get(r.PathValue("id"))
		if st == nil {
			http.NotFound(w, r)
			return
		}
		runID := "rr" + strconv.FormatInt(n.Add(1), 10)
		json.NewEncoder(w).Encode(RunInfo{RunID: runID, SessionID: r.PathValue("id"), Status: RunRunning})
		runs.Add(1)
		go func() {
			defer runs.Done()
			relayRun(hc, base, runID, st.ch)
		}()
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	fmt.Printf("listening http://%s\n", ln.Addr())
	io.Copy(io.Discard, os.Stdin) // until the benchmark closes our stdin
	srv.Close()
	runs.Wait()
}

// relayRun streams one model reply and sends each text delta on as a
// message_update, then a run_end.
func relayRun(hc *http.Client, base, runID string, out chan<- []byte) {
	defer func() { out <- []byte(`data: {"type":"run_end","runId":"` + runID + `"}` + "\n\n") }()
	body := `{"model":"mock-model","stream":true,"messages":[{"role":"user","content":"stream please"}]}`
	resp, err := hc.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		return
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	var chunk struct {
		Choices []struct {
			Delta struct {
				Content string `json:"content"`
			} `json:"delta"`
		} `json:"choices"`
	}
	for {
		line, err := rd.ReadSlice('\n')
		if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok && !bytes.HasPrefix(data, []byte("[DONE]")) {
			chunk.Choices = nil
			if json.Unmarshal(data, &chunk) == nil && len(chunk.Choices) > 0 && chunk.Choices[0].Delta.Content != "" {
				delta, _ := json.Marshal(chunk.Choices[0].Delta.Content)
				out <- []byte(`data: {"type":"message_update","runId":"` + runID + `","event":"text_delta","delta":` + string(delta) + "}\n\n")
			}
		}
		if err != nil {
			return
		}
	}
}
