package main

import (
	"errors"
	"os"
	"path/filepath"
)

// agentloopHome returns $AGENTLOOP_HOME, or ~/.agentloop.
func agentloopHome(getenv func(string) string) (string, error) {
	if h := getenv("AGENTLOOP_HOME"); h != "" {
		return filepath.Abs(h)
	}
	u, err := os.UserHomeDir()
	if err != nil || u == "" {
		return "", errors.New("cannot find a home directory: set AGENTLOOP_HOME to where agentloop may keep its files")
	}
	return filepath.Join(u, ".agentloop"), nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
