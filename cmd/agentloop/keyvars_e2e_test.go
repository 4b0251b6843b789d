package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Review findings 3 and 6: a key read from the variable a models file
// names (the documented "apiKey": "LOCAL_KEY"), or a copy of it under an
// innocent name, never reaches bash: printenv's output, sent back to the
// model and kept in the transcript, holds no key.
func TestE2EModelsFileKeyVarHeldFromTools(t *testing.T) {
	const key = "sk-local-e2e-5a4b3c2d1e0f"
	for _, c := range []struct{ name, env string }{
		{"named variable", ""},
		{"copied value", "FOO=" + key},
		{"other profile", "KEY_B=sk-profile-b-e2e-778899"},
	} {
		t.Run(c.name, func(t *testing.T) {
			capture := filepath.Join(t.TempDir(), "requests.jsonl")
			base := mockLLM(t, "-rounds", "1", "-cmd", "printenv", "-capture", capture)
			home, ws := t.TempDir(), t.TempDir()
			writeFile(t, filepath.Join(home, "models.json"), `{"providers": {"openai": {"apiKey": "LOCAL_KEY",
			 "profiles": [{"id": "b", "apiKey": "KEY_B"}]}}}`)
			env := []string{"LOCAL_KEY=" + key}
			secrets := []string{key}
			if c.env != "" {
				env = append(env, c.env)
				_, v, _ := strings.Cut(c.env, "=")
				secrets = append(secrets, v)
			}
			reqs, transcripts := runPrintenv(t, env, home, ws, base, capture)
			for _, s := range secrets {
				if strings.Contains(reqs[1], s) {
					t.Errorf("the request after printenv holds %q", s)
				}
				for _, p := range transcripts {
					if data, _ := os.ReadFile(p); bytes.Contains(data, []byte(s)) {
						t.Errorf("the transcript %s holds %q", p, s)
					}
				}
			}
		})
	}
}

// Review finding 6: agentloop mcp list starts stdio servers with the same
// environment as a run: without the toolEnv deny list's variables and the
// models file's key variable.
func TestE2EMCPListEnvDeny(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	dump := filepath.Join(t.TempDir(), "server-env.txt")
	writeFile(t, filepath.Join(home, "settings.json"), `{"toolEnv": {"deny": ["CUSTOM_CRED"]}}`)
	writeFile(t, filepath.Join(home, "models.json"), `{"providers": {"openai": {"apiKey": "LOCAL_KEY"}}}`)
	writeFile(t, filepath.Join(home, "mcp.json"), `{"mcpServers":{"dumper":{"command":"sh","args":["-c","env > `+dump+`"]}}}`)
	env := []string{"CUSTOM_CRED=custom-e2e-secret", "LOCAL_KEY=sk-local-e2e-5a4b3c2d1e0f", "BAR=sk-local-e2e-5a4b3c2d1e0f",
		"AGENTLOOP_E2E_PLAIN=plain-e2e-value"}
	code, out, errs := execCLI(t, env, home, "mcp", "list", "--cwd", ws)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	data, err := os.ReadFile(dump)
	if err != nil {
		t.Fatalf("the server did not run: %v\n%s", err, out)
	}
	if !strings.Contains(string(data), "plain-e2e-value") {
		t.Fatalf("the server's environment lacks a plain variable (so the test proves nothing):\n%s", data)
	}
	for _, s := range []string{"custom-e2e-secret", "sk-local-e2e"} {
		if strings.Contains(string(data), s) {
			t.Errorf("the MCP server inherited %q", s)
		}
	}
}
