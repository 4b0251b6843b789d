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
