package runner

import (
	"context"
	"fmt"

	"github.com/agentloop/agentloop/compact"
	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// ToolSearchMode says when a run offers its tools through tool_search (a
// tool.Catalog) instead of describing every one in every request.
type ToolSearchMode string

// The tool search modes.
const (
	// ToolSearchAuto turns the catalog on when the definitions of the
	// offered tools take more than ToolSearch.Percent of the model's
	// context window, or are more than the wire takes in one request.
	ToolSearchAuto ToolSearchMode = "auto"
	// ToolSearchOn always puts the run's catalogued tools behind
	// tool_search (when there are any).
	ToolSearchOn ToolSearchMode = "on"
	// ToolSearchOff offers every tool directly.
	ToolSearchOff ToolSearchMode = "off"
)

// DefaultToolSearchPercent is the share of the context window, in percent,
// the tool definitions may take before ToolSearchAuto turns the catalog
// on (Claude Code's MCP tool search uses the same 10 %).
const DefaultToolSearchPercent = 10

// ToolSearch configures the tool catalog of runs.
type ToolSearch struct {
	// Mode is auto ("" too), on or off.
	Mode ToolSearchMode
	// Percent is ToolSearchAuto's threshold, in percent of the context
	// window; 0 means DefaultToolSearchPercent.
	Percent float64
	// MaxTools caps the tools one request offers (direct, tool_search
	// and found); 0 means the wire's limit (llm.MaxTools).
	MaxTools int
	// Direct reports whether a tool stays offered directly, outside the
	// catalog. Nil means the Request's own tools (the built-in ones) stay
	// direct and the tool sources' (MCP servers') go behind tool_search.
	Direct func(name string) bool
}

// ParseToolSearchMode reads auto, on or off.
func ParseToolSearchMode(s string) (ToolSearchMode, error) {
	switch m := ToolSearchMode(s); m {
	case ToolSearchAuto, ToolSearchOn, ToolSearchOff:
		return m, nil
	case "":
		return ToolSearchAuto, nil
	}
	return "", fmt.Errorf("tool search %q: use auto, on or off", s)
}

// toolSearch is the run's configuration: the Request's, else the Config's.
func (s *run) toolSearch() ToolSearch {
	var ts ToolSearch
	if c := s.r.cfg.ToolSearch; c != nil {
		ts = *c
	}
	if q := s.p.ToolSearch; q != nil {
		ts = *q
	}
	if ts.Mode == "" {
		ts.Mode = ToolSearchAuto
	}
	if ts.Percent <= 0 {
		ts.Percent = DefaultToolSearchPercent
	}
	if ts.MaxTools <= 0 {
		ts.MaxTools = llm.MaxTools(s.p.Info.API)
	}
	return ts
}

// newCatalog decides whether the run's tools go behind tool_search and,
// when they do, returns the catalog (its search tool added to reg) with
// the tools the history had found offered again. It returns nil when
// every tool is offered directly.
func (s *run) newCatalog(reg *tool.Registry, history []llm.Message) (*tool.Catalog, error) {
	if reg == nil || reg.Len() == 0 {
		return nil, nil
	}
	ts := s.toolSearch()
	if ts.Mode == ToolSearchOff {
		return nil, nil
	}
	direct := ts.Direct
	if direct == nil {
		own := s.p.Tools
		direct = func(name string) bool {
			_, ok := own.Get(name)
			return ok
		}
	}
	specs := reg.Specs()
	catalogued := 0
	for _, sp := range specs {
		if !direct(sp.Name) {
			catalogued++
		}
	}
	if catalogued == 0 {
		return nil, nil
	}
	tokens := compact.ToolsTokens(specs)
	limit := int(float64(s.window) * ts.Percent / 100)
	if ts.Mode == ToolSearchAuto && tokens <= limit && len(specs) <= ts.MaxTools {
		return nil, nil
	}
	cat, err := tool.NewCatalog(reg, tool.CatalogOptions{Direct: direct, MaxOffered: ts.MaxTools})
	if err != nil {
		return nil, fmt.Errorf("tool search: %w", err)
	}
	cat.Restore(history)
	return cat, nil
}

// refreshTools brings the tools of sources whose list changed up to date
// before a model call: new tools the policy allows join the registry (and
// so the catalog, or the offered set); removed ones are left out of what
// is offered by their AvailableTool, and a call of one gets an error.
func (s *run) refreshTools(ctx context.Context) {
	for _, rf := range s.refreshers {
		added, err := rf.Refresh(ctx)
		if err != nil {
			s.warn(err.Error())
		}
		if len(added) == 0 {
			continue
		}
		allowed := added
		if pol := s.p.ToolPolicy; pol != nil {
			// The policy decides over every tool at once (exact names
			// of --tools must exist), so it is applied to all of them.
			all, err := tool.NewRegistry(append(append(s.p.Tools.Tools(), s.sourced...), added...)...)
			if err == nil {
				all, err = pol.Apply(all)
			}
			if err != nil {
				s.warn(fmt.Sprintf("new tools of a tool source are left out: %v", err))
				continue
			}
			allowed = allowed[:0:0]
			for _, t := range added {
				if _, ok := all.Get(t.Name()); ok {
					allowed = append(allowed, t)
				}
			}
		}
		s.sourced = append(s.sourced, added...)
		for _, t := range allowed {
			if err := s.reg.Add(t); err != nil {
				s.warn(fmt.Sprintf("new tool %s is left out: %v", t.Name(), err))
			}
		}
	}
}

// offeredSpecs are the tools the next model call offers, for runs whose
// offered set can change: the catalog's, or every available tool.
func (s *run) offeredSpecs() []llm.ToolSpec {
	if s.catalog != nil {
		return s.catalog.Specs()
	}
	var out []llm.ToolSpec
	for _, t := range s.reg.Tools() {
		if a, ok := t.(tool.AvailableTool); ok && !a.Available() {
			continue
		}
		out = append(out, llm.ToolSpec{Name: t.Name(), Description: t.Description(), Parameters: t.Schema()})
	}
	return out
}
