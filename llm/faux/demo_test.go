package faux_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/agent"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/tool"
)

// fakeFS offers ls and read over a map of listings and files.
func fakeFS(listing string, files map[string]string) *tool.Registry {
	ls := &tool.Func{ToolName: "ls", Concurrent: true,
		Run: func(context.Context, tool.Call, func(tool.Partial)) (tool.Result, error) {
			return tool.TextResult(listing), nil
		}}
	read := &tool.Func{ToolName: "read", Concurrent: true,
		Run: func(_ context.Context, call tool.Call, _ func(tool.Partial)) (tool.Result, error) {
			var a struct{ Path string }
			_ = json.Unmarshal(call.Args, &a)
			body, ok := files[a.Path]
			if !ok {
				return tool.ErrorResult("no such file: " + a.Path), nil
			}
			return tool.TextResult(body), nil
		}}
	r, err := tool.NewRegistry(ls, read)
	if err != nil {
		panic(err)
	}
	return r
}

func TestDemo(t *testing.T) {
	tests := []struct {
		name      string
		listing   string
		files     map[string]string
		wantRead  string
		wantWords []string
	}{
		{"prefers a readme", "cmd/\ngo.mod\nREADME.md\n", map[string]string{"README.md": "# agentloop\nAn agent runtime.\n", "go.mod": "module x\n"},
			"README.md", []string{"2 files", "1 directory", "README.md", "# agentloop", "2 lines"}},
		{"else the first file", "a.txt\nb.txt\n", map[string]string{"a.txt": "alpha"}, "a.txt", []string{"2 files", "alpha"}},
		{"only directories", "x/\ny/\n", nil, "", []string{"no regular file"}},
		{"empty folder", "(empty directory)\n", nil, "", []string{"empty"}},
		{"read fails", "gone.txt\n", nil, "gone.txt", []string{"could not", "no such file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := faux.Builtin("demo")
			if err != nil {
				t.Fatal(err)
			}
			a := agent.New(agent.Config{Model: m, Tools: fakeFS(tt.listing, tt.files)})
			var read, answer string
			var usage *llm.Usage
			for ev, err := range a.Run(context.Background(), llm.UserText("what is in this folder?")) {
				if err != nil {
					t.Fatal(err)
				}
				if ev.Type == agent.EventToolExecutionStart && ev.ToolName == "read" {
					var args struct{ Path string }
					_ = json.Unmarshal(ev.Args, &args)
					read = args.Path
				}
				if ev.Type == agent.EventMessageEnd && ev.Message.Role == llm.RoleAssistant {
					answer = ev.Message.Text()
				}
				if ev.Type == agent.EventAgentEnd {
					usage = ev.Usage
					if ev.Reason != agent.ReasonStop {
						t.Fatalf("run ended %s: %v", ev.Reason, ev.Err)
					}
				}
			}
			if read != tt.wantRead {
				t.Errorf("read %q, want %q", read, tt.wantRead)
			}
			for _, w := range tt.wantWords {
				if !strings.Contains(answer, w) {
					t.Errorf("answer %q does not mention %q", answer, w)
				}
			}
			if usage == nil || usage.Input == 0 || usage.Output == 0 {
				t.Errorf("usage = %+v", usage)
			}
		})
	}
}

func TestDemoWithoutTools(t *testing.T) {
	a := agent.New(agent.Config{Model: faux.Demo()})
	for ev := range a.Run(context.Background(), llm.UserText("hi")) {
		if ev.Type == agent.EventAgentEnd && ev.Reason != agent.ReasonStop {
			t.Fatalf("ended %s", ev.Reason)
		}
	}
	if msgs := a.Messages(); !strings.Contains(msgs[len(msgs)-1].Text(), "does not offer") {
		t.Errorf("answer = %q", msgs[len(msgs)-1].Text())
	}
}
