package tool

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
)

// serverTool is a tool of a named server that can go away.
type serverTool struct {
	Func
	server string
	gone   bool
}

func (t *serverTool) Server() string  { return t.server }
func (t *serverTool) Available() bool { return !t.gone }

func catalogFixture(t *testing.T, max int) (*Registry, *Catalog, map[string]*serverTool) {
	t.Helper()
	own := &Func{ToolName: "read", ToolDescription: "Read a file.", Run: okRun}
	byName := map[string]*serverTool{}
	tools := []Tool{own}
	add := func(server, name, desc string) {
		st := &serverTool{Func: Func{ToolName: "mcp__" + server + "__" + name, ToolDescription: desc, Run: okRun}, server: server}
		byName[st.ToolName] = st
		tools = append(tools, st)
	}
	add("gh", "create_issue", "Create an issue in a repository.")
	add("gh", "list_issues", "List the issues of a repository.")
	add("gh", "create_pull_request", "Open a pull request.")
	add("billing", "create_invoice", "Create an invoice for a customer.")
	add("billing", "list_customers", "List customers, newest first.")
	add("billing", "refund_payment", "Refund a payment; the issue of a refund cannot be undone.")
	reg, err := NewRegistry(tools...)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCatalog(reg, CatalogOptions{Direct: func(n string) bool { return n == "read" }, MaxOffered: max})
	if err != nil {
		t.Fatal(err)
	}
	return reg, c, byName
}

func okRun(context.Context, Call, func(Partial)) (Result, error) { return TextResult("ok"), nil }

func matchNames(ms []Match) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}

func specNames(specs []llm.ToolSpec) []string {
	var out []string
	for _, s := range specs {
		out = append(out, s.Name)
	}
	return out
}

func TestCatalogSearch(t *testing.T) {
	_, c, _ := catalogFixture(t, 0)
	tests := []struct {
		query string
		want  []string // best first; exactly these
	}{
		// A word of the name ranks above a word of the description.
		{"issue", []string{"mcp__gh__create_issue", "mcp__gh__list_issues", "mcp__billing__refund_payment"}},
		// Every word that matches counts; a word in the description
		// too ranks above the name alone.
		{"create issue", []string{"mcp__gh__create_issue", "mcp__billing__create_invoice", "mcp__gh__create_pull_request", "mcp__gh__list_issues", "mcp__billing__refund_payment"}},
		{"server:billing", []string{"mcp__billing__create_invoice", "mcp__billing__list_customers", "mcp__billing__refund_payment"}},
		{"server:billing create", []string{"mcp__billing__create_invoice"}},
		{"create_*", []string{"mcp__gh__create_issue", "mcp__gh__create_pull_request", "mcp__billing__create_invoice"}},
		{"mcp__gh__*", []string{"mcp__gh__create_issue", "mcp__gh__list_issues", "mcp__gh__create_pull_request"}},
		{"mcp__billing__list_customers", []string{"mcp__billing__list_customers"}},
		{"nothing-like-this", nil},
		// The direct tools are not in the catalog.
		{"read", nil},
	}
	for _, tc := range tests {
		if got := matchNames(c.Search(tc.query, 10)); !slices.Equal(got, tc.want) {
			t.Errorf("Search(%q) = %v, want %v", tc.query, got, tc.want)
		}
	}
	if got := c.Search("create", 2); len(got) != 2 {
		t.Errorf("limit 2 gave %d matches", len(got))
	}
}

