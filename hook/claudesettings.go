package hook

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Claude Code keeps its settings in .claude/ beside agentloop's
// .agentloop/: a user file ~/.claude/settings.json, and a project's
// .claude/settings.json (shared) and .claude/settings.local.json (the
// person's own). agentloop reads them all, in this order:
//
//	$AGENTLOOP_HOME/settings.json        user
//	~/.claude/settings.json              user
//	<workspace>/.agentloop/settings.json project
//	<workspace>/.claude/settings.json    project
//	<workspace>/.claude/settings.local.json project
//
// Project files count only in a trusted workspace, whatever they hold.

// ClaudeDir is the directory of Claude Code's settings, in a workspace
// and in the user's home.
const ClaudeDir = ".claude"

// ClaudeLocalSettingsFile is the name of a project's personal Claude
// Code settings, beside SettingsFile in <workspace>/.claude.
const ClaudeLocalSettingsFile = "settings.local.json"

// permissionsJSON is the "permissions" object of a settings file: rules
// in Claude Code's syntax ("Bash(git diff:*)", "Read(./secrets/**)").
type permissionsJSON struct {
	Allow []string `json:"allow"`
	Deny  []string `json:"deny"`
	Ask   []string `json:"ask"`
}

// settingsFile is one settings file that exists.
type settingsFile struct {
	path  string
	scope Scope
	json  *settingsJSON
}

type settingsFiles []settingsFile

// readSettingsFiles reads every settings file of the user and of the
// workspace ws that exists, once each (a home inside the workspace is
// not read twice).
func readSettingsFiles(home, claudeHome, ws string) (settingsFiles, error) {
	type candidate struct {
		path  string
		scope Scope
	}
	cands := []candidate{{filepath.Join(home, SettingsFile), ScopeUser}}
	if claudeHome != "" {
		cands = append(cands, candidate{filepath.Join(claudeHome, SettingsFile), ScopeUser})
	}
	cands = append(cands,
		candidate{filepath.Join(ws, ProjectDir, SettingsFile), ScopeProject},
		candidate{filepath.Join(ws, ClaudeDir, SettingsFile), ScopeProject},
		candidate{filepath.Join(ws, ClaudeDir, ClaudeLocalSettingsFile), ScopeProject})
	var out settingsFiles
	for _, c := range cands {
		dup := false
		for _, f := range out {
			dup = dup || sameFile(f.path, c.path)
		}
		if dup {
			continue
		}
		j, err := readSettingsFile(c.path)
		if err != nil {
			return nil, err
		}
		if j != nil {
			out = append(out, settingsFile{c.path, c.scope, j})
		}
	}
	return out, nil
}

// loadSettingsFiles reads the settings files of opts (what, hooks or
// permissions, is for errors) and returns the workspace without links,
// the files, and whether the workspace is trusted. Trust is looked up only
// when a project file has something it would decide.
func loadSettingsFiles(opts LoadOptions, what string) (string, settingsFiles, bool, error) {
	home, err := homeOr(opts.Home)
	if err != nil {
		return "", nil, false, err
	}
	if opts.Workspace == "" {
		return "", nil, false, fmt.Errorf("load %s: no workspace given", what)
	}
	ws, err := realDir(opts.Workspace)
	if err != nil {
		return "", nil, false, fmt.Errorf("load %s: %w", what, err)
	}
	files, err := readSettingsFiles(home, opts.ClaudeHome, ws)
	if err != nil {
		return "", nil, false, err
	}
	trusted := opts.Trust
	if !trusted && files.projectHooks() {
		if trusted, err = Trusted(home, ws); err != nil {
			return "", nil, false, err
		}
	}
	return ws, files, trusted, nil
}

// projectHooks reports whether a project file configures hooks or
// permissions, so that trust must be looked up.
func (fs settingsFiles) projectHooks() bool {
	for _, f := range fs {
		p := f.json.Permissions
		if f.scope == ScopeProject && (len(f.json.Hooks) > 0 || len(p.Allow)+len(p.Deny)+len(p.Ask) > 0) {
			return true
		}
	}
	return false
}

// PermissionEntry is one rule of a "permissions" list of a settings file,
// as written, with where it comes from and whether it counts here.
type PermissionEntry struct {
	List     Permission // the list: PermissionAllow, PermissionAsk or PermissionDeny
	Rule     string     // as written: "Bash(git diff:*)"
	Source   string     // the settings file
	Scope    Scope
	Active   bool
	Inactive string // why not, when not Active
}

// Permissions returns the permission rules of every settings file of the
// user and the workspace (see ClaudeDir for the files and their order),
// deny lists first, then ask, then allow. Rules of a project file are
// inactive unless the workspace is trusted (opts.Trust or `agentloop
// trust`): a repository must not be able to allow itself anything.
func Permissions(opts LoadOptions) ([]PermissionEntry, error) {
	_, files, trusted, err := loadSettingsFiles(opts, "permissions")
	if err != nil {
		return nil, err
	}
	var out []PermissionEntry
	for _, list := range []Permission{PermissionDeny, PermissionAsk, PermissionAllow} {
		for _, f := range files {
			p := f.json.Permissions
			rules := map[Permission][]string{PermissionAllow: p.Allow, PermissionAsk: p.Ask, PermissionDeny: p.Deny}[list]
			for _, r := range rules {
				e := PermissionEntry{List: list, Rule: strings.TrimSpace(r), Source: f.path, Scope: f.scope, Active: true}
				if f.scope == ScopeProject && !trusted {
					e.Active, e.Inactive = false, "the workspace is not trusted"
				}
				out = append(out, e)
			}
		}
	}
	return out, nil
}
