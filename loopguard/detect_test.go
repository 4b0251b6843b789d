package loopguard_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/loopguard"
	"github.com/agentloop/agentloop/tool"
)

// script plays n calls through a guard: call i (1-based) is calls(i), its
// result result(i). It returns the action of every call.
func script(g *loopguard.Guard, n int, calls func(i int) tool.Call, result func(i int) tool.Result) []loopguard.Action {
	out := make([]loopguard.Action, n+1)
	for i := 1; i <= n; i++ {
		c := calls(i)
		v := g.Before(c)
		out[i] = v.Action
		res := result(i)
		if v.Result != nil {
			res = *v.Result
		}
		g.After(c, res)
	}
	return out
}

func same(name, args string) func(int) tool.Call {
	return func(i int) tool.Call {
		return tool.Call{ID: fmt.Sprintf("c%d", i), Name: name, Args: json.RawMessage(args)}
	}
}

func alternate(a, b tool.Call) func(int) tool.Call {
	return func(i int) tool.Call {
		c := a
		if i%2 == 0 {
			c = b
		}
		c.ID = fmt.Sprintf("c%d", i)
		return c
	}
}

func constant(text string) func(int) tool.Result {
	return func(int) tool.Result { return tool.TextResult(text) }
}

func changing(int) func(int) tool.Result {
	return func(i int) tool.Result { return tool.TextResult(fmt.Sprintf("result %d", i)) }
}

// want describes the expected action from a call number on.
type want map[int]loopguard.Action

func checkActions(t *testing.T, got []loopguard.Action, w want) {
	t.Helper()
	cur := loopguard.Allow
	for i := 1; i < len(got); i++ {
		if a, ok := w[i]; ok {
			cur = a
		}
		if got[i] != cur {
			t.Errorf("call %d: %v, want %v", i, got[i], cur)
		}
	}
}

func TestDetectorThresholds(t *testing.T) {
	poll := `{"action":"poll","sessionId":"s1"}`
	readA := tool.Call{Name: "read", Args: json.RawMessage(`{"path":"/a"}`)}
	listB := tool.Call{Name: "ls", Args: json.RawMessage(`{"dir":"/"}`)}
	tests := []struct {
		name   string
		cfg    *loopguard.Config
		n      int
		calls  func(int) tool.Call
		result func(int) tool.Result
		want   want
	}{
		{"generic repeat, same result: warn 10, block 20, stop 30", nil, 32,
			same("read", `{"path":"/a"}`), constant("same"),
			want{10: loopguard.Warn, 20: loopguard.Block, 30: loopguard.Stop}},
		{"generic repeat, results change: warn 10, block 20, no breaker", nil, 32,
			same("bash", `{"command":"date"}`), changing(0),
			want{10: loopguard.Warn, 20: loopguard.Block}},
		{"generic repeat, custom thresholds", &loopguard.Config{Warning: 3, Critical: 5, Global: 7}, 9,
			same("read", `{"path":"/a"}`), constant("same"),
			want{3: loopguard.Warn, 5: loopguard.Block, 7: loopguard.Stop}},
		{"generic repeat, key order and spacing do not matter", &loopguard.Config{Warning: 2, Critical: 3},
			4, func(i int) tool.Call {
				args := []string{`{"a":1,"b":2}`, `{ "b": 2, "a": 1.0 }`}[i%2]
				return tool.Call{ID: fmt.Sprint(i), Name: "t", Args: json.RawMessage(args)}
			}, changing(0),
			want{2: loopguard.Warn, 3: loopguard.Block}},
		{"poll without progress: warn 10, block 20, stop 30", nil, 31,
			same("process", poll), constant("(no new output)\n\nProcess still running."),
			want{10: loopguard.Warn, 20: loopguard.Block, 30: loopguard.Stop}},
		{"poll with progress never fires", nil, 40,
			same("process", poll), changing(0), want{}},
		{"command_status is a poll tool", &loopguard.Config{Warning: 3, Critical: 4}, 5,
			same("command_status", `{"id":"x"}`), constant("running"),
			want{3: loopguard.Warn, 4: loopguard.Block}},
		{"ping-pong without progress: warn 10, block 20", nil, 24,
			alternate(readA, listB), constant("same"),
			want{10: loopguard.Warn, 20: loopguard.Block}},
		{"ping-pong with progress only warns", nil, 40,
			alternate(readA, listB), changing(0),
			want{10: loopguard.Warn}},
		{"ping-pong detector off: generic repeat still counts each side", &loopguard.Config{DisablePingPong: true}, 30,
			alternate(readA, listB), changing(0),
			want{19: loopguard.Warn}}, // read's 10th call is call 19
		{"generic detector off", &loopguard.Config{DisableGenericRepeat: true}, 25,
			same("bash", `{"command":"date"}`), changing(0), want{}},
		{"poll detector off", &loopguard.Config{DisableKnownPoll: true}, 25,
			same("process", poll), changing(0), want{}},
		{"disabled", &loopguard.Config{Disabled: true}, 40,
			same("read", `{"path":"/a"}`), constant("same"), want{}},
		{"critical not above warning is raised to warning+1", &loopguard.Config{Warning: 5, Critical: 3, Global: 4}, 8,
			same("read", `{"path":"/a"}`), constant("same"),
			want{5: loopguard.Warn, 6: loopguard.Block, 7: loopguard.Stop}},
		{"history window forgets old calls", &loopguard.Config{HistorySize: 4, Warning: 3, Critical: 10}, 12,
			func(i int) tool.Call {
				if i%3 == 0 {
					return tool.Call{ID: fmt.Sprint(i), Name: "read", Args: json.RawMessage(`{"path":"/a"}`)}
				}
				return tool.Call{ID: fmt.Sprint(i), Name: "read", Args: json.RawMessage(fmt.Sprintf(`{"path":"/%d"}`, i))}
			}, changing(0), want{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := loopguard.New(tt.cfg)
			checkActions(t, script(g, tt.n, tt.calls, tt.result), tt.want)
		})
	}
}

