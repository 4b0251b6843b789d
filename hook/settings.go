package hook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"
)

// maxTimeout caps a command hook's timeout from a settings file.
const maxTimeout = 24 * time.Hour

// SettingsFile is the name of a settings file, under the agentloop home
// (user settings) and under <workspace>/.agentloop (project settings).
const SettingsFile = "settings.json"

// ProjectDir is the directory of a workspace that holds its settings.
const ProjectDir = ".agentloop"

// settingsJSON is the part of a Claude Code settings file agentloop reads.
type settingsJSON struct {
	Hooks           map[string][]matcherJSON `json:"hooks"`
	DisableAllHooks bool                     `json:"disableAllHooks"`
	Permissions     permissionsJSON          `json:"permissions"`
}

type matcherJSON struct {
	Matcher string        `json:"matcher"`
	Hooks   []commandJSON `json:"hooks"`
}

type commandJSON struct {
	Type    string  `json:"type"`
	Command string  `json:"command"`
	Timeout float64 `json:"timeout"` // seconds
}

// LoadOptions say where to find settings and how to treat them.
type LoadOptions struct {
	// Home is the agentloop home; "" means Home().
	Home string
	// Workspace is the directory the run works in; its hooks are in
	// Workspace/.agentloop/settings.json. Hooks run there.
	Workspace string
	// ClaudeHome is Claude Code's user directory (~/.claude), whose
	// settings.json is read beside the agentloop home's; "" reads none.
	ClaudeHome string
	// Trust trusts the workspace for this run only (--trust).
	Trust bool
	// NoHooks loads no command hooks at all (--no-hooks).
	NoHooks bool
	// SessionID and TranscriptPath are passed to every hook.
	SessionID      string
	TranscriptPath string
	// Bus, when set, holds hooks that run beside the loaded ones: Load
	// registers on a bus derived from it (Bus.Derive), never on Bus itself,
	// so a bus shared by many runs does not collect every run's command
	// hooks (each bound to its run's session). nil means New(BusOptions).
	Bus        *Bus
	BusOptions *Options
}

// settingsSet is what was read: every hook, active or not, and the
// warnings to show.
type settingsSet struct {
	workspace string
	hooks     []*ShellHook
	warnings  []string
}

// List returns every command hook configured for the workspace, user hooks
// first, each with its source file and whether it will run (and if not,
// why). It is what `agentloop hooks list` shows.
func List(opts LoadOptions) ([]ShellHook, error) {
	s, err := readSettings(opts)
	if err != nil {
		return nil, err
	}
	out := make([]ShellHook, len(s.hooks))
	for i, h := range s.hooks {
		out[i] = *h
		out[i].re = nil
	}
	return out, nil
}

// Load reads the user's and the workspace's settings and registers their
// active command hooks on a new bus (derived from opts.Bus when set). It
// returns the bus and warnings for the
// user: at most one listing a project's hooks skipped because the
// workspace is not trusted, and one listing hooks that cannot run here. A
// settings file that is not valid JSON is an error: a guard the user
// configured must not silently vanish.
func Load(opts LoadOptions) (*Bus, []string, error) {
	var bus *Bus
	if opts.Bus != nil {
		bus = opts.Bus.Derive()
	} else {
		bus = New(opts.BusOptions)
	}
	if opts.NoHooks {
		return bus, nil, nil
	}
	s, err := readSettings(opts)
	if err != nil {
		return nil, nil, err
	}
	env := newShellEnv(s.workspace, opts.SessionID, opts.TranscriptPath)
	for _, event := range Events {
		g := &shellGroup{bus: bus, env: env, event: event, point: eventPoints[event], name: "settings " + event}
		var sources []string
		for _, h := range s.hooks {
			if h.Active && h.Event == event {
				g.hooks = append(g.hooks, h)
				if !slices.Contains(sources, h.Source) {
					sources = append(sources, h.Source)
				}
			}
		}
		if len(g.hooks) > 0 {
			g.register(sources)
		}
	}
	return bus, s.warnings, nil
}

