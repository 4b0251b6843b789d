package gateway

import (
	"net/http"
	"runtime"
	"testing"
)

// An idle SSE stream holds no write buffer: its heap cost (both ends
// here, as the client is in this process too) stays well under the 32 KiB
// buffer each stream used to keep for its whole life.
func TestIdleSSEStreamsHoldNoWriteBuffer(t *testing.T) {
	tsv := newTestServer(t, nil)
	const n = 100
	ids := make([]string, n)
	for i := range ids {
		ids[i] = tsv.newSession().ID
	}
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	resps := make([]*http.Response, n)
	for i, id := range ids {
		resps[i] = tsv.request("GET", "/v1/sessions/"+id+"/events", nil, nil)
		if resps[i].StatusCode != http.StatusOK {
			t.Fatalf("stream %d: %d", i, resps[i].StatusCode)
		}
	}
	per := (int64(heap()) - int64(before)) / n
	for _, r := range resps {
		r.Body.Close()
	}
	t.Logf("heap per idle stream, client and server: %d B", per)
	if per > 45<<10 { // measured: about 29 KiB without one, 61 KiB with one
		t.Fatalf("heap per idle stream %d B: a write buffer per stream", per)
	}
}
