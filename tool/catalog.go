package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/agentloop/agentloop/llm"
)

// SearchToolName is the name of a catalog's search tool.
const SearchToolName = "tool_search"

// Search limits: the matches one search returns by default and at most.
const (
	DefaultSearchResults = 5
	MaxSearchResults     = 20
)

// AvailableTool is implemented by tools that can stop being there during a
// run (an MCP server that removed the tool). A catalog neither offers nor
// finds a tool that says it is not available.
type AvailableTool interface {
	Available() bool
}

// ServerTool is implemented by tools that come from a named server (MCP):
// a search can ask for one server's tools with server:NAME.
type ServerTool interface {
	Server() string
}

// CatalogOptions configure a Catalog.
type CatalogOptions struct {
	// Direct reports whether a tool of the registry is offered from the
	// start, outside the catalog. Nil means none is.
	Direct func(name string) bool
	// MaxOffered caps the tools one request offers: the direct ones, the
	// search tool and the found ones. When found tools would pass it, the
	// earliest found leave the offered set (a search finds them again).
	// 0 means no cap.
	MaxOffered int
	// MaxFoundTokens caps the definitions of the found tools, as Tokens
	// counts them: a search returns the best matches whose schemas fit
	// it (the best one always), and when found tools pass it the
	// earliest leave the offered set. So a search of tools with huge
	// schemas cannot fill every later request. 0 (or a nil Tokens)
	// means no cap.
	MaxFoundTokens int
	// Tokens estimates the tokens of tool definitions
	// (compact.ToolsTokens).
	Tokens func([]llm.ToolSpec) int
}

// Catalog is a run's tools when there are too many to describe in every
// request: the direct tools are offered as they are, and the others
// through a search tool (SearchToolName), which returns the best matches
// with their schemas and adds them to the offered set for the rest of the
// run. Every tool stays in the registry, so a call of a found tool is
// prepared, approved, hooked and paired like any other. It is safe for
// concurrent use.
type Catalog struct {
	reg       *Registry
	max       int
	maxTokens int
	tokens    func([]llm.ToolSpec) int

	mu      sync.Mutex
	direct  map[string]bool
	offered []string // the direct tools in registry order, then the search tool
	found   []string // oldest first
}

// NewCatalog makes a catalog of reg's tools and adds its search tool to
// reg. The registry must not already hold a tool called SearchToolName.
func NewCatalog(reg *Registry, opts CatalogOptions) (*Catalog, error) {
	if reg == nil {
		return nil, errors.New("tool: a catalog needs a registry")
	}
	c := &Catalog{reg: reg, max: opts.MaxOffered, direct: map[string]bool{}}
	if opts.Tokens != nil && opts.MaxFoundTokens > 0 {
		c.maxTokens, c.tokens = opts.MaxFoundTokens, opts.Tokens
	}
	for _, n := range reg.Names() {
		if opts.Direct != nil && opts.Direct(n) {
			c.direct[n] = true
			c.offered = append(c.offered, n)
		}
	}
	if err := reg.Add(&searchTool{c: c}); err != nil {
		return nil, err
	}
	c.offered = append(c.offered, SearchToolName)
	reg.SetUnknownText(c.unknownText)
	return c, nil
}

// Catalogued reports whether name is a tool reached through the search
// tool: in the registry, not direct, not the search tool itself.
func (c *Catalog) Catalogued(name string) bool {
	if name == SearchToolName {
		return false
	}
	c.mu.Lock()
	direct := c.direct[name]
	c.mu.Unlock()
	if direct {
		return false
	}
	_, ok := c.reg.Get(name)
	return ok
}

// Len is the number of catalogued tools that are available.
func (c *Catalog) Len() int {
	n := 0
	for _, t := range c.reg.Tools() {
		if c.Catalogued(t.Name()) && available(t) {
			n++
		}
	}
	return n
}

// Found returns the names found so far that are offered, oldest first.
func (c *Catalog) Found() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.found...)
}

