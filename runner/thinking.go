package runner

import (
	"context"
	"iter"
	"sync"

	"github.com/agentloop/agentloop/llm"
)

// attemptModel is the model the agent calls, with what the cascade may
// change between attempts: the model itself (another auth profile) and the
// thinking level (a fallback the provider accepts).
type attemptModel struct {
	mu    sync.Mutex
	model llm.Model
	level llm.ThinkingLevel
}

func (t *attemptModel) setLevel(l llm.ThinkingLevel) {
	t.mu.Lock()
	t.level = l
	t.mu.Unlock()
}

func (t *attemptModel) setModel(m llm.Model) {
	t.mu.Lock()
	t.model = m
	t.mu.Unlock()
}

func (t *attemptModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	t.mu.Lock()
	m, l := t.model, t.level
	t.mu.Unlock()
	if l != "" && req.Options.Thinking != l {
		r := *req
		r.Options.Thinking = l
		req = &r
	}
	return m.Stream(ctx, req)
}
