package pi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentloop/agentloop/harness"
)

// Forget deletes the pi session file a binding names. The path comes from
// a transcript, so it is deleted only when it is an absolute .jsonl file
// whose first line is a pi session header; anything else is refused.
func (h *Harness) Forget(_ context.Context, b harness.Binding) error {
	p := b.NativeID
	if !filepath.IsAbs(p) || filepath.Ext(p) != ".jsonl" || filepath.Clean(p) != p {
		return fmt.Errorf("pi binding %q is not a session file path", p)
	}
	f, err := os.Open(p)
	if err != nil {
		if os.IsNotExist(err) {
			return nil // already gone
		}
		return err
	}
	line, err := bufio.NewReader(f).ReadString('\n')
	f.Close()
	var head struct {
		Type string `json:"type"`
		ID   string `json:"id"`
	}
	if json.Unmarshal([]byte(strings.TrimSpace(line)), &head) != nil || head.Type != "session" {
		return fmt.Errorf("%s is not a pi session file: left in place (%v)", p, err)
	}
	return os.Remove(p)
}
