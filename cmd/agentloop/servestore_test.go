package main

import (
	"testing"
	"time"
)

// The retention of stored events comes from the environment of serve:
// a duration or off, and how many last events to keep; bad values are
// refused with the variable's name.
func TestClusterConfigRetention(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	cfg, err := clusterConfig(env(map[string]string{envRetention: "24h", envEventsKept: "50"}))
	if err != nil || cfg.EventRetention != 24*time.Hour || cfg.EventsKept != 50 {
		t.Fatalf("24h, 50: %+v %v", cfg, err)
	}
	if cfg, err := clusterConfig(env(map[string]string{envRetention: "off"})); err != nil || cfg.EventRetention >= 0 {
		t.Fatalf("off: %+v %v", cfg, err)
	}
	for _, kv := range []map[string]string{{envRetention: "0s"}, {envRetention: "soon"}, {envEventsKept: "0"}} {
		if _, err := clusterConfig(env(kv)); err == nil {
			t.Errorf("%v was accepted", kv)
		}
	}
}
