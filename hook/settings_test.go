//go:build unix

package hook

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestTrust(t *testing.T) {
	home := t.TempDir()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	project := filepath.Join(root, "project")
	sub := filepath.Join(project, "sub")
	other := filepath.Join(root, "other")
	link := filepath.Join(root, "link")
	for _, d := range []string{sub, other, filepath.Join(root, "project-evil")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(project, link); err != nil {
		t.Fatal(err)
	}
	check := func(dir string, want bool) {
		t.Helper()
		got, err := Trusted(home, dir)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("Trusted(%s) = %v, want %v", dir, got, want)
		}
	}
	check(project, false) // no trust file yet

	recorded, err := Trust(home, link) // through a symlink: the real path is recorded
	if err != nil {
		t.Fatal(err)
	}
	if recorded != project {
		t.Errorf("recorded %s, want the real path %s", recorded, project)
	}
	if _, err := Trust(home, project); err != nil { // twice is fine
		t.Fatal(err)
	}
	dirs, err := TrustedDirs(home)
	if err != nil || !cmp.Equal(dirs, []string{project}) {
		t.Errorf("TrustedDirs = %v, %v", dirs, err)
	}
	check(project, true)
	check(sub, true)  // below a trusted dir
	check(link, true) // another path to it
	check(other, false)
	check(root, false) // parents are not trusted by a child
	check(filepath.Join(root, "project-evil"), false)

	if err := Untrust(home, project); err != nil {
		t.Fatal(err)
	}
	check(project, false)

	info, err := os.Stat(filepath.Join(home, TrustFile))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm()&0o022 != 0 {
		t.Errorf("trust file mode %v is writable by others", info.Mode())
	}
}

func TestTrustFileCorrupt(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, TrustFile), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Trusted(home, t.TempDir()); err == nil || !strings.Contains(err.Error(), "fix the JSON") {
		t.Errorf("err = %v", err)
	}
}

func TestHomeFromEnv(t *testing.T) {
	t.Setenv("AGENTLOOP_HOME", "/somewhere/al")
	if h, err := Home(); err != nil || h != "/somewhere/al" {
		t.Errorf("Home() = %q, %v", h, err)
	}
	t.Setenv("AGENTLOOP_HOME", "")
	t.Setenv("HOME", "/home/u")
	if h, err := Home(); err != nil || h != "/home/u/.agentloop" {
		t.Errorf("Home() = %q, %v", h, err)
	}
}

func TestLoadTrust(t *testing.T) {
	userHooks := map[string][]cmdSpec{EventPreToolUse: {{matcher: "Bash", command: "user-guard"}}}
	projHooks := map[string][]cmdSpec{
		EventPreToolUse: {{matcher: "Bash", command: "./guard.sh"}},
		EventStop:       {{command: "./stop.sh", timeout: 5}},
	}
	tests := []struct {
		name       string
		trust      bool // recorded in trusted.json
		override   bool // --trust
		noHooks    bool
		wantActive []string
		wantWarn   []string // substrings, one warning each
	}{
		{"untrusted skips project hooks with one warning", false, false, false,
			[]string{"user-guard"},
			[]string{"Skipped 2 hook(s) from", "PreToolUse[Bash] `./guard.sh`; Stop `./stop.sh`", "agentloop trust"}},
		{"trusted runs all", true, false, false, []string{"user-guard", "./guard.sh", "./stop.sh"}, nil},
		{"--trust runs all for the run", false, true, false, []string{"user-guard", "./guard.sh", "./stop.sh"}, nil},
		{"--no-hooks runs none", true, false, true, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.user(t, userHooks)
			f.project(t, projHooks)
			if tt.trust {
				if _, err := Trust(f.home, f.ws); err != nil {
					t.Fatal(err)
				}
			}
			opts := func(o *LoadOptions) { o.Trust, o.NoHooks = tt.override, tt.noHooks }
			b, warnings := f.load(t, opts)
			if len(warnings) != 0 && len(tt.wantWarn) == 0 || len(tt.wantWarn) > 0 && len(warnings) != 1 {
				t.Fatalf("warnings %q", warnings)
			}
			for _, w := range tt.wantWarn {
				if !strings.Contains(warnings[0], w) {
					t.Errorf("warning %q lacks %q", warnings[0], w)
				}
			}
			var o LoadOptions
			o.Home, o.Workspace = f.home, f.ws
			opts(&o)
			list, err := List(o)
			if err != nil {
				t.Fatal(err)
			}
			var active []string
			for _, h := range list {
				if h.Active {
					active = append(active, h.Command)
				} else if h.Inactive == "" {
					t.Errorf("%s inactive without a reason", h.Command)
				}
			}
			if diff := cmp.Diff(tt.wantActive, active); diff != "" {
				t.Errorf("active (-want +got):\n%s", diff)
			}
			// What is active is what is on the bus.
			wantPre := 0
			for _, c := range active {
				if c != "./stop.sh" {
					wantPre = 1
				}
			}
			if got := b.Len(BeforeToolCall); got != wantPre {
				t.Errorf("before_tool_call hooks on the bus: %d, want %d", got, wantPre)
			}
		})
	}
}

