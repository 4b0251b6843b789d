package hook

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/agentloop/agentloop/tool"
)

var benchCall = tool.Call{ID: "c", Name: "bash", Args: json.RawMessage(`{"command":"ls"}`)}

// The cost the loop pays per tool call when nobody registered a hook.
func BenchmarkBeforeToolCallNoHooks(b *testing.B) {
	bus := New(nil)
	seams := bus.Seams(SeamsOptions{})
	b.ReportAllocs()
	for b.Loop() {
		seams.BeforeToolCall(context.Background(), benchCall)
	}
}

func BenchmarkBeforeToolCallOneGoHook(b *testing.B) {
	bus := New(nil)
	bus.OnBeforeToolCall(Spec{}, func(context.Context, BeforeToolCallInput) (BeforeToolCallOutput, error) {
		return BeforeToolCallOutput{}, nil
	})
	b.ReportAllocs()
	for b.Loop() {
		bus.BeforeToolCall(context.Background(), BeforeToolCallInput{Call: benchCall})
	}
}

func BenchmarkAfterToolCallTwoGoHooks(b *testing.B) {
	bus := New(nil)
	for range 2 {
		bus.OnAfterToolCall(Spec{}, func(context.Context, AfterToolCallEvent) error { return nil })
	}
	b.ReportAllocs()
	for b.Loop() {
		bus.AfterToolCall(context.Background(), AfterToolCallEvent{Call: benchCall})
	}
}

// A command hook costs a process: this is its floor.
func BenchmarkPreToolUseCommandHook(b *testing.B) {
	home, ws := b.TempDir(), b.TempDir()
	writeJSONB(b, home, `{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"exit 0"}]}]}}`)
	bus, _, err := Load(LoadOptions{Home: home, Workspace: ws})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		bus.BeforeToolCall(context.Background(), BeforeToolCallInput{Call: benchCall})
	}
}

func writeJSONB(b *testing.B, home, content string) {
	b.Helper()
	if err := writeFile(home+"/"+SettingsFile, content); err != nil {
		b.Fatal(err)
	}
}

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o600) }