func TestErrorResultsAreOutcomes(t *testing.T) {
	g := loopguard.New(&loopguard.Config{Warning: 2, Critical: 3, Global: 4})
	got := script(g, 5, same("process", `{"action":"poll"}`), func(int) tool.Result { return tool.ErrorResult("boom") })
	checkActions(t, got, want{2: loopguard.Warn, 3: loopguard.Block, 4: loopguard.Stop})
}

func TestGuardRecordsBlockedCalls(t *testing.T) {
	g := loopguard.New(&loopguard.Config{Warning: 2, Critical: 3})
	script(g, 4, same("read", `{"path":"/a"}`), constant("x"))
	recs := g.Records()
	if len(recs) != 4 {
		t.Fatalf("%d records, want 4 (blocked calls are recorded)", len(recs))
	}
	for i, r := range recs {
		blocked := i >= 2
		if r.Blocked != blocked || (r.Outcome != "") == blocked {
			t.Errorf("record %d = %+v, want blocked=%v", i, r, blocked)
		}
	}
	if s := g.Stats(); s.TotalCalls != 4 || s.UniquePatterns != 1 || s.MostFrequentTool != "read" || s.MostFrequentCount != 4 {
		t.Errorf("stats = %+v", s)
	}
	g.Reset()
	if len(g.Records()) != 0 {
		t.Error("Reset kept records")
	}
}

func TestVerdicts(t *testing.T) {
	var events []loopguard.Event
	g := loopguard.New(&loopguard.Config{Warning: 2, Critical: 3, Global: 4,
		OnEvent: func(e loopguard.Event) { events = append(events, e) }})
	call := func(i int) tool.Call { return same("read", `{"path":"/a"}`)(i) }

	v := g.Before(call(1))
	if v.Action != loopguard.Allow || v.Result != nil || v.Err != nil {
		t.Fatalf("first call: %+v", v)
	}
	g.After(call(1), tool.TextResult("x"))

	v = g.Before(call(2))
	if v.Action != loopguard.Warn || v.Result != nil || !strings.HasPrefix(v.Detection.Message, "WARNING:") {
		t.Fatalf("second call: %+v", v)
	}
	res := g.Annotate(call(2), tool.TextResult("x"))
	if len(res.Content) != 2 || res.Content[1].Text != v.Detection.Message {
		t.Fatalf("annotated result = %+v, want the warning appended", res.Content)
	}
	if again := g.Annotate(call(2), tool.TextResult("x")); len(again.Content) != 1 {
		t.Error("a warning was appended twice")
	}
	g.After(call(2), tool.TextResult("x"))

	v = g.Before(call(3))
	if v.Action != loopguard.Block || v.Result == nil || !v.Result.IsError || v.Err != nil {
		t.Fatalf("third call: %+v", v)
	}
	if !strings.Contains(v.Result.Text(), "CRITICAL") || !strings.Contains(string(v.Result.Details), `"generic_repeat"`) {
		t.Errorf("block result = %q %s", v.Result.Text(), v.Result.Details)
	}
	g.After(call(3), *v.Result)

	v = g.Before(call(4))
	if v.Action != loopguard.Stop || v.Result == nil || !v.Result.IsError {
		t.Fatalf("fourth call: %+v", v)
	}
	var se *loopguard.StopError
	if !errors.As(v.Err, &se) || !errors.Is(v.Err, loopguard.ErrCircuitBreaker) || se.Count != 4 || se.Tool != "read" {
		t.Fatalf("stop error = %#v", v.Err)
	}
	if !strings.Contains(v.Err.Error(), "circuit breaker") {
		t.Errorf("stop error text %q does not say why", v.Err)
	}

	kinds := []loopguard.EventKind{}
	for _, e := range events {
		kinds = append(kinds, e.Kind)
		if e.Tool != "read" || e.CallID == "" || !e.Detection.Stuck {
			t.Errorf("event %+v lacks its call", e)
		}
	}
	wantKinds := []loopguard.EventKind{loopguard.EventWarning, loopguard.EventBlock, loopguard.EventStop}
	if fmt.Sprint(kinds) != fmt.Sprint(wantKinds) {
		t.Errorf("events = %v, want %v", kinds, wantKinds)
	}
}

