package google

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/internal/wiretest"
)

// Issue 20.1: on Gemini, where adjacent contents of one role merge, the
// request built from the history cache is the whole build's byte for byte
// after every turn of a long run with rewrites.
func TestIncrementalRequestMatchesWholeBuild(t *testing.T) {
	for name, info := range map[string]llm.ModelInfo{
		"gemini-3": {ID: "gemini-3-pro", Provider: "google", API: llm.APIGoogleGenerativeAI, MaxTokens: 4000, Reasoning: true},
		"plain":    {ID: "gemini-test", Provider: "google", API: llm.APIGoogleGenerativeAI},
	} {
		t.Run(name, func(t *testing.T) {
			m := New(Config{Info: info})
			wiretest.CheckIncremental(t, incremental(m), 300, 3)
		})
	}
}

// The edges of a body's assembly.
func TestIncrementalRequestEdges(t *testing.T) {
	m := New(Config{Info: llm.ModelInfo{ID: "gemini-test", Provider: "google"}})
	wiretest.CheckIncrementalEdges(t, incremental(m))
}

func incremental(m *Model) wiretest.Incremental {
	return wiretest.Incremental{
		API: llm.APIGoogleGenerativeAI, Provider: "google",
		Encode: func(req *llm.Request) ([]byte, error) {
			body, _, err := m.encodeRequest(req)
			return bytes.Join(body, nil), err
		},
		Whole:   func(req *llm.Request) ([]byte, error) { return json.Marshal(m.buildRequest(req)) },
		Covered: m.hist.Covered,
	}
}
