package pi

import (
	"strings"

	"github.com/agentloop/agentloop/harness"
)

// toolsArgs is pi's --tools allowlist when the run's tool policy leaves
// out some of pi's own tools: those it allows, and the run's tools our
// extension registers (the allowlist applies to them too). It is nil
// (pi's defaults) when the run has no policy or allows all of pi's tools,
// and --no-tools when nothing is left.
func toolsArgs(a *harness.Attempt) []string {
	keep, all := a.AllowedTools(harness.PiTools, func(n string) harness.NativeTool { return harness.PiTool(n, a.Tools) })
	if all {
		return nil
	}
	if a.Tools != nil {
		for _, n := range a.Tools.Names() {
			if !builtinTools[n] {
				keep = append(keep, n) // offered by our extension
			}
		}
	}
	if len(keep) == 0 {
		return []string{"--no-tools"}
	}
	return []string{"--tools", strings.Join(keep, ",")}
}
