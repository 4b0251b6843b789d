package session_test

import (
	"testing"

	"github.com/agentloop/agentloop/session"
	"github.com/agentloop/agentloop/session/sessiontest"
)

func TestJSONLStoreConformance(t *testing.T) {
	for _, policy := range []struct {
		name string
		p    session.SyncPolicy
	}{{"SyncEveryTurn", session.SyncEveryTurn}, {"SyncEveryEntry", session.SyncEveryEntry}, {"SyncNever", session.SyncNever}} {
		t.Run(policy.name, func(t *testing.T) {
			sessiontest.Run(t, func(t *testing.T) session.Store {
				return &session.JSONLStore{Dir: t.TempDir(), Sync: policy.p}
			})
		})
	}
	// Again with every reopened session read from its tail.
	t.Run("Tail", func(t *testing.T) {
		session.SmallTailChunks(t)
		sessiontest.Run(t, func(t *testing.T) session.Store {
			return &session.JSONLStore{Dir: t.TempDir(), Sync: session.SyncNever}
		})
	})
}
