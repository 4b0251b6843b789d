package mcp

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentloop/agentloop/tool"
)

// Issue 17, item 8: a tools/call that never answers is cut off by the
// timeout of its server's entry in .mcp.json ("timeout", milliseconds),
// well before the manager-wide one.
func TestPerServerCallTimeout(t *testing.T) {
	srv := stdioServer("stdio")
	doc, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"slow": map[string]any{"command": srv.Command, "args": srv.Args, "env": srv.Env, "timeout": 300},
	}})
	cfg, err := Parse(doc, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Servers["slow"].Timeout; got != 300 {
		t.Fatalf("timeout parsed as %d, want 300", got)
	}
	opts := quiet() // a 20 s call timeout for the manager
	m, err := Start(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	reg, _ := tool.NewRegistry(m.Tools()...)
	start := time.Now()
	res := reg.Execute(context.Background(), call("mcp__slow__hang", `{}`), nil)
	if !res.IsError || !strings.Contains(res.Text(), "did not answer within 300ms") {
		t.Errorf("%q, want a timeout error after 300ms", res.Text())
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("the call took %v", el)
	}
}

// Issue 17, item 4: a stdio server does not inherit provider keys or the
// variables of the deny list; the "env" of its own configuration is
// passed as written.
func TestStdioServerEnvWithoutSecrets(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-mcp-inherited-secret")
	t.Setenv("MCP_TEST_CUSTOM", "custom-inherited-secret")
	t.Setenv("MCP_TEST_PLAIN", "plain-inherited")
	dump := t.TempDir() + "/env.txt"
	env := serverEnv("stdio")
	env["GITHUB_TOKEN"] = "configured-token"
	cfg := Config{Servers: map[string]ServerConfig{"sh": {Command: "bash",
		Args: []string{"-c", "printenv > " + dump + "; exec " + os.Args[0] + " -test.run=^$"}, Env: env}}}
	opts := quiet()
	opts.EnvDeny = []string{"MCP_TEST_CUSTOM"}
	m, err := Start(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	data, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	got := string(data)
	for _, leaked := range []string{"sk-mcp-inherited-secret", "custom-inherited-secret"} {
		if strings.Contains(got, leaked) {
			t.Errorf("the server inherited %q", leaked)
		}
	}
	for _, kept := range []string{"MCP_TEST_PLAIN=plain-inherited", "GITHUB_TOKEN=configured-token"} {
		if !strings.Contains(got, kept) {
			t.Errorf("the server lacks %q", kept)
		}
	}
}