func TestCatalogOffersWhatItFinds(t *testing.T) {
	reg, c, tools := catalogFixture(t, 0)
	if got := specNames(c.Specs()); !slices.Equal(got, []string{"read", SearchToolName}) {
		t.Fatalf("offered before any search: %v", got)
	}
	res := reg.Execute(context.Background(), llm.ToolCall("c1", SearchToolName, json.RawMessage(`{"query":"invoice"}`)), nil)
	if res.IsError || !strings.Contains(res.Text(), "mcp__billing__create_invoice: Create an invoice for a customer.") ||
		!strings.Contains(res.Text(), `parameters: {"type":"object","properties":{}}`) {
		t.Fatalf("search result: %+v", res)
	}
	var d SearchDetails
	if err := json.Unmarshal(res.Details, &d); err != nil || !slices.Equal(d.Found, []string{"mcp__billing__create_invoice"}) {
		t.Fatalf("details %s (%v)", res.Details, err)
	}
	if got := specNames(c.Specs()); !slices.Equal(got, []string{"read", SearchToolName, "mcp__billing__create_invoice"}) {
		t.Fatalf("offered after the search: %v", got)
	}
	// A removed tool leaves the offered set and the search.
	tools["mcp__billing__create_invoice"].gone = true
	if got := specNames(c.Specs()); !slices.Equal(got, []string{"read", SearchToolName}) {
		t.Errorf("offered after the tool went away: %v", got)
	}
	if got := c.Search("invoice", 5); len(got) != 0 {
		t.Errorf("a removed tool is found: %v", matchNames(got))
	}
	// Unknown tools are pointed at the search, not at a list of every tool.
	bad := reg.Execute(context.Background(), llm.ToolCall("c2", "mcp__gh__nope", nil), nil)
	if !bad.IsError || !strings.Contains(bad.Text(), "reachable through tool_search") || strings.Contains(bad.Text(), "list_customers") {
		t.Errorf("unknown tool: %q", bad.Text())
	}
	empty := reg.Execute(context.Background(), llm.ToolCall("c3", SearchToolName, json.RawMessage(`{"query":" "}`)), nil)
	if !empty.IsError {
		t.Errorf("an empty query: %q", empty.Text())
	}
}

func TestCatalogCapAndRestore(t *testing.T) {
	// read + tool_search + 2 found.
	_, c, _ := catalogFixture(t, 4)
	c.Offer("mcp__gh__create_issue", "mcp__gh__list_issues", "mcp__billing__create_invoice", "read", "nope")
	if got := c.Found(); !slices.Equal(got, []string{"mcp__gh__list_issues", "mcp__billing__create_invoice"}) {
		t.Errorf("found under a cap of 4: %v (the earliest found leave first)", got)
	}
	if n := len(c.Specs()); n != 4 {
		t.Errorf("%d tools offered, the cap is 4", n)
	}

	_, c2, _ := catalogFixture(t, 0)
	details, _ := json.Marshal(SearchDetails{Query: "issue", Found: []string{"mcp__gh__create_issue"}})
	history := []llm.Message{
		llm.UserText("go"),
		{Role: llm.RoleAssistant, Content: []llm.Content{llm.ToolCall("c1", SearchToolName, json.RawMessage(`{"query":"issue"}`))}},
		{Role: llm.RoleToolResult, ToolCallID: "c1", ToolName: SearchToolName, Content: []llm.Content{llm.Text("...")}, Details: details},
		{Role: llm.RoleAssistant, Content: []llm.Content{llm.ToolCall("c2", "mcp__billing__refund_payment", json.RawMessage(`{}`))}},
	}
	c2.Restore(history)
	if got := c2.Found(); !slices.Equal(got, []string{"mcp__gh__create_issue", "mcp__billing__refund_payment"}) {
		t.Errorf("restored %v", got)
	}
}

