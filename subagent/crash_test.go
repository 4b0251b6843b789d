package subagent

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/tool"
)

// helperEnv, set to "<mode>:<dir>", makes the test binary the process a
// crash test kills: it runs a parent that starts a background child in
// the store at dir, writes dir/ready with the parent's session id at the
// point the mode names, and waits there to be killed. Modes: "finished"
// (the child ended, its result not yet delivered) and "unfinished" (the
// child is still streaming).
const helperEnv = "SUBAGENT_TEST_HELPER"

func crashHelper() {
	mode, dir, _ := strings.Cut(os.Getenv(helperEnv), ":")
	store := session.NewJSONLStore(dir)
	r, err := runner.New(runner.Config{Store: store})
	if err != nil {
		os.Exit(2)
	}
	parentID := make(chan string, 1)
	ready := func() {
		id := <-parentID
		_ = os.WriteFile(filepath.Join(dir, "ready.tmp"), []byte(id), 0o600)
		_ = os.Rename(filepath.Join(dir, "ready.tmp"), filepath.Join(dir, "ready"))
		select {} // SIGKILL comes here
	}
	child := script(func(req *llm.Request) faux.Step {
		if mode == "unfinished" {
			go ready()
			return faux.Say("never finished").WithHold(make(chan struct{}))
		}
		return faux.Say("the child finished its work")
	})
	cfg := Config{Runner: r, Store: store, Cwd: dir, Child: runner.Request{Model: child, Info: child.ModelInfo(), Timeout: time.Minute}}
	if mode == "finished" {
		cfg.BeforeDeliver = func(string) { ready() }
	}
	m, err := New(cfg)
	if err != nil {
		os.Exit(2)
	}
	parent := script(func(req *llm.Request) faux.Step {
		if toolResults(req) == 0 {
			return faux.Call("", ToolAgent, agentArgs("background work", "work", true))
		}
		return faux.Say("started")
	})
	reg, _ := tool.NewRegistry(m.Tools()...)
	res, err := r.Run(context.Background(), runner.Request{Prompt: "go", Model: parent, Info: parent.ModelInfo(), Tools: reg,
		Session: runner.SessionSpec{Cwd: dir}})
	if err != nil {
		os.Exit(3)
	}
	parentID <- res.SessionID
	m.Wait()
	os.Exit(4) // not reached: the test kills the process first
}

// SIGKILL between a background child's end and its delivery, or while it
// still runs, then a restart: settling the session writes exactly one
// result entry and one delivered message (completed with the child's
// answer, or interrupted), however often it is settled and resumed.
func TestKillBeforeDeliveryThenRestart(t *testing.T) {
	for _, tc := range []struct{ mode, status, text string }{
		{"finished", StatusCompleted, "the child finished its work"},
		{"unfinished", StatusInterrupted, "interrupted"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), helperEnv+"="+tc.mode+":"+dir)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var parentID string
			waitFor(t, "the helper to reach the kill point", func() bool {
				b, err := os.ReadFile(filepath.Join(dir, "ready"))
				parentID = string(b)
				return err == nil
			})
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("the helper was not killed: %v", err)
			}

			// The restart: a new process's Runner and Manager on the store.
			sawNote := 0
			parent := script(func(req *llm.Request) faux.Step {
				for _, m := range req.Messages {
					if m.Role == llm.RoleUser && strings.Contains(m.Text(), "<task-notification") {
						sawNote++
					}
				}
				return faux.Say("carrying on")
			})
			e := newEnv(t, parent, parent, nil, nil)
			e.store = session.NewJSONLStore(dir)
			e.m.cfg.Store = e.store
			r2, err := runner.New(runner.Config{Store: e.store})
			if err != nil {
				t.Fatal(err)
			}
			defer r2.Close()
			e.r, e.m.cfg.Runner = r2, r2
			tr := e.load(parentID)
			if countCustom(tr, SpawnedType) != 1 || countCustom(tr, ResultType) != 0 {
				t.Fatalf("before settling: %d spawns, %d results", countCustom(tr, SpawnedType), countCustom(tr, ResultType))
			}
			for range 2 { // settling twice changes nothing the second time
				if _, err := e.m.Settle(context.Background(), parentID); err != nil {
					t.Fatal(err)
				}
			}
			res := e.run(parent, "what happened?", runner.SessionSpec{ID: parentID})
			if !res.OK() {
				t.Fatal(res.Reason, res.Err)
			}
			if _, err := e.m.Settle(context.Background(), parentID); err != nil {
				t.Fatal(err)
			}
			tr = e.load(parentID)
			var id string
			for _, en := range tr.Entries {
				if en.CustomType == SpawnedType {
					id = taskOfSpawn(t, en)
				}
			}
			if countCustom(tr, ResultType) != 1 || countNotifications(tr, id) != 1 {
				t.Fatalf("after the restart: %d result entries, %d notifications", countCustom(tr, ResultType), countNotifications(tr, id))
			}
			rec := readLedger(tr).results[id]
			if rec.Status != tc.status || !strings.Contains(rec.Result, tc.text) {
				t.Fatalf("settled result %+v", rec)
			}
			if sawNote != 1 {
				t.Fatalf("the resumed run's model saw %d notifications", sawNote)
			}
		})
	}
}

func taskOfSpawn(t *testing.T, en session.Entry) string {
	t.Helper()
	l := readLedger(&session.Transcript{Entries: []session.Entry{en}})
	if len(l.spawns) != 1 {
		t.Fatal("not a spawn entry")
	}
	return l.spawns[0].TaskID
}

// A session not written yet (a gateway or editor session before its first
// run) has nothing to settle: no error for the face to warn about.
func TestSettleUnwrittenSession(t *testing.T) {
	e := newEnv(t, nil, script(func(*llm.Request) faux.Step { return faux.Say("x") }), nil, nil)
	settled, err := e.m.Settle(context.Background(), session.NewSessionID())
	if err != nil || len(settled) != 0 {
		t.Fatalf("Settle of a session not written yet: %v, %v", settled, err)
	}
}
