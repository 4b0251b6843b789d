package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The real filesystem MCP server from npm, installed once per machine
// into a cache directory beside the system's temporary files.
const fsServerPackage = "@modelcontextprotocol/server-filesystem@2026.8.31"

var (
	fsServerOnce sync.Once
	fsServerJS   string
	fsServerErr  error
)

// fsServer returns the path of the server's entry point, installing it
// with npm when it is not cached; it skips the test when node or npm is
// missing or the registry cannot be reached.
func fsServer(t *testing.T) string {
	t.Helper()
	fsServerOnce.Do(func() {
		if _, err := exec.LookPath("node"); err != nil {
			fsServerErr = fmt.Errorf("node is not installed: %v", err)
			return
		}
		fsServerJS, fsServerErr = npmInstalled(fsServerPackage, filepath.Join("node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js"))
	})
	if fsServerErr != nil {
		t.Skipf("the filesystem MCP server from npm is not available (%v): skipping the test with a real MCP server", fsServerErr)
	}
	return fsServerJS
}

// fsWorkspace makes a workspace whose .mcp.json starts the filesystem
// server on it as "fs".
func fsWorkspace(t *testing.T) string {
	ws := t.TempDir()
	servers, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"fs": map[string]any{"command": "node", "args": []string{fsServer(t), ws}}}})
	writeFile(t, filepath.Join(ws, ".mcp.json"), string(servers))
	return ws
}

// offeredTools lists the tool names of a captured Chat Completions request.
func offeredTools(t *testing.T, body string) []string {
	t.Helper()
	var req struct {
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range req.Tools {
		names = append(names, tl.Function.Name)
	}
	return names
}

// Issue 16.4: one tool policy covers the tools of a real MCP server
// (@modelcontextprotocol/server-filesystem) as it covers the built-in ones.
func TestE2EMCPToolPolicy(t *testing.T) {
	write := `{"path":"%s","content":"written through MCP"}`
	tests := []struct {
		name     string
		args     []string
		offered  func([]string) error
		written  bool
		stderrHa string
	}{
		{name: "default profile offers every MCP tool", written: true,
			offered: has("mcp__fs__write_file", "mcp__fs__read_text_file", "bash")},
		{name: "--read-only keeps only readOnlyHint tools", args: []string{"--read-only"},
			offered: all(has("mcp__fs__read_text_file", "mcp__fs__list_directory", "read"), lacks("mcp__fs__write_file", "mcp__fs__edit_file", "mcp__fs__move_file", "mcp__fs__create_directory", "bash", "write"))},
		{name: "--profile readonly keeps only readOnlyHint tools", args: []string{"--profile", "readonly"},
			offered: all(has("mcp__fs__read_text_file", "read"), lacks("mcp__fs__write_file", "mcp__fs__edit_file", "write"))},
		{name: "--no-tools offers none", args: []string{"--no-tools"}, offered: exactly()},
		{name: "--tools takes an MCP name", args: []string{"--tools", "read,mcp__fs__list_directory"},
			offered: exactly("read", "mcp__fs__list_directory")},
		{name: "--approve never refuses an MCP write", args: []string{"--approve", "never"},
			offered: has("mcp__fs__write_file"), stderrHa: `approval mode "never"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := fsWorkspace(t)
			target := filepath.Join(ws, "out.txt")
			capture := filepath.Join(t.TempDir(), "requests.jsonl")
			base := mockLLM(t, "-rounds", "1", "-tool", "mcp__fs__write_file", "-args", fmt.Sprintf(write, target), "-capture", capture)
			code, _, errs := runProc(t, t.TempDir(), ws, base, append([]string{"--trust", "--no-session"}, append(tc.args, "write the file")...)...)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, errs)
			}
			if _, err := os.Stat(target); (err == nil) != tc.written {
				t.Errorf("file written through MCP: %v, want %v\n%s", err == nil, tc.written, errs)
			}
			if !strings.Contains(errs, tc.stderrHa) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderrHa, errs)
			}
			reqs := readLines(t, capture)
			if err := tc.offered(offeredTools(t, reqs[0])); err != nil {
				t.Errorf("offered tools: %v", err)
			}
		})
	}
}

// Issue 16.4: an MCP call starts while the model's message is still open
// only when the server annotates the tool readOnlyHint.
func TestE2EMCPEarlyStartOnlyReadOnly(t *testing.T) {
	for _, tc := range []struct {
		tool, args string
		early      bool
	}{
		{"mcp__fs__list_directory", `{"path":"%s"}`, true},
		{"mcp__fs__create_directory", `{"path":"%s/made"}`, false},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			ws := fsWorkspace(t)
			base := mockLLM(t, "-rounds", "1", "-taildelay", "700ms", "-tool", tc.tool, "-args", fmt.Sprintf(tc.args, ws))
			code, out, errs := runProc(t, t.TempDir(), ws, base, "--trust", "--no-session", "--json", "go")
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, errs)
			}
			started, ended := -1, -1
			for i, line := range strings.Split(out, "\n") {
				var ev struct {
					Type    string `json:"type"`
					Message *struct {
						Role string `json:"role"`
					} `json:"message"`
				}
				_ = json.Unmarshal([]byte(line), &ev)
				switch {
				case ev.Type == "tool_execution_start" && started < 0:
					started = i
				case ev.Type == "message_end" && ev.Message != nil && ev.Message.Role == "assistant" && ended < 0:
					ended = i
				}
			}
			if started < 0 || ended < 0 {
				t.Fatalf("no tool start or message end in:\n%s", out)
			}
			if early := started < ended; early != tc.early {
				t.Errorf("started before the message ended: %v, want %v", early, tc.early)
			}
		})
	}
}

func has(names ...string) func([]string) error {
	return func(got []string) error {
		for _, n := range names {
			if !slices.Contains(got, n) {
				return fmt.Errorf("%s is not offered: %v", n, got)
			}
		}
		return nil
	}
}

func lacks(names ...string) func([]string) error {
	return func(got []string) error {
		for _, n := range names {
			if slices.Contains(got, n) {
				return fmt.Errorf("%s is offered: %v", n, got)
			}
		}
		return nil
	}
}

func exactly(names ...string) func([]string) error {
	return func(got []string) error {
		a, b := slices.Clone(got), slices.Clone(names)
		slices.Sort(a)
		slices.Sort(b)
		if !slices.Equal(a, b) {
			return fmt.Errorf("offered %v, want exactly %v", got, names)
		}
		return nil
	}
}

func all(checks ...func([]string) error) func([]string) error {
	return func(got []string) error {
		for _, c := range checks {
			if err := c(got); err != nil {
				return err
			}
		}
		return nil
	}
}

// npmInstalled returns the path of file rel inside npm package pkg
// (name@version), installing it when it is not cached in a directory beside
// the system's temporary files, shared by test processes.
func npmInstalled(pkg, rel string) (string, error) {
	dir := filepath.Join(os.TempDir(), "agentloop-test-npm", strings.NewReplacer("@", "", "/", "_").Replace(pkg))
	path := filepath.Join(dir, rel)
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", fmt.Errorf("npm is not installed: %v", err)
	}
	// Install beside the cache and rename into place, so that two test
	// processes never see a half-installed package.
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "install-")
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--prefix", tmp, pkg)
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("npm install %s: %v: %s", pkg, err, tail(string(out), 500))
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		if _, serr := os.Stat(path); serr != nil { // nobody else installed it meanwhile
			return "", err
		}
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("npm install %s: %s is missing: %v", pkg, rel, err)
	}
	return path, nil
}
