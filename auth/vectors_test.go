package auth

import (
	"encoding/json"
	"github.com/agentloop/agentloop/internal/vectortest"
	"testing"
	"time"
)

// The cooldown cases of ../shared/reference/vectors/run_policy.json
// (calculateAuthProfileCooldownMs), through a small adapter, read from
// shared/ beside the checkout; AGENTLOOP_VECTORS names another directory.
func TestCooldownVectors(t *testing.T) {
	data := vectortest.Read(t, "run_policy.json")
	var vs []struct {
		Name     string `json:"name"`
		Function string `json:"function"`
		Input    struct {
			ErrorCount int `json:"errorCount"`
		} `json:"input"`
		Expected json.RawMessage `json:"expected"`
	}
	if err := json.Unmarshal(data, &vs); err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, v := range vs {
		if v.Function != "calculateAuthProfileCooldownMs" {
			continue
		}
		ran++
		t.Run(v.Name, func(t *testing.T) {
			var ms int64
			if err := json.Unmarshal(v.Expected, &ms); err != nil {
				t.Fatal(err)
			}
			if got := Cooldown(v.Input.ErrorCount); got != time.Duration(ms)*time.Millisecond {
				t.Errorf("Cooldown(%d) = %v, want %d ms", v.Input.ErrorCount, got, ms)
			}
		})
	}
	if ran == 0 {
		t.Error("no cooldown vectors ran")
	}
}
