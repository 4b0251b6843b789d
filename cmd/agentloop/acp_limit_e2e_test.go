package main

import (
	"context"
	"strings"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
)

// A 12 MB prompt (a large pasted file) piped to the built `agentloop acp`
// is answered with an error that says the limit and what to do instead,
// where the ACP SDK alone would close the connection without a word; the
// session goes on and its next prompt runs.
func TestE2EACPPromptTooLarge(t *testing.T) {
	base := mockLLM(t, "-rounds", "0", "-text", "3")
	home, ws := t.TempDir(), t.TempDir()
	conn, stop := startACP(t, home, ws, base, &editor{answer: "allow_once"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ns := openACPSession(ctx, t, conn, ws)
	big := "Review this file:\n" + strings.Repeat("0123456789abcdef\n", 12<<20/17)
	_, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock(big)}})
	if err == nil || !strings.Contains(err.Error(), "at most 10 MiB") || !strings.Contains(err.Error(), "session/prompt request is 12.") {
		t.Fatalf("a 12 MB prompt: %v", err)
	}
	resp, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: ns.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("a short one")}})
	if err != nil || resp.StopReason != sdk.StopReasonEndTurn {
		t.Fatalf("the prompt after the big one: %v %v", resp.StopReason, err)
	}
	stop()
}

// openACPSession initializes the connection and opens a new session in ws.
func openACPSession(ctx context.Context, t *testing.T, conn *sdk.ClientSideConnection, ws string) sdk.NewSessionResponse {
	t.Helper()
	if _, err := conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	ns, err := conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: ws, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	return ns
}
