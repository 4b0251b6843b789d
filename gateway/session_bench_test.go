package gateway

import (
	"context"
	"strconv"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
)

// BenchmarkGetSession is GET /v1/sessions/{id}'s work (Server.GetSession)
// on a session whose transcript has entries messages: its cost should not
// grow with the transcript once the store has summed it up.
//
//	go test -run '^$' -bench BenchmarkGetSession -benchmem ./gateway
func BenchmarkGetSession(b *testing.B) {
	for _, entries := range []int{100, 10_000} {
		b.Run(strconv.Itoa(entries), func(b *testing.B) {
			store := session.NewJSONLStore(b.TempDir())
			id := bigSession(b, store, entries)
			rn, err := runner.New(runner.Config{Store: store})
			if err != nil {
				b.Fatal(err)
			}
			defer rn.Close()
			s, err := New(Config{Runner: rn, Store: store, Prepare: func(context.Context, RunSettings) (runner.Request, error) {
				return runner.Request{}, nil
			}})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Shutdown(context.Background())
			ctx := context.Background()
			if v, e := s.GetSession(ctx, id); e != nil || v.Messages != entries {
				b.Fatalf("%+v %v", v, e)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, e := s.GetSession(ctx, id); e != nil {
					b.Fatal(e)
				}
			}
		})
	}
}

// bigSession writes a session of n messages, user and assistant in turn.
func bigSession(tb testing.TB, store *session.JSONLStore, n int) string {
	tb.Helper()
	ctx := context.Background()
	sess, err := store.Create(ctx, session.CreateOptions{Cwd: tb.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	defer sess.Close()
	for i := range n {
		m := llm.UserText("question " + strconv.Itoa(i) + ": what is in the file, and why is it there?")
		if i%2 == 1 {
			m = llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text("an answer of a sentence or two about the file, number " + strconv.Itoa(i))}}
		}
		if _, err := sess.Append(ctx, session.Entry{Type: session.EntryMessage, Message: &m}); err != nil {
			tb.Fatal(err)
		}
	}
	return sess.ID()
}
