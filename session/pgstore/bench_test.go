package pgstore

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/session"
)

// BenchmarkAppend is one fenced append (one statement, one round trip)
// to a local PostgreSQL with fsync off, as the tests run it.
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	st, err := New(ctx, newPoolTB(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	s, err := st.Create(ctx, session.CreateOptions{Cwd: "/bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Append(ctx, session.MessageEntry(llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text("go")}})); err != nil {
		b.Fatal(err)
	}
	e := session.CustomEntry("n", json.RawMessage(`{"text":"a tool result of a few dozen bytes, as most are"}`))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Append(ctx, e); err != nil {
			b.Fatal(err)
		}
	}
}
