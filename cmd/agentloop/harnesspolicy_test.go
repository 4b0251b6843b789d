package main

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
)

// The settings layers become one harness.Policy: the workspace wins key by
// key, an untrusted workspace's acp:<command> is skipped, and the choice
// for a model follows harness.Select.
func TestSettingsHarness(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(home, "settings.json"), `{"harness": {"default": "pi",
		"providers": {"anthropic": "claude-code", "openai": "pi"}, "models": {"anthropic/claude-x": "builtin"}}}`)
	writeFile(t, filepath.Join(ws, ".agentloop", "settings.json"), `{"harness": {"providers": {"openai": "builtin", "google": "acp:my-agent --flag"}}}`)
	env, _, errb := cliEnvWith(home, nil)
	p, hs, err := settingsHarness(env, home, ws, false)
	if err != nil {
		t.Fatal(err)
	}
	if p.Default != "pi" || p.ByProvider["anthropic"] != "claude-code" || p.ByProvider["openai"] != "builtin" ||
		p.ByModel["anthropic/claude-x"] != "builtin" || p.ByProvider["google"] != "" {
		t.Errorf("policy %+v", p)
	}
	if !strings.Contains(errb.String(), "harness.providers.google") {
		t.Errorf("no warning for the untrusted command: %q", errb.String())
	}
	var ids []string
	for _, h := range hs {
		ids = append(ids, h.ID())
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"claude-code", "pi"}) {
		t.Errorf("engines %v", ids)
	}

	// Trusted (--trust), the command counts, under its harness id.
	p, _, err = settingsHarness(env, home, ws, true)
	if err != nil || p.ByProvider["google"] != "acp:my-agent" {
		t.Errorf("trusted: %+v %v", p, err)
	}
	for model, want := range map[string]string{"anthropic/claude-y": "claude-code", "anthropic/claude-x": "", "openai/gpt": "", "mistral/m": "pi"} {
		provider, id, _ := strings.Cut(model, "/")
		h, fallback, err := chooseHarness(context.Background(), env, &runFlags{trust: true}, home, ws, llm.ModelInfo{Provider: provider, ID: id})
		got := ""
		if h != nil {
			got = h.ID()
		}
		if err != nil || got != want || fallback != (want != "") {
			t.Errorf("%s: harness %q fallback %v err %v, want %q", model, got, fallback, err, want)
		}
	}
}