// Offer adds catalogued tools to the offered set (a search found them, or
// the history of a resumed session called them). Names already offered,
// unknown or direct are skipped.
func (c *Catalog) Offer(names ...string) {
	for _, n := range names {
		if !c.Catalogued(n) {
			continue
		}
		c.mu.Lock()
		if !containsString(c.found, n) {
			c.found = append(c.found, n)
		}
		c.mu.Unlock()
	}
	c.trim()
}

// trim drops the earliest found tools while the offered set is over the
// cap, or the found tools' definitions over their token cap (the newest
// found stays).
func (c *Catalog) trim() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := max(0, c.max-len(c.offered)); c.max > 0 && len(c.found) > room {
		c.found = append([]string(nil), c.found[len(c.found)-room:]...)
	}
	if c.tokens == nil {
		return
	}
	keep, total := len(c.found), 0
	for i := len(c.found) - 1; i >= 0; i-- {
		total += c.specTokens(c.found[i])
		if total > c.maxTokens && i < len(c.found)-1 {
			break
		}
		keep = len(c.found) - i
	}
	if keep < len(c.found) {
		c.found = append([]string(nil), c.found[len(c.found)-keep:]...)
	}
}

// specTokens estimates the definition of the registry's tool name.
func (c *Catalog) specTokens(name string) int {
	t, ok := c.reg.Get(name)
	if !ok {
		return 0
	}
	return c.tokens([]llm.ToolSpec{{Name: name, Description: t.Description(), Parameters: t.Schema()}})
}

// Restore offers again the tools a history found: the matches its
// successful searches returned (their Details) and the catalogued tools it
// called. A resumed session goes on with the tools it had.
func (c *Catalog) Restore(msgs []llm.Message) {
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case llm.RoleToolResult:
			if m.ToolName != SearchToolName || m.IsError || len(m.Details) == 0 {
				continue
			}
			var d SearchDetails
			if json.Unmarshal(m.Details, &d) == nil {
				c.Offer(d.Found...)
			}
		case llm.RoleAssistant:
			for j := range m.Content {
				if b := &m.Content[j]; b.Type == llm.ContentToolCall {
					c.Offer(b.Name)
				}
			}
		}
	}
}

// Specs are the tools one request offers: the direct ones in registry
// order, the search tool, then the found ones in the order found (so the
// start of the list, and a provider's prompt cache, stays the same as tools
// are found). Tools that are no longer available are left out.
func (c *Catalog) Specs() []llm.ToolSpec {
	c.mu.Lock()
	names := append(append([]string(nil), c.offered...), c.found...)
	c.mu.Unlock()
	out := make([]llm.ToolSpec, 0, len(names))
	for _, n := range names {
		t, ok := c.reg.Get(n)
		if !ok || !available(t) {
			continue
		}
		out = append(out, llm.ToolSpec{Name: n, Description: t.Description(), Parameters: t.Schema()})
	}
	return out
}

// Match is one tool a search found.
type Match struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	score       int
}

// SearchDetails are the Details of a search's result: what was asked and
// the names it found, which a resumed session offers again.
type SearchDetails struct {
	Query string   `json:"query"`
	Found []string `json:"found"`
}

// Search ranks the available catalogued tools against query and returns
// the best limit of them (DefaultSearchResults when limit <= 0). A query
// is words, each matched against the tool's name and description (a whole
// word of the name counts most, then the start of the name, then the
// description); server:NAME keeps only that server's tools; a word ending
// in * matches only names that start with it. A query of only server:NAME
// returns that server's tools in their order.
func (c *Catalog) Search(query string, limit int) []Match {
	out, _ := c.search(query, limit)
	return out
}

