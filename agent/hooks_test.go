package agent

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/tool"
)

func TestToolHooks(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)
	var ran []string
	rd := fn("read", false, func(_ context.Context, c tool.Call, _ func(tool.Partial)) (tool.Result, error) {
		ran = append(ran, c.ID+":"+string(c.Args))
		return tool.TextResult("contents of " + string(c.Args)), nil
	})
	rd.Parameters = schema
	tests := []struct {
		name    string
		hooks   Hooks
		wantRan []string
		want    string // the stored result text contains this
		isError bool
	}{
		{"allowed", Hooks{Approve: func(context.Context, tool.Call) (bool, string) { return true, "" }},
			[]string{`c:{"path":"a"}`}, "contents of", false},
		{"denied with reason", Hooks{Approve: func(context.Context, tool.Call) (bool, string) { return false, "not in this folder" }},
			nil, "Tool call denied: not in this folder", true},
		{"denied without reason", Hooks{Approve: func(context.Context, tool.Call) (bool, string) { return false, "" }},
			nil, "denied by the approval policy", true},
		{"approve panics", Hooks{Approve: func(context.Context, tool.Call) (bool, string) { panic("approver crashed") }},
			nil, "the approval hook failed", true},
		{"rewritten arguments", Hooks{BeforeToolCall: func(_ context.Context, c tool.Call) (tool.Call, *tool.Result) {
			c.Args = json.RawMessage(`{"path":"b"}`)
			return c, nil
		}}, []string{`c:{"path":"b"}`}, `contents of {"path":"b"}`, false},
		{"rewrite fails validation", Hooks{BeforeToolCall: func(_ context.Context, c tool.Call) (tool.Call, *tool.Result) {
			c.Args = json.RawMessage(`{}`)
			return c, nil
		}}, nil, "Invalid arguments", true},
		{"blocked", Hooks{BeforeToolCall: func(_ context.Context, c tool.Call) (tool.Call, *tool.Result) {
			r := tool.ErrorResult("blocked by policy hook")
			return c, &r
		}}, nil, "blocked by policy hook", true},
		{"before panics", Hooks{BeforeToolCall: func(context.Context, tool.Call) (tool.Call, *tool.Result) { panic("x") }},
			nil, "before_tool_call hook failed", true},
		{"persist rewrites", Hooks{ToolResultPersist: func(_ context.Context, _ tool.Call, r tool.Result) tool.Result {
			return tool.TextResult("[redacted]")
		}}, []string{`c:{"path":"a"}`}, "[redacted]", false},
		{"persist panics", Hooks{ToolResultPersist: func(context.Context, tool.Call, tool.Result) tool.Result { panic("x") }},
			[]string{`c:{"path":"a"}`}, "contents of", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ran = nil
			m := faux.New(faux.Reply(tc("c", "read", map[string]string{"path": "a"})), faux.Say("ok"))
			var after []string
			h := tt.hooks
			h.AfterToolCall = func(_ context.Context, c tool.Call, r tool.Result) { after = append(after, c.ID+":"+r.Text()) }
			var executed, known bool
			if h.ToolResultPersist == nil {
				h.ToolResultPersist = func(ctx context.Context, _ tool.Call, r tool.Result) tool.Result {
					executed, known = tool.Executed(ctx)
					return r
				}
			}
			a := New(Config{Model: m, Tools: registry(t, rd), Hooks: h})
			evs := runAll(t, a, context.Background(), llm.UserText("go"))
			if tt.hooks.ToolResultPersist == nil && (!known || executed != (tt.wantRan != nil)) {
				t.Errorf("tool_result_persist was told executed=%v (known %v), want %v", executed, known, tt.wantRan != nil)
			}
			if !slices.Equal(ran, tt.wantRan) {
				t.Errorf("ran %v, want %v", ran, tt.wantRan)
			}
			res := results(a.Messages())["c"]
			if res.IsError != tt.isError || !strings.Contains(res.Text(), tt.want) {
				t.Errorf("stored result %v %q, want %v with %q", res.IsError, res.Text(), tt.isError, tt.want)
			}
			if len(after) != 1 {
				t.Errorf("AfterToolCall saw %v", after)
			}
			panicked := strings.Contains(tt.name, "panics")
			if got := slices.ContainsFunc(evs, func(e Event) bool { return e.Type == EventHookError }); got != panicked {
				t.Errorf("hook_error reported = %v, want %v", got, panicked)
			}
			if last(evs).Reason != ReasonStop {
				t.Errorf("a hook ended the run: %+v", last(evs))
			}
		})
	}
}