func TestOutcomeHashProcessFields(t *testing.T) {
	poll := json.RawMessage(`{"action":"poll","sessionId":"s"}`)
	r := func(details string) tool.Result {
		return tool.Result{Content: []llm.Content{llm.Text(" out \n")}, Details: json.RawMessage(details)}
	}
	a := loopguard.OutcomeHash("process", poll, r(`{"status":"running","aggregated":"x","pid":1}`))
	b := loopguard.OutcomeHash("process", poll, r(`{"status":"running","aggregated":"x","pid":2}`))
	if a != b {
		t.Error("a field outside the poll fields (pid) changed the poll outcome")
	}
	c := loopguard.OutcomeHash("process", poll, r(`{"status":"exited","aggregated":"x"}`))
	if a == c {
		t.Error("a status change did not change the poll outcome")
	}
	other := json.RawMessage(`{}`)
	if loopguard.OutcomeHash("read", other, r(`{"pid":1}`)) == loopguard.OutcomeHash("read", other, r(`{"pid":2}`)) {
		t.Error("details do not count for ordinary tools")
	}
	if loopguard.OutcomeHash("read", other, tool.ErrorResult("x")) == loopguard.OutcomeHash("read", other, tool.TextResult("x")) {
		t.Error("an error and a success with one text hash the same")
	}
}

func TestGuardConcurrentUse(t *testing.T) {
	g := loopguard.New(nil)
	done := make(chan struct{})
	for w := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 50 {
				c := tool.Call{ID: fmt.Sprintf("w%d-%d", w, i), Name: "read", Args: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i%3))}
				v := g.Before(c)
				res := tool.TextResult("x")
				if v.Result != nil {
					res = *v.Result
				}
				g.After(c, res)
				g.Annotate(c, res)
			}
		}()
	}
	for range 4 {
		<-done
	}
	if n := len(g.Records()); n != loopguard.DefaultHistorySize {
		t.Errorf("%d records, want a full window of %d", n, loopguard.DefaultHistorySize)
	}
}

// Issue 16.1: bash's details carry the call's duration (and, for a long
// output, a spill file named afresh per call); neither is progress.
func TestOutcomeHashIgnoresVolatileDetails(t *testing.T) {
	args := json.RawMessage(`{"command":"echo same"}`)
	r := func(details string) tool.Result {
		return tool.Result{Content: []llm.Content{llm.Text("same\n")}, Details: json.RawMessage(details)}
	}
	a := loopguard.OutcomeHash("bash", args, r(`{"exitCode":0,"durationMs":3,"totalLines":1,"fullOutputPath":"/tmp/a"}`))
	b := loopguard.OutcomeHash("bash", args, r(`{"exitCode":0,"durationMs":17,"totalLines":1,"fullOutputPath":"/tmp/b"}`))
	if a != b {
		t.Error("a duration or spill path that differs per call changed the outcome")
	}
	if a == loopguard.OutcomeHash("bash", args, r(`{"exitCode":1,"durationMs":3,"totalLines":1}`)) {
		t.Error("a different exit code did not change the outcome")
	}
	for _, k := range []string{"durationMs", "startedAt", "elapsed", "fullOutputPath"} {
		if !loopguard.VolatileDetail(k) {
			t.Errorf("%s is not volatile", k)
		}
	}
	for _, k := range []string{"exitCode", "status", "format", "Ms"} {
		if loopguard.VolatileDetail(k) {
			t.Errorf("%s is volatile", k)
		}
	}
}

// Issue 16.2: a call the agent answered itself (a tool that does not
// exist) never reaches Before; After checks it, so the model is warned
// and the breaker still trips.
func TestGuardCountsCallsBeforeNeverSaw(t *testing.T) {
	g := loopguard.New(nil)
	res := tool.ErrorResult(`Tool "nosuchtool" not found. Available tools: read.`)
	var got []loopguard.Action
	for i := 1; i <= 30; i++ {
		c := tool.Call{ID: fmt.Sprintf("c%d", i), Name: "nosuchtool", Args: json.RawMessage(`{}`)}
		v := g.After(c, res)
		got = append(got, v.Action)
		annotated := g.Annotate(c, res)
		if (v.Action != loopguard.Allow) != (len(annotated.Content) == 2) {
			t.Errorf("call %d: %v, annotated %v", i, v.Action, annotated.Content)
		}
	}
	if got[8] != loopguard.Allow || got[9] != loopguard.Warn || got[19] != loopguard.Block || got[29] != loopguard.Stop {
		t.Errorf("actions %v: want warn from the 10th, block from the 20th, stop at the 30th", got)
	}
}