// Found tools are offered in every later request, so their definitions
// have a token cap: a search of tools with huge schemas returns the best
// matches that fit it (the best one always, however big), and finding
// more drops the earliest found. The offered set stays within the cap.
func TestCatalogFoundTokenCap(t *testing.T) {
	big := func(name string, props int) Tool {
		p := map[string]any{}
		for i := range props {
			p[strings.Repeat("f", 20)+string(rune('a'+i%26))+strings.Repeat("x", i)] = map[string]any{"type": "string", "description": strings.Repeat("a long field description ", 8)}
		}
		raw, _ := json.Marshal(map[string]any{"type": "object", "properties": p})
		return &serverTool{Func: Func{ToolName: "mcp__erp__" + name, ToolDescription: "Create a " + name + " record.", Parameters: raw, Run: okRun}, server: "erp"}
	}
	tokens := func(specs []llm.ToolSpec) int {
		n := 0
		for _, s := range specs {
			n += len(s.Name) + len(s.Description) + len(s.Parameters)
		}
		return n / 4
	}
	tools := []Tool{&Func{ToolName: "read", ToolDescription: "Read a file.", Run: okRun}}
	for _, n := range []string{"order", "invoice", "shipment", "customer", "supplier", "payment"} {
		tools = append(tools, big(n, 40)) // about 2,800 tokens each
	}
	tools = append(tools, big("ledger", 200)) // over the cap alone
	reg, err := NewRegistry(tools...)
	if err != nil {
		t.Fatal(err)
	}
	const capTokens = 6000
	c, err := NewCatalog(reg, CatalogOptions{Direct: func(n string) bool { return n == "read" }, MaxFoundTokens: capTokens, Tokens: tokens})
	if err != nil {
		t.Fatal(err)
	}
	found := func() int {
		var specs []llm.ToolSpec
		for _, sp := range c.Specs() {
			if sp.Name != "read" && sp.Name != SearchToolName {
				specs = append(specs, sp)
			}
		}
		return tokens(specs)
	}
	if one := tokens([]llm.ToolSpec{{Name: "mcp__erp__order", Description: "Create a order record.", Parameters: tools[1].Schema()}}); one < 2000 || one > 3500 {
		t.Fatalf("a tool of the fixture is %d tokens, want about 2,800", one)
	}
	ms := c.Search("create record", MaxSearchResults)
	if len(ms) == 0 || len(ms) > 2 {
		t.Fatalf("search returned %d matches: want the best ones within %d tokens (2)", len(ms), capTokens)
	}
	c.Offer(matchNames(ms)...)
	c.Offer("mcp__erp__shipment", "mcp__erp__customer", "mcp__erp__supplier")
	if n := found(); n > capTokens {
		t.Errorf("found tools take %d tokens of every request, over the cap of %d: %v", n, capTokens, c.Found())
	}
	if f := c.Found(); len(f) == 0 || f[len(f)-1] != "mcp__erp__supplier" {
		t.Errorf("found %v: the newest found must stay", f)
	}
	if n := tokens([]llm.ToolSpec{{Name: "mcp__erp__ledger", Description: "Create a ledger record.", Parameters: tools[7].Schema()}}); n <= capTokens {
		t.Fatalf("the ledger is %d tokens, want it over the cap alone", n)
	}
	if ms := c.Search("ledger", 5); len(ms) != 1 || ms[0].Name != "mcp__erp__ledger" {
		t.Fatalf("a tool over the cap alone is still found: %v", matchNames(ms))
	}
	c.Offer("mcp__erp__ledger")
	if f := c.Found(); !slices.Equal(f, []string{"mcp__erp__ledger"}) {
		t.Errorf("after finding the huge tool, found %v: want it alone", f)
	}
}

// A search that matches more tools than it returns says how many more, so
// the model does not take server:NAME's first few for all the server has.
func TestCatalogSearchSaysMore(t *testing.T) {
	reg, _, _ := catalogFixture(t, 0)
	res := reg.Execute(context.Background(), llm.ToolCall("c1", SearchToolName, json.RawMessage(`{"query":"server:gh","limit":1}`)), nil)
	if res.IsError || !strings.Contains(res.Text(), "2 more tools match") {
		t.Fatalf("search of 3 tools, limit 1: %q", res.Text())
	}
	all := reg.Execute(context.Background(), llm.ToolCall("c2", SearchToolName, json.RawMessage(`{"query":"server:gh"}`)), nil)
	if strings.Contains(all.Text(), "more tools match") {
		t.Fatalf("a search that returned every match says there are more: %q", all.Text())
	}
}