func TestModelHooks(t *testing.T) {
	m := faux.New(faux.Say("first"), faux.Say("second"))
	var outputs []string
	var ended []llm.Message
	a := New(Config{Model: m, SystemPrompt: "base", Hooks: Hooks{
		LLMInput:  func(_ context.Context, req *llm.Request) { req.SystemPrompt += " +hook" },
		LLMOutput: func(_ context.Context, msg llm.Message) { outputs = append(outputs, msg.Text()) },
		AgentEnd:  func(_ context.Context, msgs []llm.Message) { ended = msgs },
	}})
	runAll(t, a, context.Background(), llm.UserText("go"))
	if got := m.Requests()[0].SystemPrompt; got != "base +hook" {
		t.Errorf("system prompt %q", got)
	}
	if !slices.Equal(outputs, []string{"first"}) || len(ended) != 2 {
		t.Errorf("outputs %v, agent end saw %d messages", outputs, len(ended))
	}
}

func TestStopHookIsBounded(t *testing.T) {
	tests := []struct {
		name      string
		max       int
		inject    bool
		wantCalls int
	}{
		{"default bound", 0, true, 1 + DefaultMaxStopContinuations},
		{"custom bound", 1, false, 2},
		{"never", -1, true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := faux.New(faux.Say("done?"))
			m.Repeat = true
			a := New(Config{Model: m, MaxStopContinuations: tt.max, Hooks: Hooks{
				Stop: func(context.Context, llm.Message) (bool, []llm.Message) {
					if tt.inject {
						return true, []llm.Message{llm.UserText("run the tests first")}
					}
					return true, nil
				},
			}})
			evs := runAll(t, a, context.Background(), llm.UserText("go"))
			if m.Calls() != tt.wantCalls || last(evs).Reason != ReasonStop {
				t.Errorf("calls %d, want %d", m.Calls(), tt.wantCalls)
			}
			if tt.wantCalls > 1 {
				req := m.Requests()[1].Messages
				if last := req[len(req)-1]; last.Role != llm.RoleUser || last.Text() == "" {
					t.Errorf("continuation message %+v", last)
				}
			}
		})
	}
}

func TestReportHookError(t *testing.T) {
	m := faux.New(faux.Say("ok"))
	var a *Agent
	a = New(Config{Model: m, Hooks: Hooks{
		LLMInput: func(ctx context.Context, _ *llm.Request) {
			a.ReportHookError("llm_input", errors.New("shell hook exited 1"))
		},
	}})
	evs := runAll(t, a, context.Background(), llm.UserText("go"))
	i := slices.IndexFunc(evs, func(e Event) bool { return e.Type == EventHookError })
	if i < 0 || evs[i].Hook != "llm_input" || !strings.Contains(evs[i].Err.Error(), "exited 1") {
		t.Fatalf("events %v", typesOf(evs))
	}
	if a.ReportHookError("x", errors.New("y")) {
		t.Error("ReportHookError outside a hook call reported")
	}
}

func TestToolUpdatesAreEvents(t *testing.T) {
	prog := fn("prog", false, func(_ context.Context, _ tool.Call, update func(tool.Partial)) (tool.Result, error) {
		for _, s := range []string{"10%", "50%"} {
			update(tool.Partial{Content: []llm.Content{llm.Text(s)}})
		}
		return tool.TextResult("100%"), nil
	})
	m := faux.New(faux.Reply(tc("p", "prog", nil)), faux.Say("ok"))
	a := New(Config{Model: m, Tools: registry(t, prog)})
	evs := runAll(t, a, context.Background(), llm.UserText("go"))
	var seq []string
	for _, e := range evs {
		switch e.Type {
		case EventToolExecutionUpdate:
			seq = append(seq, "update:"+e.Partial.Content[0].Text)
		case EventToolExecutionEnd:
			seq = append(seq, "end:"+e.Result.Text())
		}
	}
	if want := []string{"update:10%", "update:50%", "end:100%"}; !slices.Equal(seq, want) {
		t.Errorf("got %v", seq)
	}
}
