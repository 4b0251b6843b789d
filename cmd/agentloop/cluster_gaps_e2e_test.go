package main

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentloop/agentloop/internal/pgtest"
)

// Two servers on one database get, at once, a run start with the same
// idempotency key and different bodies: exactly one is queued (202), the
// other is refused with 422 naming the winner's run, as on one server.
func TestServeClusterIdemKeyReusedRace(t *testing.T) {
	dsn := pgtest.Start(t).Schema(t)
	ws := t.TempDir()
	nodes := clusterNodes(t, 2, dsn, ws, "-rounds", "0", "-text", "2")
	db := pgPool(t, dsn)
	var sess struct{ ID string }
	if st := nodes[0].call(t, "POST", "/v1/sessions", "", map[string]any{"cwd": ws}, &sess); st != 201 {
		t.Fatalf("create session: %d", st)
	}
	type answer struct {
		code  int
		RunID string
		Error struct {
			Code    string
			Details map[string]any
		}
	}
	for i := range 5 {
		key := fmt.Sprintf("k%d", i)
		var got [2]answer
		var wg sync.WaitGroup
		for j, n := range nodes {
			wg.Go(func() {
				got[j].code = n.call(t, "POST", "/v1/sessions/"+sess.ID+"/runs", "",
					map[string]any{"input": fmt.Sprintf("question %d from node %d", i, j), "idempotencyKey": key}, &got[j])
			})
		}
		wg.Wait()
		win, lose := got[0], got[1]
		if win.code != 202 {
			win, lose = lose, win
		}
		if win.code != 202 || lose.code != 422 || lose.Error.Code != "idempotency_key_reused" || lose.Error.Details["runId"] != win.RunID {
			t.Fatalf("key %s: answers %+v, want one 202 and one 422 idempotency_key_reused naming its run", key, got)
		}
		waitRunStatus(t, db, win.RunID, "succeeded", 20*time.Second)
		// A retry with the winner's body is still the winner's run.
		var again answer
		winner := 0
		if got[1].code == 202 {
			winner = 1
		}
		again.code = nodes[1-winner].call(t, "POST", "/v1/sessions/"+sess.ID+"/runs", "",
			map[string]any{"input": fmt.Sprintf("question %d from node %d", i, winner), "idempotencyKey": key}, &again)
		if again.code != 202 || again.RunID != win.RunID {
			t.Fatalf("key %s: the retry with the same body: %d %s, want 202 %s", key, again.code, again.RunID, win.RunID)
		}
	}
	var runs int
	_ = db.QueryRow(t.Context(), `SELECT count(*) FROM runs WHERE session_id = $1`, sess.ID).Scan(&runs)
	if runs != 5 {
		t.Fatalf("%d runs queued, want 5", runs)
	}
}
