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
	// The found tools get the share of the window the definitions may
	// take before auto turns the catalog on.
	cat, err := tool.NewCatalog(reg, tool.CatalogOptions{Direct: direct, MaxOffered: ts.MaxTools,
		MaxFoundTokens: max(limit, 1), Tokens: compact.ToolsTokens})
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
		if s.names != nil {
			s.names.set(s.reg.Names())
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

// requestSetter is a Compactor told the request's tools as they change
// (compact.Compactor's SetRequest).
type requestSetter interface {
	SetRequest(system string, tools []llm.ToolSpec)
}

// ToolsOverflowError says the tool definitions a run would send with
// every request, with its system prompt, do not fit the model's context
// window: no compaction of the history can make room, so the run is
// refused before the first model call instead of sending a request the
// provider refuses (or silently cuts).
type ToolsOverflowError struct {
	// Tools is how many tools the first request offers; Tokens estimates
	// their definitions and the system prompt (compact.ToolsTokens,
	// compact.SystemTokens); Window is the run's context window.
	Tools, Tokens, Window int
	// Catalog is set when tool search was already on: the tools offered
	// directly are the ones too large.
	Catalog bool
	// Limit, when set, is the provider's documented tool-count limit that
	// Tools passes (the definitions may fit the window); API names the wire.
	Limit int
	API   llm.API
}

func (e *ToolsOverflowError) Error() string {
	if e.Limit > 0 {
		return fmt.Sprintf("the run offers %d tools, more than the %d one request may carry on the %s API, which refuses such a request: %s",
			e.Tools, e.Limit, e.API, e.advice())
	}
	return fmt.Sprintf("the definitions of %d tools and the system prompt take about %d tokens, more than the context window of %d tokens: %s",
		e.Tools, e.Tokens, e.Window, e.advice())
}

// advice says what to do about it.
func (e *ToolsOverflowError) advice() string {
	if e.Catalog {
		return "offer fewer tools directly (--tools, fewer built-in tools), since tool search is already on"
	}
	return "turn tool search on (--tool-search on) so tools are found when needed instead of described in every request, or offer fewer tools (--tools, fewer MCP servers)"
}

// checkToolsFit refuses a run whose fixed part of every request (system
// prompt and tool definitions) does not fit the window, and warns when it
// leaves less than the reply reserve: then every call is over its budget
// whatever compaction does.
func (s *run) checkToolsFit(specs []llm.ToolSpec) error {
	window := s.window
	fixed := compact.SystemTokens(s.p.SystemPrompt) + compact.ToolsTokens(specs)
	if window > 0 && fixed >= window {
		return &ToolsOverflowError{Tools: len(specs), Tokens: fixed, Window: window, Catalog: s.catalog != nil}
	}
	if limit := llm.DocumentedMaxTools(s.p.Info.API); limit > 0 && len(specs) > limit {
		return &ToolsOverflowError{Tools: len(specs), Limit: limit, API: s.p.Info.API, Catalog: s.catalog != nil}
	}
	if window <= 0 {
		return nil
	}
	reserve := 0
	if c := s.p.Compaction; c != nil {
		reserve = c.ReserveTokens
	}
	if b := compact.NewBudget(window, reserve); fixed > b.PromptBudget() {
		e := &ToolsOverflowError{Tools: len(specs), Tokens: fixed, Window: window, Catalog: s.catalog != nil}
		s.warn(fmt.Sprintf("the definitions of %d tools and the system prompt take about %d tokens of the %d the prompt may use (the rest of the %d-token window is kept for the reply); %s",
			e.Tools, fixed, b.PromptBudget(), window, e.advice()))
	}
	return nil
}
