package harness_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/harness"
	"github.com/agentloop/agentloop/harness/claudecode"
	"github.com/agentloop/agentloop/harness/pi"
	"github.com/agentloop/agentloop/session"
)

// Deleting our session deletes the engines' own sessions it was ever bound
// to (transfers included), each once; a binding whose native id is not
// one the engine's store could hold is refused and its file left alone.
func TestForgetBindings(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	write := func(p, body string) string {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	piOld := write(filepath.Join(dir, "old.jsonl"), `{"type":"session","version":3,"id":"a"}`+"\n")
	piNew := write(filepath.Join(dir, "new.jsonl"), `{"type":"session","version":3,"id":"b"}`+"\n{}\n")
	notPi := write(filepath.Join(dir, "notes.jsonl"), `{"type":"message"}`+"\n")
	const ccID = "0b0e8d4c-5a3e-4b8e-9a53-2f6c1d3e4f50"
	cc := write(filepath.Join(home, ".claude", "projects", "-work", ccID+".jsonl"), "{}\n")
	ccOther := write(filepath.Join(home, ".claude", "projects", "-work", "11111111-5a3e-4b8e-9a53-2f6c1d3e4f50.jsonl"), "{}\n")

	var tr session.Transcript
	for _, e := range []session.Entry{
		session.HarnessBindingEntry(pi.ID, piOld, "", ""),
		session.HarnessBindingEntry(pi.ID, piNew, "", ""), // a transfer
		session.HarnessBindingEntry(pi.ID, "", "", ""),    // unbound
		session.HarnessBindingEntry(pi.ID, piNew, "", ""), // the same again
		session.HarnessBindingEntry(pi.ID, notPi, "", ""),
		session.HarnessBindingEntry(pi.ID, "relative.jsonl", "", ""),
		session.HarnessBindingEntry(claudecode.ID, ccID, "", ""),
		session.HarnessBindingEntry(claudecode.ID, "../../etc/passwd", "", ""),
		session.HarnessBindingEntry("acp:agent", "s-1", "", ""),
	} {
		tr.Entries = append(tr.Entries, e)
	}
	asked := map[string]int{}
	err := harness.ForgetBindings(context.Background(), &tr, func(id string) (harness.Harness, error) {
		asked[id]++
		switch id {
		case pi.ID:
			return pi.New(nil), nil
		case claudecode.ID:
			return claudecode.New(&claudecode.Config{Env: []string{"HOME=" + home}}), nil
		}
		return harnessWithoutForget{}, nil
	})
	for _, p := range []string{piOld, piNew, cc} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s is still there", p)
		}
	}
	for _, p := range []string{notPi, ccOther} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was deleted: %v", p, err)
		}
	}
	for _, want := range []string{"notes.jsonl is not a pi session file", `"relative.jsonl" is not a session file path`, `"../../etc/passwd" is not a session id`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want it to say %q", err, want)
		}
	}
	if asked[pi.ID] != 4 || asked[claudecode.ID] != 2 || asked["acp:agent"] != 1 {
		t.Errorf("lookups %v: each distinct binding once", asked)
	}
}

// harnessWithoutForget is an engine with no delete (ACP v1).
type harnessWithoutForget struct{ harness.Harness }

// ForgetEach tells each binding's outcome: gone (even when it was gone
// before), kept by an engine without a delete, or why not.
func TestForgetEach(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "gone.jsonl")
	var tr session.Transcript
	tr.Entries = []session.Entry{
		session.HarnessBindingEntry(pi.ID, missing, "", ""),
		session.HarnessBindingEntry("acp:agent", "s-1", "", ""),
		session.HarnessBindingEntry(pi.ID, "relative.jsonl", "", ""),
	}
	var got []string
	harness.ForgetEach(context.Background(), &tr, func(id string) (harness.Harness, error) {
		if id == pi.ID {
			return pi.New(nil), nil
		}
		return harnessWithoutForget{}, nil
	}, func(b harness.Binding, err error) {
		switch {
		case err == nil:
			got = append(got, b.NativeID+": gone")
		case errors.Is(err, harness.ErrNoForget):
			got = append(got, b.NativeID+": kept")
		default:
			got = append(got, b.NativeID+": failed")
		}
	})
	want := []string{missing + ": gone", "s-1: kept", "relative.jsonl: failed"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", got, want)
	}
}
