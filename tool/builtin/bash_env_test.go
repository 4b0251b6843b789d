package builtin

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentloop/agentloop/tool"
)

// Issue 17, item 4: bash does not inherit provider keys or other secrets,
// nor the variables that make bash run code before the command (BASH_ENV,
// exported functions, which could shadow ls in a command judged
// read-only). The deny and allow lists steer the rest.
func TestBashEnvWithoutSecrets(t *testing.T) {
	defer goleak.VerifyNone(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "evil.sh"), []byte("echo BASH_ENV-ran\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"PATH=/usr/local/bin:/usr/bin:/bin", "OPENAI_API_KEY=sk-openai-secret", "ANTHROPIC_API_KEY=sk-ant-secret",
		"GITHUB_TOKEN=ghp_secret", "AWS_SECRET_ACCESS_KEY=aws-secret", "CUSTOM_CRED=custom-secret",
		"KEEP_TOKEN=kept-on-purpose", "PLAIN=plain-value", "RUN_KEY_COPY=holds sk-run-key-0123456789",
		"BASH_ENV=" + dir + "/evil.sh", "BASH_FUNC_ls%%=() { echo ls-shadowed; }",
	}
	b := NewBash(BashOptions{Dir: dir, Env: env, EnvDeny: []string{"CUSTOM_*"}, EnvAllow: []string{"KEEP_TOKEN"},
		Secrets: []string{"sk-run-key-0123456789"}})
	res, err := b.Execute(context.Background(), bashCall(t, "printenv; ls evil.sh", 0), func(tool.Partial) {})
	if err != nil || res.IsError {
		t.Fatalf("%q, %v", res.Text(), err)
	}
	out := res.Text()
	for _, leaked := range []string{"sk-openai-secret", "sk-ant-secret", "ghp_secret", "aws-secret", "custom-secret",
		"sk-run-key", "BASH_ENV-ran", "ls-shadowed"} {
		if strings.Contains(out, leaked) {
			t.Errorf("%q reached the command:\n%s", leaked, out)
		}
	}
	for _, kept := range []string{"PLAIN=plain-value", "KEEP_TOKEN=kept-on-purpose", "evil.sh"} {
		if !strings.Contains(out, kept) {
			t.Errorf("%q is missing:\n%s", kept, out)
		}
	}
}
