package openai

import (
	"context"
	"errors"
	"iter"

	"github.com/agentloop/agentloop/llm"
)

func (m *Model) stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		yield(llm.Event{}, llm.NetworkError(m.provider, m.cfg.Info.ID, errors.New("openai: streaming is not implemented yet")))
	}
}