// search is Search, with how many tools matched in all.
func (c *Catalog) search(query string, limit int) ([]Match, int) {
	if limit <= 0 {
		limit = DefaultSearchResults
	}
	limit = min(limit, MaxSearchResults)
	var servers, terms, prefixes []string
	for _, w := range strings.Fields(strings.ToLower(query)) {
		switch {
		case strings.HasPrefix(w, "server:"):
			if s := strings.TrimPrefix(w, "server:"); s != "" {
				servers = append(servers, s)
			}
		case strings.HasSuffix(w, "*") && len(w) > 1:
			prefixes = append(prefixes, strings.TrimSuffix(w, "*"))
		default:
			if w = strings.Trim(w, `"'.,;:!?()`); w != "" {
				terms = append(terms, w)
			}
		}
	}
	var out []Match
	for _, t := range c.reg.Tools() {
		name := t.Name()
		if !c.Catalogued(name) || !available(t) {
			continue
		}
		if len(servers) > 0 {
			st, ok := t.(ServerTool)
			if !ok || !containsString(servers, strings.ToLower(st.Server())) {
				continue
			}
		}
		lname := strings.ToLower(name)
		score := 0
		matchedPrefix := len(prefixes) == 0
		for _, p := range prefixes {
			if strings.HasPrefix(lname, p) || strings.HasPrefix(shortName(lname), p) {
				matchedPrefix = true
				score += 8
			}
		}
		if !matchedPrefix {
			continue
		}
		if len(terms) > 0 {
			s := scoreTerms(lname, strings.ToLower(t.Description()), terms)
			if s == 0 {
				continue
			}
			score += s
		}
		if len(terms) == 0 && len(prefixes) == 0 && len(servers) == 0 {
			continue
		}
		out = append(out, Match{Name: name, Description: oneLine(t.Description()), Schema: t.Schema(), score: score})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].score > out[j].score })
	total := len(out)
	if len(out) > limit {
		out = out[:limit]
	}
	if c.tokens != nil {
		// Found tools are offered in every later request: the matches
		// stop where their definitions would pass the cap.
		total := 0
		for i := range out {
			total += c.specTokens(out[i].Name)
			if total > c.maxTokens && i > 0 {
				out = out[:i]
				break
			}
		}
	}
	return out, total
}

// scoreTerms scores a tool against the words of a query: 0 when none
// matches.
func scoreTerms(name, desc string, terms []string) int {
	nameWords := words(name)
	descWords := words(desc)
	short := shortName(name)
	score, matched := 0, 0
	for _, t := range terms {
		s := 0
		switch {
		case name == t || short == t:
			s = 20
		case containsString(nameWords, t):
			s = 6
		case len(t) >= 3 && (strings.HasPrefix(short, t) || strings.HasPrefix(name, t)):
			s = 5
		case len(t) >= 3 && hasWordPrefix(nameWords, t):
			s = 3
		}
		switch {
		case containsString(descWords, t):
			s += 2
		case len(t) >= 4 && strings.Contains(desc, t):
			s++
		}
		if s > 0 {
			matched++
		}
		score += s
	}
	if matched > 1 {
		score += 4 * (matched - 1) // a tool that matches more of the query ranks above one that matches a word often
	}
	return score
}

// shortName is a tool's name without an mcp__server__ prefix.
func shortName(name string) string {
	if i := strings.LastIndex(name, "__"); i >= 0 {
		return name[i+2:]
	}
	return name
}

// words splits s on everything that is not a letter or a digit.
func words(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127)
	})
}

