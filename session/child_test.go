package session

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"

	"github.com/agentloop/agentloop/llm"
)

// Child processes of the crash and lock tests: the test binary re-executed
// with childEnv set.
const (
	childEnv     = "AGENTLOOP_SESSION_TEST_CHILD"
	childDirEnv  = "AGENTLOOP_SESSION_TEST_DIR"
	childIDEnv   = "AGENTLOOP_SESSION_TEST_ID"
	childPathEnv = "AGENTLOOP_SESSION_TEST_PATH"

	crashBurst = 40
)

func childFail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(2)
}

// lockChild takes the lock of a session file, says so, and holds it until
// its stdin closes or it is killed.
func lockChild() {
	l, err := AcquireLock(context.Background(), os.Getenv(childPathEnv), "locked-by-child", nil)
	if err != nil {
		childFail("lock child: %v", err)
	}
	fmt.Println("locked")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	l.Release()
}

// crashEntry is the k-th entry (0-based) the crash child writes: a cycle of
// user message, assistant tool call, its result, assistant answer. Each
// carries k in its text so the parent can check nothing was reordered.
func crashEntry(k int) Entry {
	n := strconv.Itoa(k)
	switch k % 4 {
	case 0:
		return MessageEntry(llm.Message{Role: llm.RoleUser, Content: []llm.Content{llm.Text("entry " + n)}})
	case 1:
		return MessageEntry(llm.Message{Role: llm.RoleAssistant, StopReason: llm.StopReasonToolUse,
			Content: []llm.Content{llm.Text("entry " + n), llm.ToolCall("call"+n, "echo", json.RawMessage(`{"n":`+n+`}`))}})
	case 2:
		id := "call" + strconv.Itoa(k-1)
		return MessageEntry(llm.Message{Role: llm.RoleToolResult, ToolCallID: id, ToolName: "echo",
			Content: []llm.Content{llm.Text("entry " + n)}})
	default:
		return MessageEntry(llm.Message{Role: llm.RoleAssistant, StopReason: llm.StopReasonStop,
			Content: []llm.Content{llm.Text("entry " + n)}})
	}
}

// crashChild opens (or creates) a session and appends entries until it is
// killed, printing the number of entries durably written after each one.
func crashChild() {
	ctx := context.Background()
	st := &JSONLStore{Dir: os.Getenv(childDirEnv), Sync: SyncNever}
	id := os.Getenv(childIDEnv)
	var s Session
	var err error
	if _, rerr := st.Resolve(id); rerr == nil {
		s, err = st.Open(ctx, id, nil)
	} else {
		s, err = st.Create(ctx, CreateOptions{ID: id, Cwd: "/crash"})
	}
	if err != nil {
		childFail("crash child: %v", err)
	}
	k := len(s.Transcript().Entries)
	out := bufio.NewWriter(os.Stdout)
	// A bounded burst per life keeps the file small across 200 kills; the
	// parent kills during the burst or after it.
	for end := k + crashBurst; k < end; k++ {
		if _, err := s.Append(ctx, crashEntry(k)); err != nil {
			childFail("crash child: append %d: %v", k, err)
		}
		fmt.Fprintln(out, k+1)
		out.Flush()
	}
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
}
