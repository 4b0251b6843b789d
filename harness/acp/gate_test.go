package acp_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/agentloop/agentloop/harness/acp"
	"github.com/agentloop/agentloop/internal/fakeacp"
	"github.com/agentloop/agentloop/tool"
)

// TestGateAfterTool: a call of our tools over MCP that our gate put to
// BeforeTool has its end reported to AfterTool once, under the id
// BeforeTool saw, with the tool's result; one the agent's permission
// request covered is reported once, by the ACP path, under the tool of
// ours its kind says it is (edit); a refused one never.
func TestGateAfterTool(t *testing.T) {
	for _, tc := range []struct {
		name       string
		permission bool
		refuse     bool
		want       string
	}{
		{name: "gate", want: "before note m1 | after note m1 noted"},
		{name: "permission", permission: true, want: "before edit m1 | after edit m1 noted"},
		{name: "refused", refuse: true, want: "before note m1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ran []string
			reg := noteRegistry(t, &ran)
			e := newEnv(t, []fakeacp.Step{{Tool: &fakeacp.Tool{ID: "m1", Title: "note it", Kind: "edit", MCP: "note",
				Input: map[string]any{"text": "plum"}, Permission: tc.permission}}, {Text: "ok"}})
			a := e.attempt("note", nil, nil)
			a.Tools = reg
			var mu sync.Mutex
			var log []string
			a.BeforeTool = func(_ context.Context, c tool.Call) (tool.Call, *tool.Result) {
				mu.Lock()
				defer mu.Unlock()
				log = append(log, "before "+c.Name+" "+c.ID)
				if tc.refuse {
					r := tool.ErrorResult("refused by a hook")
					return c, &r
				}
				return c, nil
			}
			a.AfterTool = func(_ context.Context, c tool.Call, res tool.Result) {
				mu.Lock()
				defer mu.Unlock()
				log = append(log, "after "+c.Name+" "+c.ID+" "+res.Text())
			}
			res, err := acp.New(e.cfg).RunAttempt(context.Background(), a)
			if err != nil || res.Err != nil {
				t.Fatalf("%v %+v", err, res)
			}
			mu.Lock()
			defer mu.Unlock()
			if got := strings.Join(log, " | "); got != tc.want {
				t.Errorf("hooks saw\n %s\nwant\n %s", got, tc.want)
			}
		})
	}
}
