package acp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/gateway/acp"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
)

// sdkMax is the longest line acp-go-sdk reads, its newline included.
const sdkMax = 10 << 20

// padded is a JSON-RPC message of exactly n bytes with its newline: the
// head, then a padding string in params, then the rest.
func padded(t *testing.T, n int, head, tail string) string {
	t.Helper()
	pad := n - len(head) - len(tail) - 1
	if pad < 0 {
		t.Fatal("too short")
	}
	return head + strings.Repeat("x", pad) + tail + "\n"
}

// A message longer than the ACP SDK reads (which would end the connection
// without a word) is answered with an error that says why, by its id, and
// the connection goes on; a message of exactly the SDK's limit still
// reaches the SDK. Raw lines on a pipe, as an editor writes them.
func TestMessageTooLong(t *testing.T) {
	cfg := acp.Config{Store: session.NewJSONLStore(t.TempDir()),
		Open: func(context.Context, acp.Session) (*runner.Runner, error) { return nil, errors.New("unused") },
		Request: func(context.Context, acp.Session, acp.Settings) (acp.Run, error) {
			return acp.Run{}, errors.New("unused")
		}}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- acp.Serve(context.Background(), cfg, inR, outW); outW.Close() }()
	answers := bufio.NewScanner(outR)
	answers.Buffer(nil, 1<<20)
	send := func(line string) {
		go func() { _, _ = io.WriteString(inW, line) }()
	}
	answer := func() map[string]any {
		t.Helper()
		if !answers.Scan() {
			t.Fatalf("no answer: the connection ended (%v)", answers.Err())
		}
		var m map[string]any
		if err := json.Unmarshal(answers.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	initialize := func(id int) {
		t.Helper()
		send(`{"jsonrpc":"2.0","id":` + string(rune('0'+id)) + `,"method":"initialize","params":{"protocolVersion":1}}` + "\n")
		if m := answer(); m["id"] != float64(id) || m["result"] == nil {
			t.Fatalf("initialize %d: %v", id, m)
		}
	}
	initialize(1)

	// One byte over: an error answer, by id, naming the request and the limit.
	send(padded(t, sdkMax+1, `{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"`, `"}]}}`))
	m := answer()
	e, _ := m["error"].(map[string]any)
	msg, _ := e["message"].(string)
	if m["id"] != float64(7) || e["code"] != float64(-32600) || !strings.Contains(msg, "session/prompt request is 10.0 MiB (10485761 bytes)") || !strings.Contains(msg, "at most 10 MiB") {
		t.Errorf("answer to a message over the limit: %v", m)
	}
	initialize(2) // the connection lives on

	// The id after the params, a long string at the top, nested arrays.
	send(padded(t, 12<<20, `{"jsonrpc":"2.0","note":"`+strings.Repeat("y", 1000)+`","params":{"a":[[1],{"b":"}"}],"t":"`, `"},"method":"session/prompt","id":"str-9"}`))
	if m := answer(); m["id"] != "str-9" || m["error"] == nil {
		t.Errorf("answer to a message with its id last: %v", m)
	}

	// Exactly the limit: the SDK itself answers it.
	send(padded(t, sdkMax, `{"jsonrpc":"2.0","id":8,"method":"initialize","params":{"protocolVersion":1,"_meta":{"pad":"`, `"}}}`))
	if m := answer(); m["id"] != float64(8) || m["result"] == nil {
		t.Errorf("a message of exactly the SDK's limit: %v", m["error"])
	}
	initialize(3)

	inW.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for answers.Scan() {
	}
}
