package gateway

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
)

// BenchmarkEmit measures one event of a session going to its ring and to
// n subscribers whose clients keep up (each drained by a goroutine, as an
// SSE handler drains it).
func BenchmarkEmit(b *testing.B) {
	for _, n := range []int{0, 1, 100, 1000} {
		b.Run(fmt.Sprintf("subscribers=%d", n), func(b *testing.B) {
			rn, err := runner.New(runner.Config{})
			if err != nil {
				b.Fatal(err)
			}
			defer rn.Close()
			s, err := New(Config{Runner: rn, Store: session.NewJSONLStore(b.TempDir()),
				Prepare: func(context.Context, RunSettings) (runner.Request, error) { return runner.Request{}, nil }})
			if err != nil {
				b.Fatal(err)
			}
			v, e := s.CreateSession(context.Background(), CreateSessionRequest{Cwd: b.TempDir()})
			if e != nil {
				b.Fatal(e)
			}
			ss, _ := s.session(v.ID)
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			for range n {
				sub, _, e := s.subscribe(v.ID, "", -1)
				if e != nil {
					b.Fatal(e)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer sub.Close()
					for {
						if _, err := sub.next(ctx, nil); err != nil {
							return
						}
					}
				}()
			}
			data := []byte(`{"v":2,"type":"message_update","seq":0,"runId":"run_x","sessionId":"s","turn":1,"event":"text_delta","contentIndex":0,"delta":"Hello, wor"}`)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				s.emit(ss, "message_update", "run_x", func(int64) []byte { return data })
			}
			b.StopTimer()
			cancel()
			wg.Wait()
		})
	}
}
