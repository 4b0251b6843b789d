package tool

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
)

// Profile names a base set of tools.
type Profile string

// The tool profiles. Coding is the default.
const (
	// ProfileReadOnly offers read, grep, find and ls.
	ProfileReadOnly Profile = "readonly"
	// ProfileCoding offers the read-only tools plus write, edit and bash,
	// and the agent tools (package subagent) of a run that has them.
	ProfileCoding Profile = "coding"
	// ProfileFull offers every registered tool, MCP tools included.
	ProfileFull Profile = "full"
)

// profileTools lists the tools of the named profiles; ProfileFull is every
// registered tool.
var profileTools = map[Profile][]string{
	ProfileReadOnly: {"read", "grep", "find", "ls"},
	ProfileCoding:   {"read", "grep", "find", "ls", "write", "edit", "bash", "agent", "agent_send", "agent_stop"},
}

// Policy decides which of the registered tools a run offers the model. It
// is applied to a Registry before the model sees the tool list; a call the
// model makes anyway to a tool left out finds no such tool in the filtered
// registry and gets an isError result naming the tools it can use.
//
// The set is built in this order:
//
//  1. NoTools empties it (the CLI's --no-tools); otherwise Tools, when
//     non-nil, is the set (--tools a,b); otherwise Profile gives it
//     (--profile, default coding).
//  2. Allow adds the registered tools it matches.
//  3. Deny removes the tools it matches; deny beats allow.
//  4. ReadOnly removes every tool that does not declare itself read-only
//     (a ReadOnlyTool whose ReadOnly returns true; --read-only). A tool
//     that says nothing is taken to change things.
//
// Tools, Allow and Deny entries are tool names or globs over them, where
// "*" matches any run of characters and "?" one ("mcp__github__*").
type Policy struct {
	Profile  Profile
	Tools    []string
	NoTools  bool
	Allow    []string
	Deny     []string
	ReadOnly bool
}

// Apply returns a registry holding the tools of r that the policy lets
// the model use, in r's order. It fails on an unknown profile, a malformed
// glob, or a tool named (without a glob) in Tools or Allow that r does not
// hold, which is most likely a typo.
func (p Policy) Apply(r *Registry) (*Registry, error) {
	names := r.Names()
	keep := make(map[string]bool, len(names))
	switch {
	case p.NoTools:
	case p.Tools != nil:
		if err := p.mark(keep, names, p.Tools, "tool list"); err != nil {
			return nil, err
		}
	default:
		prof := p.Profile
		if prof == "" {
			prof = ProfileCoding
		}
		if prof == ProfileFull {
			for _, n := range names {
				keep[n] = true
			}
			break
		}
		set, ok := profileTools[prof]
		if !ok {
			return nil, fmt.Errorf("tool policy: unknown profile %q; use %s, %s or %s", prof, ProfileReadOnly, ProfileCoding, ProfileFull)
		}
		for _, n := range set {
			if _, ok := r.Get(n); ok {
				keep[n] = true
			}
		}
	}
	if err := p.mark(keep, names, p.Allow, "allow list"); err != nil {
		return nil, err
	}
	deny := make(map[string]bool)
	if err := p.mark(deny, names, p.Deny, ""); err != nil {
		return nil, err
	}
	out := &Registry{tools: make(map[string]*entry)}
	for _, n := range names {
		if !keep[n] || deny[n] {
			continue
		}
		e := r.tools[n]
		if p.ReadOnly && !declaresReadOnly(e.tool) {
			continue
		}
		out.tools[n] = e
		out.order = append(out.order, n)
	}
	return out, nil
}

// mark sets set[n] for every name matched by patterns. A pattern without
// glob characters that matches nothing is an error when what is not "".
func (p Policy) mark(set map[string]bool, names, patterns []string, what string) error {
	for _, pat := range patterns {
		pat = strings.TrimSpace(pat)
		if pat == "" {
			continue
		}
		if !isGlob(pat) {
			if slices.Contains(names, pat) {
				set[pat] = true
			} else if what != "" {
				sorted := slices.Clone(names)
				sort.Strings(sorted)
				return fmt.Errorf("tool policy: the %s names %q, which is not a registered tool; registered tools: %s",
					what, pat, strings.Join(sorted, ", "))
			}
			continue
		}
		if _, err := path.Match(pat, ""); err != nil {
			return fmt.Errorf("tool policy: %q is not a valid glob: %v", pat, err)
		}
		for _, n := range names {
			if ok, _ := path.Match(pat, n); ok {
				set[n] = true
			}
		}
	}
	return nil
}

func isGlob(s string) bool { return strings.ContainsAny(s, "*?[") }

// declaresReadOnly reports whether t is a ReadOnlyTool that says it only
// reads.
func declaresReadOnly(t Tool) bool {
	ro, ok := t.(ReadOnlyTool)
	return ok && ro.ReadOnly()
}
