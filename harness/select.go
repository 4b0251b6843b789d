package harness

import (
	"context"
	"errors"
	"fmt"
)

// Policy is how a run picks its harness.
type Policy struct {
	// Force names the harness of every run: "" or "auto" selects, any
	// other value is a harness id ("builtin" included). A forced harness
	// never falls back.
	Force string
	// ByModel ("provider/model") and ByProvider map routes to harness ids;
	// a model-scoped choice beats a provider-scoped one, which beats auto.
	ByModel, ByProvider map[string]string
	// Default is the harness id of a route neither map names, before auto
	// selection ("" or "auto": auto).
	Default string
	// NoFallback keeps a selected harness's preflight error instead of
	// moving on to the built-in harness.
	NoFallback bool
}

// Select returns the harnesses to try, in order: the chosen one (a
// model-scoped choice, else a provider-scoped one, else the default, else
// the keenest auto claim, else the built-in harness), then,
// when a preflight error may move on, the built-in one. A session bound to
// a harness is pinned to it (bound non-nil), without fallback: a fresh
// native thread on another engine would hide the lost one.
func Select(ctx context.Context, hs []Harness, builtin Harness, r Route, p Policy, bound *Binding) ([]Harness, error) {
	byID := func(id string) (Harness, error) {
		if id == BuiltinID && builtin != nil {
			return builtin, nil
		}
		for _, h := range hs {
			if h.ID() == id {
				return h, nil
			}
		}
		return nil, fmt.Errorf("no harness %q (known: %v)", id, ids(hs, builtin))
	}
	if bound != nil {
		h, err := byID(bound.Harness)
		if err != nil {
			return nil, fmt.Errorf("the session is bound to harness %s: %w", bound.Harness, err)
		}
		return []Harness{h}, nil
	}
	if f := p.Force; f != "" && f != "auto" {
		h, err := byID(f)
		if err != nil {
			return nil, err
		}
		return []Harness{h}, nil
	}
	chain := func(h Harness) []Harness {
		if p.NoFallback || builtin == nil || h == builtin {
			return []Harness{h}
		}
		return []Harness{h, builtin}
	}
	for _, id := range []string{p.ByModel[r.Provider+"/"+r.Model], p.ByProvider[r.Provider], p.Default} {
		if id == "" || id == "auto" {
			continue
		}
		h, err := byID(id)
		if err != nil {
			return nil, err
		}
		return chain(h), nil
	}
	var best Harness
	bestPri := 0
	for _, h := range hs {
		if s := h.Supports(ctx, r); s.OK && (best == nil || s.Priority > bestPri) {
			best, bestPri = h, s.Priority
		}
	}
	if best != nil {
		return chain(best), nil
	}
	if builtin == nil {
		return nil, errors.New("no harness supports this route and there is no built-in harness")
	}
	return []Harness{builtin}, nil
}

func ids(hs []Harness, builtin Harness) []string {
	var out []string
	if builtin != nil {
		out = append(out, builtin.ID())
	}
	for _, h := range hs {
		out = append(out, h.ID())
	}
	return out
}

// Run runs the attempt on the first harness of chain that claims it. Only
// a *PreflightError moves on to the next; once a harness has claimed the
// attempt it is never replayed on another. It returns the harness that
// ran the attempt.
func Run(ctx context.Context, chain []Harness, a *Attempt) (*Result, Harness, error) {
	var pre error
	for i, h := range chain {
		res, err := h.RunAttempt(ctx, a)
		var pe *PreflightError
		if errors.As(err, &pe) && i+1 < len(chain) && ctx.Err() == nil {
			pre = err
			continue
		}
		if err != nil {
			return res, h, err
		}
		if res == nil {
			return nil, h, fmt.Errorf("harness %s returned no result", h.ID())
		}
		return res, h, nil
	}
	if pre == nil {
		pre = errors.New("no harness to run the attempt")
	}
	return nil, nil, pre
}
