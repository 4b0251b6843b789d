package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentloop/agentloop/harness"
	"github.com/agentloop/agentloop/harness/builtin"
	"github.com/agentloop/agentloop/hook"
	"github.com/agentloop/agentloop/llm"
)

// envHarness names the harness of every run, as --harness does (which
// beats it); it beats the settings files.
const envHarness = "AGENTLOOP_HARNESS"

// harnessSettings is the "harness" key of a settings file:
//
//	{"harness": {"default": "builtin", "providers": {"anthropic": "claude-code"},
//	             "models": {"anthropic/claude-x": "pi"}}}
type harnessSettings struct {
	Default   string            `json:"default"`
	Providers map[string]string `json:"providers"`
	Models    map[string]string `json:"models"`
}

// chooseHarness is the harness of a run on model info: --harness, else
// AGENTLOOP_HARNESS, else the "harness" settings of the user
// ($AGENTLOOP_HOME/settings.json) and the workspace
// (<cwd>/.agentloop/settings.json, which wins key by key) through
// harness.Select. nil is the built-in loop; fallback says a preflight
// failure of the chosen engine may move on to it (a settings choice, as
// harness.Select allows; a named one never does).
func chooseHarness(ctx context.Context, env *cliEnv, f *runFlags, home, cwd string, info llm.ModelInfo) (h harness.Harness, fallback bool, err error) {
	if f.harness != "" {
		h, err := harnessFor(env, f.harness)
		if err != nil {
			return nil, false, usageError{err}
		}
		return h, false, nil
	}
	if v := env.getenv(envHarness); v != "" {
		h, err := engineNamed(env, v)
		if err != nil {
			return nil, false, usageError{fmt.Errorf("%s=%w", envHarness, err)}
		}
		return h, false, nil
	}
	p, hs, err := settingsHarness(env, home, cwd, f.trust)
	if err != nil || p == nil {
		return nil, false, err
	}
	chain, err := harness.Select(ctx, hs, builtin.Harness{}, harness.Route{Provider: info.Provider, Model: info.ID}, *p, nil)
	if err != nil {
		return nil, false, err
	}
	if chain[0].ID() == harness.BuiltinID {
		return nil, false, nil // the runner's own loop
	}
	return chain[0], len(chain) > 1, nil
}

// settingsHarness reads the harness policy of the settings files (nil when
// none has a "harness" key) and the engines it names. A workspace file is
// honoured for a value that runs a command of its own (acp:<command>) only
// in a trusted workspace; elsewhere that value is skipped with a warning.
func settingsHarness(env *cliEnv, home, cwd string, trust bool) (*harness.Policy, []harness.Harness, error) {
	user, err := readHarnessSettings(filepath.Join(home, "settings.json"))
	if err != nil {
		return nil, nil, err
	}
	var proj *harnessSettings
	projPath := ""
	if cwd != "" {
		projPath = filepath.Join(cwd, ".agentloop", "settings.json")
		if proj, err = readHarnessSettings(projPath); err != nil {
			return nil, nil, err
		}
	}
	if user == nil && proj == nil {
		return nil, nil, nil
	}
	if proj != nil && !trust {
		if trust, err = hook.Trusted(home, cwd); err != nil {
			return nil, nil, err
		}
	}
	p := &harness.Policy{ByModel: map[string]string{}, ByProvider: map[string]string{}}
	byID := map[string]string{} // harness id → the name that made it
	var hs []harness.Harness
	// use checks one value and returns the id Select knows it by.
	use := func(file, key, name string) (id string, ok bool, err error) {
		if name == "" {
			return "", false, nil
		}
		h, err := engineNamed(env, name)
		if err != nil {
			return "", false, fmt.Errorf("%s: %s: %w", file, key, err)
		}
		if h == nil {
			return harness.BuiltinID, true, nil
		}
		if file == projPath && strings.HasPrefix(name, "acp:") && !trust {
			fmt.Fprintf(env.stderr, "agentloop: warning: %s is not trusted: %s of %s (%q runs a command) is skipped (agentloop trust, or --trust for one run)\n",
				cwd, key, file, name)
			return "", false, nil
		}
		if prev, dup := byID[h.ID()]; dup {
			if prev != name {
				return "", false, fmt.Errorf("%s: %s: %q and %q are both harness %s: name each ACP agent's command once", file, key, prev, name, h.ID())
			}
			return h.ID(), true, nil
		}
		byID[h.ID()] = name
		hs = append(hs, h)
		return h.ID(), true, nil
	}
	for _, layer := range []struct {
		file string
		s    *harnessSettings
	}{{filepath.Join(home, "settings.json"), user}, {projPath, proj}} {
		if layer.s == nil {
			continue
		}
		if id, ok, err := use(layer.file, "harness.default", layer.s.Default); err != nil {
			return nil, nil, err
		} else if ok {
			p.Default = id
		}
		for _, m := range []struct {
			key  string
			from map[string]string
			to   map[string]string
		}{{"harness.providers", layer.s.Providers, p.ByProvider}, {"harness.models", layer.s.Models, p.ByModel}} {
			for _, k := range slices.Sorted(maps.Keys(m.from)) {
				if m.key == "harness.models" && !strings.Contains(k, "/") {
					return nil, nil, fmt.Errorf("%s: %s: %q: want provider/model", layer.file, m.key, k)
				}
				id, ok, err := use(layer.file, m.key+"."+k, m.from[k])
				if err != nil {
					return nil, nil, err
				}
				if ok {
					m.to[k] = id
				}
			}
		}
	}
	return p, hs, nil
}

// readHarnessSettings reads the "harness" key of a settings file (nil when
// the file or the key is missing).
func readHarnessSettings(path string) (*harnessSettings, error) {
	var s struct {
		Harness json.RawMessage `json:"harness"`
	}
	if err := readSettings(path, &s); err != nil {
		return nil, err
	}
	if len(s.Harness) == 0 || string(s.Harness) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(strings.NewReader(string(s.Harness)))
	dec.DisallowUnknownFields()
	var h harnessSettings
	if err := dec.Decode(&h); err != nil {
		return nil, fmt.Errorf(`%s: key "harness": %v (want {"default": …, "providers": {…}, "models": {…}})`, path, err)
	}
	return &h, nil
}
