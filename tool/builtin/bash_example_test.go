package builtin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/agentloop/agentloop/tool"
	"github.com/agentloop/agentloop/tool/builtin"
)

func ExampleNewBash() {
	dir, _ := os.MkdirTemp("", "workspace")
	defer os.RemoveAll(dir)
	bash := builtin.NewBash(builtin.BashOptions{Dir: dir})
	call := tool.Call{ID: "1", Name: "bash", Args: json.RawMessage(`{"command":"echo hello; exit 2"}`)}
	res, err := bash.Execute(context.Background(), call, func(tool.Partial) {})
	fmt.Printf("%q %v %v\n", res.Text(), res.IsError, err)
	// Output: "hello\n\n\nCommand exited with code 2." true <nil>
}
