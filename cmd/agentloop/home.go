package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentloop/agentloop/llm"
)

// agentloopHome returns $AGENTLOOP_HOME, or ~/.agentloop.
func agentloopHome(getenv func(string) string) (string, error) {
	h, err := llm.Home(getenv)
	if err != nil {
		return "", fmt.Errorf("cannot find the agentloop home: %w", err)
	}
	return filepath.Abs(h)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// settingsFallbacks reads the "fallbacks" list (provider/id model specs) of
// $AGENTLOOP_HOME/settings.json, the file that also holds the user's hooks.
func settingsFallbacks(home string) ([]string, error) {
	var s struct {
		Fallbacks []string `json:"fallbacks"`
	}
	err := readSettings(filepath.Join(home, "settings.json"), &s)
	return s.Fallbacks, err
}

// readSettings decodes the settings file at path into v; a missing file
// leaves v as it is.
func readSettings(path string, v any) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %v (fix the JSON, or move the file away)", path, err)
	}
	return nil
}

// toolSettings is what $AGENTLOOP_HOME/settings.json says about tools:
//
//	{"toolEnv": {"deny": ["INTERNAL_*"], "allow": ["GITHUB_TOKEN"]},
//	 "sandbox": {"sockets": ["/run/postgresql/.s.PGSQL.5432"]}}
//
// toolEnv names (or * patterns of) environment variables tools (bash, MCP
// servers) must not inherit, besides provider keys and the usual secret
// names, and those they may inherit anyway; sandbox.sockets are host Unix
// sockets a --sandbox command may still connect to.
type toolSettings struct {
	ToolEnv toolEnvSettings `json:"toolEnv"`
	Sandbox struct {
		Sockets []string `json:"sockets"`
	} `json:"sandbox"`
}

type toolEnvSettings struct {
	Deny  []string `json:"deny"`
	Allow []string `json:"allow"`
	// secrets are the run's credentials (keepKeysFromTools): no
	// variable holding one is inherited, whatever its name.
	secrets []string
}

// settingsTools reads the tool settings of $AGENTLOOP_HOME/settings.json.
func settingsTools(home string) (toolSettings, error) {
	var s toolSettings
	err := readSettings(filepath.Join(home, "settings.json"), &s)
	return s, err
}
