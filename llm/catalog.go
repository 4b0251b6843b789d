package llm

import (
	"slices"
	"sort"
	"strings"
	"sync"
)

// Catalog is a set of models by provider and id: the built-in entries, plus
// whatever a models file adds. Lookups are safe for concurrent use; Add is
// meant for setup, before the catalog is shared.
type Catalog struct {
	mu     sync.RWMutex
	models map[string]map[string]ModelInfo // provider → id → info
}

// NewCatalog returns an empty catalog.
func NewCatalog() *Catalog {
	return &Catalog{models: map[string]map[string]ModelInfo{}}
}

// BuiltinCatalog returns a new catalog holding the built-in models (see
// BuiltinModels). Each call returns an independent copy.
func BuiltinCatalog() *Catalog {
	c := NewCatalog()
	for _, m := range builtinModels() {
		c.Add(m)
	}
	return c
}

// BuiltinModels returns a copy of the built-in model entries.
func BuiltinModels() []ModelInfo {
	models := builtinModels()
	out := make([]ModelInfo, len(models))
	for i, m := range models {
		out[i] = cloneInfo(m)
	}
	return out
}

// LookupModel finds a built-in model by provider and id.
func LookupModel(provider, id string) (ModelInfo, bool) {
	builtinOnce.Do(func() { builtin = BuiltinCatalog() })
	return builtin.Lookup(provider, id)
}

var (
	builtinOnce sync.Once
	builtin     *Catalog
)

// Add puts m in the catalog under m.Provider and m.ID, replacing an entry
// with the same names.
func (c *Catalog) Add(m ModelInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.models[m.Provider]
	if p == nil {
		p = map[string]ModelInfo{}
		c.models[m.Provider] = p
	}
	p[m.ID] = cloneInfo(m)
}

// Lookup finds a model by provider and id. Ids are matched exactly, then
// case-insensitively.
func (c *Catalog) Lookup(provider, id string) (ModelInfo, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	p := c.models[provider]
	if m, ok := p[id]; ok {
		return cloneInfo(m), true
	}
	for k, m := range p {
		if strings.EqualFold(k, id) {
			return cloneInfo(m), true
		}
	}
	return ModelInfo{}, false
}

// Models returns the models of a provider, sorted by id.
func (c *Catalog) Models(provider string) []ModelInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]ModelInfo, 0, len(c.models[provider]))
	for _, m := range c.models[provider] {
		out = append(out, cloneInfo(m))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Providers returns the providers that have at least one model, sorted.
func (c *Catalog) Providers() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]string, 0, len(c.models))
	for p, ms := range c.models {
		if len(ms) > 0 {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

func cloneInfo(m ModelInfo) ModelInfo {
	m.Input = slices.Clone(m.Input)
	return m
}
