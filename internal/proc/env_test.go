package proc

import (
	"path"
	"slices"
	"testing"
)

func TestEnvPolicyFilter(t *testing.T) {
	env := []string{
		"PATH=/usr/bin", "HOME=/root", "OPENAI_API_KEY=sk-1", "ANTHROPIC_API_KEY=sk-ant", "GEMINI_API_KEY=g",
		"OPENROUTER_API_KEY=or", "GITHUB_TOKEN=ghp", "HF_TOKEN=hf", "AWS_SECRET_ACCESS_KEY=aws", "AWS_ACCESS_KEY_ID=id",
		"AWS_SESSION_TOKEN=st", "DB_PASSWORD=pw", "STRIPE_SECRET_KEY=sk", "MY_CLIENT_SECRET=cs", "PGPASSWORD=pg",
		"CUSTOM_CRED=c", "KEEP_TOKEN=k", "TOKENIZER=bpe", "API_KEY_FILE=/x", "WEIRD=holds sk-live-0123456789 inside",
		"BASH_ENV=/evil", "BASH_FUNC_ls%%=() { echo x; }", "LANG=C", "NOEQUALS",
	}
	p := &EnvPolicy{Deny: []string{"CUSTOM_*"}, Allow: []string{"KEEP_TOKEN"}, Secrets: []string{"sk-live-0123456789", "short"}}
	got := p.Filter(env, ShellStartupVars...)
	want := []string{"PATH=/usr/bin", "HOME=/root", "KEEP_TOKEN=k", "TOKENIZER=bpe", "API_KEY_FILE=/x", "LANG=C", "NOEQUALS"}
	if !slices.Equal(got, want) {
		t.Errorf("Filter:\n got %q\nwant %q", got, want)
	}
	// Without the shell variables, they stay (hooks are not scrubbed at
	// all; MCP servers keep BASH_ENV).
	if got := (*EnvPolicy)(nil).Filter([]string{"BASH_ENV=/x", "OPENAI_API_KEY=k"}); !slices.Equal(got, []string{"BASH_ENV=/x"}) {
		t.Errorf("nil policy: %q", got)
	}
	if got := (&EnvPolicy{}).Filter([]string{}); got == nil {
		t.Error("Filter returned nil for an empty environment: exec.Cmd would inherit everything")
	}
}

// The fast path for "*SUFFIX" and "PREFIX*" answers as path.Match does.
func TestAffixMatchAgreesWithPathMatch(t *testing.T) {
	patterns := append(append([]string{"CUSTOM_*", "*", "A*B", "*_KEY*", "X?*", "[A]*", `\**`}, DefaultSecretVars...), ShellStartupVars...)
	names := []string{"", "OPENAI_API_KEY", "API_KEY", "_API_KEY", "A/B_API_KEY", "CUSTOM_", "CUSTOM_X", "CUSTOM_/X",
		"BASH_FUNC_ls%%", "BASH_FUNC_", "AXB", "MY_TOKEN", "TOKEN", "*x", "X1"}
	for _, pat := range patterns {
		for _, name := range names {
			want, err := path.Match(pat, name)
			if err != nil {
				continue
			}
			if got, known := affixMatch(pat, name); known && got != want {
				t.Errorf("affixMatch(%q, %q) = %v; path.Match says %v", pat, name, got, want)
			}
			if got := envMatch([]string{pat}, name); got != want {
				t.Errorf("envMatch(%q, %q) = %v; path.Match says %v", pat, name, got, want)
			}
		}
	}
}

func BenchmarkEnvFilter(b *testing.B) {
	env := make([]string, 0, 40)
	for i := range 40 {
		env = append(env, "VARIABLE_NUMBER_"+string(rune('A'+i%26))+"=some value of a variable")
	}
	p := &EnvPolicy{}
	b.ReportAllocs()
	for b.Loop() {
		p.Filter(env, ShellStartupVars...)
	}
}