func readSettings(opts LoadOptions) (*settingsSet, error) {
	ws, files, trusted, err := loadSettingsFiles(opts, "hooks")
	if err != nil {
		return nil, err
	}
	s := &settingsSet{workspace: ws}

	disabled := ""
	if opts.NoHooks {
		disabled = "hooks are off for this run (--no-hooks)"
	}
	for _, f := range files {
		if disabled == "" && f.json.DisableAllHooks && (f.scope == ScopeUser || trusted) {
			disabled = "disableAllHooks is set in " + f.path
		}
	}

	var untrusted, unusable []string
	var untrustedFiles []string
	add := func(f *settingsJSON, path string, scope Scope) {
		if f == nil {
			return
		}
		for _, event := range sortedEvents(f.Hooks) {
			for _, m := range f.Hooks[event] {
				for _, c := range m.Hooks {
					h := &ShellHook{Event: event, Matcher: m.Matcher, Command: c.Command, Source: path, Scope: scope,
						Timeout: DefaultTimeout, Active: true}
					if c.Timeout > 0 {
						// Beyond a day is a typo (or an overflow of Duration,
						// which would make the hook time out at once).
						h.Timeout = time.Duration(min(c.Timeout, maxTimeout.Seconds()) * float64(time.Second))
					}
					re, rerr := compileMatcher(m.Matcher)
					h.re = re
					switch {
					case disabled != "":
						h.Active, h.Inactive = false, disabled
					case eventPoints[event] == "":
						h.Active, h.Inactive = false, "agentloop does not run "+event+" hooks"
					case c.Type != "command":
						h.Active, h.Inactive = false, fmt.Sprintf("hook type %q is not supported; only \"command\" is", c.Type)
					case strings.TrimSpace(c.Command) == "":
						h.Active, h.Inactive = false, "the command is empty"
					case rerr != nil:
						h.Active, h.Inactive = false, fmt.Sprintf("the matcher is not a valid regexp: %v", rerr)
					case scope == ScopeProject && !trusted:
						h.Active, h.Inactive = false, "the workspace is not trusted"
					}
					s.hooks = append(s.hooks, h)
					if h.Active || disabled != "" {
						continue
					}
					if h.Inactive == "the workspace is not trusted" {
						untrusted = append(untrusted, describe(h))
						if !slices.Contains(untrustedFiles, path) {
							untrustedFiles = append(untrustedFiles, path)
						}
					} else {
						unusable = append(unusable, describe(h)+": "+h.Inactive)
					}
				}
			}
		}
	}
	for _, f := range files {
		add(f.json, f.path, f.scope)
	}

	if len(untrusted) > 0 {
		s.warnings = append(s.warnings, fmt.Sprintf(
			"Skipped %d hook(s) from %s because this workspace is not trusted: %s. If you trust this project, run `agentloop trust %s`, or pass --trust for this run.",
			len(untrusted), strings.Join(untrustedFiles, " and "), strings.Join(untrusted, "; "), ws))
	}
	if len(unusable) > 0 {
		s.warnings = append(s.warnings, fmt.Sprintf("Skipped %d hook(s) that cannot run: %s.",
			len(unusable), strings.Join(unusable, "; ")))
	}
	return s, nil
}

func describe(h *ShellHook) string {
	m := ""
	if h.Matcher != "" {
		m = "[" + h.Matcher + "]"
	}
	return fmt.Sprintf("%s%s `%s`", h.Event, m, h.Command)
}

// sortedEvents orders a file's events: the supported ones in Events
// order, then the others by name.
func sortedEvents(m map[string][]matcherJSON) []string {
	var known, other []string
	for _, e := range Events {
		if _, ok := m[e]; ok {
			known = append(known, e)
		}
	}
	for e := range m {
		if _, ok := eventPoints[e]; !ok {
			other = append(other, e)
		}
	}
	slices.Sort(other)
	return append(known, other...)
}

func readSettingsFile(path string) (*settingsJSON, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read settings: %w", err)
	}
	var s settingsJSON
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("read hooks from %s: %w; fix the file (it uses Claude Code's settings format) or run with --no-hooks", path, err)
	}
	return &s, nil
}

func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}
