package acp_test

import (
	"strings"
	"sync"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentloop/agentloop/gateway/acp"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
)

// Loads of one session that race each other and its prompts: each Runner
// the agent opened is released exactly once (none leaks when two loads
// replace the same session at once, none is closed twice), a load while a
// prompt runs is refused, and no prompt runs on a Runner a load closed
// under it. Under -race, with the editor's requests sent at once.
func TestLoadRacesLoadAndPrompt(t *testing.T) {
	var mu sync.Mutex
	released := map[*runner.Runner]int{}
	var e *env
	t.Cleanup(func() { // after serve's cleanup has ended the connection
		e.mu.Lock()
		defer e.mu.Unlock()
		mu.Lock()
		defer mu.Unlock()
		for i, rn := range e.runners {
			if n := released[rn]; n != 1 {
				t.Errorf("runner %d of %d was released %d times, want once", i+1, len(e.runners), n)
			}
		}
	})
	m := faux.New(faux.Say("answer"))
	m.Repeat = true
	e = serve(t, m, session.NewJSONLStore(t.TempDir()), nil)
	e.release = func(_ acp.Session, rn *runner.Runner) {
		mu.Lock()
		released[rn]++
		mu.Unlock()
	}
	e.initialize()
	sid := e.newSession()
	if r := e.prompt(sid, "first"); r.StopReason != sdk.StopReasonEndTurn {
		t.Fatal(r.StopReason)
	}
	load := func() error {
		_, err := e.conn.LoadSession(t.Context(), sdk.LoadSessionRequest{SessionId: sid, Cwd: e.cwd, McpServers: []sdk.McpServer{}})
		return err
	}
	for round := range 10 {
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			wg.Go(func() { errs <- load() })
		}
		wg.Go(func() { // one: a newer prompt of a session aborts the one before
			r, err := e.conn.Prompt(t.Context(), sdk.PromptRequest{SessionId: sid, Prompt: []sdk.ContentBlock{sdk.TextBlock("again")}})
			if err != nil {
				t.Errorf("round %d: the prompt beside loads failed: %v", round, err)
			} else if r.StopReason != sdk.StopReasonEndTurn {
				t.Errorf("round %d: the prompt beside loads ended %s", round, r.StopReason)
			}
		})
		wg.Wait()
		close(errs)
		for err := range errs {
			// What a load may meet: the prompt running.
			if err != nil && !strings.Contains(err.Error(), "running a prompt") {
				t.Errorf("round %d: %v", round, err)
			}
		}
	}
	if r := e.prompt(sid, "last"); r.StopReason != sdk.StopReasonEndTurn {
		t.Fatal(r.StopReason)
	}
}
