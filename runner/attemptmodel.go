package runner

import (
	"context"
	"iter"
	"sync"

	"github.com/agentloop/agentloop/llm"
)

// attemptModel is the model the agent calls, with what the cascade may
// change between attempts: the model itself (another auth profile, a
// fallback model), the thinking level (a fallback the provider accepts) and
// the output limit (a fallback model's, which the agent, configured for the
// first model, does not know).
type attemptModel struct {
	mu        sync.Mutex
	model     llm.Model
	level     llm.ThinkingLevel
	maxTokens int // 0: no limit of its own
}

// setLimit caps the output tokens every request asks for; 0 lifts the cap.
func (t *attemptModel) setLimit(n int) {
	t.mu.Lock()
	t.maxTokens = n
	t.mu.Unlock()
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
	m, l, limit := t.model, t.level, t.maxTokens
	t.mu.Unlock()
	over := limit > 0 && req.Options.MaxTokens > limit
	if l != "" && req.Options.Thinking != l || over {
		r := *req
		if l != "" {
			r.Options.Thinking = l
		}
		if over {
			r.Options.MaxTokens = limit
		}
		req = &r
	}
	return m.Stream(ctx, req)
}
