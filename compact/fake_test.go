package compact

import (
	"context"
	"iter"
	"strings"
	"sync"
	"time"

	"github.com/agentloop/agentloop/llm"
)

// fakeModel is a summariser model: it fails its first fail calls with err
// (or every call when always is set), then answers with a short summary.
type fakeModel struct {
	mu     sync.Mutex
	fail   int
	always bool
	err    error
	calls  int
	reqs   []*llm.Request
	// block, when set, makes a call wait for ctx to end.
	block bool
}

func (f *fakeModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		f.mu.Lock()
		f.calls++
		n := f.calls
		f.reqs = append(f.reqs, req)
		f.mu.Unlock()
		if f.block {
			<-ctx.Done()
		}
		if err := ctx.Err(); err != nil {
			yield(llm.Event{}, err)
			return
		}
		if f.always || n <= f.fail {
			if !yield(llm.Event{Type: llm.EventStart}, nil) {
				return
			}
			msg := &llm.Message{Role: llm.RoleAssistant, StopReason: llm.StopReasonError, ErrorMessage: f.err.Error()}
			yield(llm.Event{Type: llm.EventError, Message: msg, Err: f.err}, nil)
			return
		}
		text := "## Goal\nsummary " + strings.Repeat("s", 200)
		msg := &llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text(text)}, StopReason: llm.StopReasonStop}
		yield(llm.Event{Type: llm.EventStart}, nil)
		yield(llm.Event{Type: llm.EventDone, Message: msg}, nil)
	}
}

func (f *fakeModel) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func (f *fakeModel) lastPrompt() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.reqs) == 0 {
		return ""
	}
	return f.reqs[len(f.reqs)-1].Messages[0].Text()
}

// sleeps records the waits a Summarizer asked for, without waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func half() float64 { return 0.5 }

// recorder keeps what a Compactor recorded.
type recorder struct {
	compactions []CompactionRecord
	truncations []Truncation
	snips       []SnipRecord
	err         error
}

func (r *recorder) RecordCompaction(_ context.Context, rec CompactionRecord) error {
	r.compactions = append(r.compactions, rec)
	return r.err
}

func (r *recorder) RecordTruncations(_ context.Context, recs []Truncation) error {
	r.truncations = append(r.truncations, recs...)
	return r.err
}

func (r *recorder) RecordSnip(_ context.Context, rec SnipRecord) error {
	r.snips = append(r.snips, rec)
	return r.err
}