func TestListDetails(t *testing.T) {
	f := newFixture(t)
	writeJSON(t, filepath.Join(f.home, SettingsFile), map[string]any{
		"model": "ignored",
		"hooks": map[string]any{
			"PreToolUse": []any{map[string]any{"matcher": "Edit|Write", "hooks": []any{
				map[string]any{"type": "command", "command": "fmt.sh", "timeout": 30},
				map[string]any{"type": "prompt", "prompt": "is this safe?"},
				map[string]any{"type": "command", "command": "slow.sh", "timeout": 1e12},
			}}},
			"Notification": []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": "notify"}}}},
			"PostToolUse":  []any{map[string]any{"matcher": "Bash(", "hooks": []any{map[string]any{"type": "command", "command": "x"}}}},
		},
	})
	list, err := List(LoadOptions{Home: f.home, Workspace: f.ws})
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(f.home, SettingsFile)
	want := []ShellHook{
		{Event: "PreToolUse", Matcher: "Edit|Write", Command: "fmt.sh", Timeout: 30 * time.Second, Source: src, Scope: ScopeUser, Active: true},
		{Event: "PreToolUse", Matcher: "Edit|Write", Timeout: DefaultTimeout, Source: src, Scope: ScopeUser,
			Inactive: `hook type "prompt" is not supported; only "command" is`},
		{Event: "PreToolUse", Matcher: "Edit|Write", Command: "slow.sh", Timeout: 24 * time.Hour, Source: src, Scope: ScopeUser, Active: true},
		{Event: "PostToolUse", Matcher: "Bash(", Command: "x", Timeout: DefaultTimeout, Source: src, Scope: ScopeUser,
			Inactive: "the matcher is not a valid regexp: error parsing regexp: missing closing ): `^(?:Bash()$`"},
		{Event: "Notification", Command: "notify", Timeout: DefaultTimeout, Source: src, Scope: ScopeUser,
			Inactive: "agentloop does not run Notification hooks"},
	}
	if diff := cmp.Diff(want, list, cmp.AllowUnexported(ShellHook{})); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	_, warnings := f.load(t, nil)
	if len(warnings) != 1 || !strings.HasPrefix(warnings[0], "Skipped 3 hook(s) that cannot run") {
		t.Errorf("warnings %q", warnings)
	}
}

func TestLoadErrors(t *testing.T) {
	f := newFixture(t)
	if err := os.WriteFile(filepath.Join(f.home, SettingsFile), []byte(`{"hooks": [}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := Load(LoadOptions{Home: f.home, Workspace: f.ws})
	if err == nil || !strings.Contains(err.Error(), filepath.Join(f.home, SettingsFile)) || !strings.Contains(err.Error(), "--no-hooks") {
		t.Errorf("err = %v", err)
	}
	// --no-hooks does not even read the files.
	if _, _, err := Load(LoadOptions{Home: f.home, Workspace: f.ws, NoHooks: true}); err != nil {
		t.Errorf("--no-hooks: %v", err)
	}
	if _, _, err := Load(LoadOptions{Home: f.home}); err == nil {
		t.Error("no workspace: no error")
	}
	if _, _, err := Load(LoadOptions{Home: f.home, Workspace: filepath.Join(f.ws, "missing")}); err == nil {
		t.Error("missing workspace: no error")
	}
}

func TestDisableAllHooks(t *testing.T) {
	f := newFixture(t)
	f.user(t, map[string][]cmdSpec{EventStop: {{command: "u"}}})
	// An untrusted project cannot switch off the user's hooks.
	writeJSON(t, filepath.Join(f.ws, ProjectDir, SettingsFile), map[string]any{"disableAllHooks": true,
		"hooks": map[string]any{"Stop": []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": "p"}}}}}})
	b, _ := f.load(t, nil)
	if b.Len(Stop) != 1 {
		t.Error("an untrusted project switched off the user's hooks")
	}
	b, warnings := f.load(t, func(o *LoadOptions) { o.Trust = true })
	if b.Len(Stop) != 0 || len(warnings) != 0 {
		t.Errorf("a trusted project's disableAllHooks was ignored: %d hooks, %q", b.Len(Stop), warnings)
	}
}

func TestProjectSettingsSameAsUser(t *testing.T) {
	// Running in the home's parent with AGENTLOOP_HOME=<ws>/.agentloop: one
	// file, read once, as the user's.
	f := newFixture(t)
	f.home = filepath.Join(f.ws, ProjectDir)
	f.user(t, map[string][]cmdSpec{EventStop: {{command: "u"}}})
	list, err := List(LoadOptions{Home: f.home, Workspace: f.ws})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Scope != ScopeUser || !list[0].Active {
		t.Errorf("list %+v", list)
	}
}