func hasWordPrefix(ws []string, p string) bool {
	for _, w := range ws {
		if strings.HasPrefix(w, p) {
			return true
		}
	}
	return false
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// oneLine is the first line of a description, at most 200 bytes.
func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 200 {
		cut := 197
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}

func available(t Tool) bool {
	a, ok := t.(AvailableTool)
	return !ok || a.Available()
}

// servers names the servers of the available catalogued tools with their
// tool counts, in the order first seen.
func (c *Catalog) servers() (names []string, counts map[string]int, other int) {
	counts = map[string]int{}
	for _, t := range c.reg.Tools() {
		if !c.Catalogued(t.Name()) || !available(t) {
			continue
		}
		st, ok := t.(ServerTool)
		if !ok {
			other++
			continue
		}
		s := st.Server()
		if counts[s] == 0 {
			names = append(names, s)
		}
		counts[s]++
	}
	return names, counts, other
}

// unknownText is what a call of a tool the registry does not hold is told:
// the offered tools, and where the others are.
func (c *Catalog) unknownText(name string) string {
	var offered []string
	for _, sp := range c.Specs() {
		offered = append(offered, sp.Name)
	}
	return fmt.Sprintf("Tool %q not found. Offered tools: %s. More tools are reachable through %s: search for what you need, then call what it finds.",
		name, strings.Join(offered, ", "), SearchToolName)
}

// searchTool is the catalog's search, as a tool.
type searchTool struct{ c *Catalog }

type searchArgs struct {
	Query string `json:"query" jsonschema:"what the tool should do in a few words; server:NAME for one server's tools; a name start ending in * (create_*)"`
	Limit int    `json:"limit,omitempty" jsonschema:"how many tools to return, best first (default 5, at most 20)"`
}

// searchSchema is derived on first use, not at start-up: package
// initialisation of a CLI that never searches stays small.
var searchSchema = sync.OnceValue(func() json.RawMessage {
	s, err := SchemaFor[searchArgs]()
	if err != nil {
		panic(err)
	}
	raw, err := llm.MarshalJSON(s)
	if err != nil {
		panic(err)
	}
	return raw
})

func (s *searchTool) Name() string            { return SearchToolName }
func (s *searchTool) Schema() json.RawMessage { return searchSchema() }
func (s *searchTool) ReadOnly() bool          { return true }
func (s *searchTool) ConcurrencySafe(Call) bool {
	return true
}

// Description says how many tools wait behind the search and where they
// come from (at most 12 servers are named).
func (s *searchTool) Description() string {
	names, counts, other := s.c.servers()
	total := other
	var parts []string
	for i, n := range names {
		total += counts[n]
		if i < 12 {
			parts = append(parts, fmt.Sprintf("%s (%d)", n, counts[n]))
		}
	}
	if len(names) > 12 {
		parts = append(parts, fmt.Sprintf("%d more servers", len(names)-12))
	}
	from := ""
	if len(parts) > 0 {
		from = " from the servers " + strings.Join(parts, ", ")
	}
	return fmt.Sprintf("Find and load tools that are not offered yet: %d more tools are available%s. "+
		"Search by what you want to do, by server:NAME or by the start of a name ending in *. "+
		"The best matches come back with their schemas; call them by name from your next turn.", total, from)
}

func (s *searchTool) Execute(_ context.Context, call Call, _ func(Partial)) (Result, error) {
	var in searchArgs
	if err := DecodeArgs(call, &in); err != nil {
		return Result{}, err
	}
	if strings.TrimSpace(in.Query) == "" {
		return ErrorResult("The query is empty: say in a few words what the tool should do, or give server:NAME."), nil
	}
	matches, total := s.c.search(in.Query, in.Limit)
	d := SearchDetails{Query: in.Query, Found: []string{}}
	var b strings.Builder
	if len(matches) == 0 {
		names, _, _ := s.c.servers()
		fmt.Fprintf(&b, "No tool matches %q.", in.Query)
		if len(names) > 0 {
			fmt.Fprintf(&b, " Servers: %s.", strings.Join(names, ", "))
		}
		b.WriteString(" Try other words, server:NAME, or the start of a name ending in *.")
	} else {
		fmt.Fprintf(&b, "%d tools match %q, best first. Call them by name from your next turn:\n", len(matches), in.Query)
		for _, m := range matches {
			d.Found = append(d.Found, m.Name)
			fmt.Fprintf(&b, "\n%s: %s\nparameters: %s\n", m.Name, m.Description, compactJSON(m.Schema))
		}
		if more := total - len(matches); more > 0 {
			// Without this a model that asked for server:NAME takes the
			// first few tools for all the server has.
			fmt.Fprintf(&b, "\n%d more tools match; add words to the query to find the one you need.\n", more)
		}
	}
	s.c.Offer(d.Found...)
	res := TextResult(strings.TrimRight(b.String(), "\n"))
	res.Details, _ = json.Marshal(d)
	return res, nil
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}
