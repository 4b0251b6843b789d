package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
)

// Issue 24 in an editor: the built `agentloop acp --agent-depth 2`
// against mockllm's real wire, over its stdin and stdout. The model calls
// agent; the child (which may start agents at depth 2) calls agent too,
// and that call's permission request names its task in the title and in a
// tool_call id of its own; the editor allows both, the grandchild works,
// and the prompt ends with the parent's answer.
func TestE2EACPAgentPermissionNamesTheTask(t *testing.T) {
	base := mockLLM(t, "-tool", "agent", "-args", `{"description":"survey the files","prompt":"list what is here"}`, "-rounds", "1", "-text", "3")
	home, ws := t.TempDir(), t.TempDir()
	ed := &editor{answer: "allow_once"}
	conn, stop := startACP(t, home, ws, base, ed, "--agent-depth", "2")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	ns, err := conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: ws, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("count the files")}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("stop reason %s", resp.StopReason)
	}
	ed.mu.Lock()
	asked := append([]sdk.RequestPermissionRequest(nil), ed.asked...)
	text := ""
	for _, u := range ed.updates {
		if u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil {
			text += u.AgentMessageChunk.Content.Text.Text
		}
	}
	ed.mu.Unlock()
	if len(asked) != 2 {
		t.Fatalf("%d permission requests, want the parent's agent call and the child's", len(asked))
	}
	own, child := asked[0].ToolCall, asked[1].ToolCall
	if strings.Contains(string(own.ToolCallId), "/") || own.Title == nil || strings.Contains(*own.Title, "subagent task") {
		t.Fatalf("the parent's own request: %s %v", own.ToolCallId, own.Title)
	}
	task, call, ok := strings.Cut(string(child.ToolCallId), "/")
	if !ok || !strings.HasPrefix(task, "t_") || call == "" || child.Title == nil || !strings.Contains(*child.Title, "(subagent task "+task+", general)") {
		t.Fatalf("the child's request: id %s, title %v", child.ToolCallId, child.Title)
	}
	if text != "word word done" {
		t.Fatalf("agent text %q", text)
	}
	// The child and the grandchild are sessions of their own.
	children := 0
	filepath.WalkDir(filepath.Join(home, "sessions"), func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".jsonl") {
			b, _ := os.ReadFile(p)
			if strings.Contains(strings.SplitN(string(b), "\n", 2)[0], `"taskId"`) {
				children++
			}
		}
		return err
	})
	if children != 2 {
		t.Fatalf("%d child sessions, want 2", children)
	}
	if errs := stop(); strings.Contains(errs, "panic") {
		t.Fatalf("stderr:\n%s", errs)
	}
}
