package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/internal/fakeacp"
)

// Issue 25: the "harness" key of the settings files and AGENTLOOP_HARNESS
// pick the engine of a run by its model, through the built CLI: the ACP
// agent is the scripted one of internal/fakeacp (this test binary), the
// built-in loop answers from mockllm.
func TestE2EHarnessFromSettings(t *testing.T) {
	base := mockLLM(t, "-rounds", "0", "-text", "3")
	script, _ := json.Marshal(fakeacp.Config{Dir: t.TempDir(), Turns: [][]fakeacp.Step{{{Text: "the acp agent answers"}}}})
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	agent := "acp:" + self
	env := []string{envFakeACP + "=" + string(script), "ANTHROPIC_API_KEY=sk-mock", "OPENAI_API_KEY=sk-mock"}
	const (
		onACP     = "the acp agent answers"
		onBuiltin = "word word done" // mockllm's answer
	)
	settings := func(path string, v any) {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"harness": v})
		writeFile(t, path, string(b))
	}
	run := func(t *testing.T, home, ws, model string, extra []string, args ...string) (int, string, string) {
		t.Helper()
		all := append([]string{"run", "--model", model, "--cwd", ws}, args...)
		if strings.HasPrefix(model, "openai/") {
			all = append(all, "--base-url", base+"/v1")
		} else {
			all = append(all, "--base-url", base)
		}
		return execCLI(t, append(append([]string{}, env...), extra...), home, append(all, "hello")...)
	}
	expect := func(t *testing.T, code int, out, errs, want string) {
		t.Helper()
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("exit %d, want 0 and %q\nstdout %s\nstderr %s", code, want, out, errs)
		}
	}

	t.Run("user settings by provider and model", func(t *testing.T) {
		home, ws := t.TempDir(), t.TempDir()
		settings(filepath.Join(home, "settings.json"), map[string]any{"default": "builtin",
			"providers": map[string]string{"anthropic": agent}, "models": map[string]string{"anthropic/other-claude": "builtin"}})
		code, out, errs := run(t, home, ws, "anthropic/mock-claude", nil)
		expect(t, code, out, errs, onACP)
		code, out, errs = run(t, home, ws, "openai/mock-model", nil)
		expect(t, code, out, errs, onBuiltin)
		code, out, errs = run(t, home, ws, "anthropic/other-claude", nil) // the model beats its provider
		expect(t, code, out, errs, onBuiltin)
		code, out, errs = run(t, home, ws, "anthropic/mock-claude", nil, "--harness", "builtin") // the flag beats all
		expect(t, code, out, errs, onBuiltin)
		code, out, errs = run(t, home, ws, "anthropic/mock-claude", []string{envHarness + "=builtin"}) // so does the variable
		expect(t, code, out, errs, onBuiltin)
	})

	t.Run("AGENTLOOP_HARNESS alone", func(t *testing.T) {
		code, out, errs := run(t, t.TempDir(), t.TempDir(), "openai/mock-model", []string{envHarness + "=" + agent})
		expect(t, code, out, errs, onACP)
	})

	t.Run("a workspace's command needs trust", func(t *testing.T) {
		home, ws := t.TempDir(), t.TempDir()
		settings(filepath.Join(ws, ".agentloop", "settings.json"), map[string]any{"default": agent})
		code, out, errs := run(t, home, ws, "openai/mock-model", nil)
		expect(t, code, out, errs, onBuiltin)
		if !strings.Contains(errs, "is not trusted") || !strings.Contains(errs, "harness.default") {
			t.Errorf("no warning for the skipped harness.default:\n%s", errs)
		}
		if code, out, errs := execCLI(t, nil, home, "trust", ws); code != 0 {
			t.Fatalf("trust: exit %d\n%s\n%s", code, out, errs)
		}
		code, out, errs = run(t, home, ws, "openai/mock-model", nil)
		expect(t, code, out, errs, onACP)
	})

	t.Run("a workspace overrides the user key by key", func(t *testing.T) {
		home, ws := t.TempDir(), t.TempDir()
		settings(filepath.Join(home, "settings.json"), map[string]any{"default": agent, "providers": map[string]string{"openai": agent}})
		settings(filepath.Join(ws, ".agentloop", "settings.json"), map[string]any{"providers": map[string]string{"openai": "builtin"}})
		code, out, errs := run(t, home, ws, "openai/mock-model", nil)
		expect(t, code, out, errs, onBuiltin)
		code, out, errs = run(t, home, ws, "anthropic/mock-claude", nil) // the user's default stands
		expect(t, code, out, errs, onACP)
	})

	t.Run("serve's runs too", func(t *testing.T) {
		home, ws := t.TempDir(), t.TempDir()
		settings(filepath.Join(home, "settings.json"), map[string]any{"providers": map[string]string{"openai": agent}})
		sc := startServe(t, ws, home, env, "--model", "openai/mock-model", "--base-url", base+"/v1")
		var sess struct{ ID string }
		if st := sc.call(t, "POST", "/v1/sessions", "", map[string]any{"cwd": ws}, &sess); st != 201 || sess.ID == "" {
			t.Fatalf("create session: %d", st)
		}
		var run struct {
			RunID string
			Error any
		}
		if st := sc.call(t, "POST", "/v1/sessions/"+sess.ID+"/runs", "", map[string]any{"input": "hello", "idempotencyKey": "k1"}, &run); st != 202 {
			t.Fatalf("start run: %d %v", st, run.Error)
		}
		text := ""
		for _, m := range sc.runEvents(t, run.RunID, "") {
			if m["type"] == "message_update" && m["event"] == "text_delta" {
				text += m["delta"].(string)
			}
		}
		if !strings.Contains(text, onACP) {
			t.Errorf("serve's run streamed %q, want the ACP agent's %q", text, onACP)
		}
	})

	t.Run("bad values name the file and the key", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			v    any
			want string
		}{
			{"unknown engine", map[string]any{"providers": map[string]string{"anthropic": "codex"}}, `harness.providers.anthropic: "codex": want builtin, claude-code, pi or acp:<command>`},
			{"model without provider", map[string]any{"models": map[string]string{"mock-claude": "pi"}}, `harness.models: "mock-claude": want provider/model`},
			{"not an object", "pi", `key "harness"`},
			{"unknown key", map[string]any{"defualt": "pi"}, `unknown field "defualt"`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				home := t.TempDir()
				file := filepath.Join(home, "settings.json")
				settings(file, tc.v)
				code, out, errs := run(t, home, t.TempDir(), "anthropic/mock-claude", nil)
				if code != exitUsage && code != exitFailed || !strings.Contains(errs, file) || !strings.Contains(errs, tc.want) {
					t.Errorf("exit %d\nstdout %s\nstderr %s\nwant an error naming %s and %q", code, out, errs, file, tc.want)
				}
			})
		}
		code, _, errs := run(t, t.TempDir(), t.TempDir(), "openai/mock-model", []string{envHarness + "=codex"})
		if code != exitUsage || !strings.Contains(errs, envHarness+`="codex": want builtin`) {
			t.Errorf("%s=codex: exit %d, stderr %s", envHarness, code, errs)
		}
	})
}
