package command_test

import (
	"fmt"

	"github.com/agentloop/agentloop/command"
)

func ExampleParse() {
	name, args, ok, err := command.Parse("/compact keep the test plan")
	fmt.Println(name, "|", args, "|", ok, err)
	_, _, ok, err = command.Parse("/frobnicate")
	fmt.Println(ok, err)
	// Output:
	// compact | keep the test plan | true <nil>
	// true /frobnicate is not a command; /help lists them
}
