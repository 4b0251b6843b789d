package proc

import (
	"os"
	"path"
	"strings"
)

// DefaultSecretVars are the environment variables a tool's subprocess
// never inherits unless allowed: provider keys and the usual names of
// tokens, passwords and cloud credentials. A * matches any run of
// characters.
var DefaultSecretVars = []string{
	"*_API_KEY", "*_APIKEY", "*_API_TOKEN", "*_TOKEN", "*_ACCESS_TOKEN", "*_AUTH_TOKEN",
	"*_SECRET", "*_SECRET_KEY", "*_SECRET_ACCESS_KEY", "*_CLIENT_SECRET", "*_PRIVATE_KEY",
	"*_PASSWORD", "*_PASSWD", "*_CREDENTIALS",
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "GOOGLE_APPLICATION_CREDENTIALS",
	"PGPASSWORD", "MYSQL_PWD",
}

// ShellStartupVars make bash run code or redefine commands before the
// command line runs (BASH_ENV is sourced by bash -c; BASH_FUNC_name%%
// imports a function that can shadow ls): a command judged read-only on
// its syntax would not be. The bash tool drops them too.
var ShellStartupVars = []string{"BASH_ENV", "ENV", "BASH_FUNC_*"}

// EnvPolicy says which of agentloop's environment variables a tool's
// subprocess inherits. The zero value removes DefaultSecretVars.
type EnvPolicy struct {
	// Deny are more names or patterns (* matches any run of characters)
	// to remove.
	Deny []string
	// Allow are names or patterns kept even when a default or Deny
	// pattern matches them.
	Allow []string
	// Secrets are values never passed on, whatever the variable's name:
	// the API keys of the run (a models file may read them from any
	// variable). Values shorter than 8 bytes are ignored.
	Secrets []string
}

// Filter returns env without the variables the policy removes. A nil env
// means os.Environ(). It never returns nil, so the result can be given to
// exec.Cmd.Env as is.
func (p *EnvPolicy) Filter(env []string, extraDeny ...string) []string {
	if env == nil {
		env = os.Environ()
	}
	if p == nil {
		p = &EnvPolicy{}
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if !p.keeps(name, value, extraDeny) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func (p *EnvPolicy) keeps(name, value string, extraDeny []string) bool {
	if envMatch(p.Allow, name) {
		return true
	}
	if envMatch(DefaultSecretVars, name) || envMatch(p.Deny, name) || envMatch(extraDeny, name) {
		return false
	}
	for _, s := range p.Secrets {
		if len(s) >= 8 && strings.Contains(value, s) {
			return false
		}
	}
	return true
}

// envMatch reports whether name matches one of patterns; names compare
// case-sensitively, as the environment does.
func envMatch(patterns []string, name string) bool {
	for _, pat := range patterns {
		if pat == name {
			return true
		}
		if strings.ContainsAny(pat, "*?[") {
			if ok, known := affixMatch(pat, name); known {
				if ok {
					return true
				}
				continue
			}
			if ok, err := path.Match(pat, name); err == nil && ok {
				return true
			}
		}
	}
	return false
}

// affixMatch answers path.Match for the common shapes of a pattern,
// "*SUFFIX" and "PREFIX*" with no other special character, without its
// general matcher (which the bash tool paid for on every variable of
// every command). known is false for any other pattern. As in path.Match,
// the star matches no '/'.
func affixMatch(pat, name string) (ok, known bool) {
	if strings.Count(pat, "*") != 1 || strings.ContainsAny(pat, "?[\\") {
		return false, false
	}
	switch {
	case pat[0] == '*':
		rest, found := strings.CutSuffix(name, pat[1:])
		return found && !strings.Contains(rest, "/"), true
	case pat[len(pat)-1] == '*':
		rest, found := strings.CutPrefix(name, pat[:len(pat)-1])
		return found && !strings.Contains(rest, "/"), true
	}
	return false, false
}
