package proc_test

import (
	"fmt"
	"os/exec"
	"time"

	"github.com/agentloop/agentloop/internal/proc"
)

// A command whose background child escapes with setsid is still ended
// completely: Kill finds it by its tag, Reap collects it.
func Example() {
	_ = proc.EnableSubreaper()
	tag := proc.NewTag()
	cmd := exec.Command("bash", "-c", "setsid sleep 60 >/dev/null 2>&1 &")
	proc.Prepare(cmd, tag)
	if err := cmd.Run(); err != nil {
		fmt.Println(err)
		return
	}
	killed := proc.Kill(proc.Target{Group: cmd.Process.Pid, Tag: tag})
	proc.Reap(killed, 0, 5*time.Second)
	tagged, zombies := proc.Alive(tag)
	fmt.Println(len(killed) >= 1, len(tagged), len(zombies))
	// Output: true 0 0
}
