package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/auth"
	"github.com/agentloop/agentloop/llm"
)

func TestAuthStatusAndReset(t *testing.T) {
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "models.json"), `{"providers":{"acme":{"baseUrl":"http://127.0.0.1:1/v1",
		"api":"openai-completions","profiles":[{"id":"work","apiKey":"A"},{"id":"spare","apiKey":"B"}],
		"models":[{"id":"m1"}]}}}`)
	store, err := auth.Open(&auth.Config{Path: filepath.Join(home, "auth-state.json")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.MarkFailure("acme", "work", "m1", llm.ReasonAuth); err != nil {
		t.Fatal(err)
	}
	env, out, errb := testEnv(home, "")
	if code := execute(t.Context(), env, []string{"auth", "status"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var work, spare string
	for _, l := range strings.Split(out.String(), "\n") {
		switch {
		case strings.Contains(l, "work"):
			work = l
		case strings.Contains(l, "spare"):
			spare = l
		}
	}
	if !strings.Contains(work, "auth") || spare == "" || strings.Contains(spare, "auth") {
		t.Fatalf("status:\n%s", out.String())
	}
	out.Reset()
	if code := execute(t.Context(), env, []string{"auth", "reset", "acme", "work"}); code != 0 || !strings.Contains(out.String(), "cleared 1") {
		t.Fatalf("reset: exit %d, %s %s", code, out.String(), errb.String())
	}
	if ok, err := store.Usable("acme", "m1", []string{"work", "spare"}); err != nil || len(ok) != 2 {
		t.Errorf("after reset usable = %v, %v; want both", ok, err)
	}
}
