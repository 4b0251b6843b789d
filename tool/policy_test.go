package tool

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/llm"
)

type policyTool struct {
	Func
	readOnly *bool
}

func (t *policyTool) ReadOnly() bool { return *t.readOnly }

func policyRegistry(t *testing.T) *Registry {
	t.Helper()
	yes, no := true, false
	var tools []Tool
	for _, n := range []string{"read", "grep", "find", "ls"} {
		tools = append(tools, &policyTool{Func{ToolName: n}, &yes})
	}
	for _, n := range []string{"write", "edit", "bash"} {
		tools = append(tools, &policyTool{Func{ToolName: n}, &no})
	}
	tools = append(tools,
		&Func{ToolName: "mcp__github__get_issue"},
		&policyTool{Func{ToolName: "mcp__github__list_issues"}, &yes},
		&Func{ToolName: "mcp__slack__post"},
		&Func{ToolName: "custom"})
	r, err := NewRegistry(tools...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestPolicy(t *testing.T) {
	r := policyRegistry(t)
	tests := []struct {
		name    string
		p       Policy
		want    string
		wantErr string
	}{
		{name: "default is coding", p: Policy{}, want: "read,grep,find,ls,write,edit,bash"},
		{name: "readonly", p: Policy{Profile: ProfileReadOnly}, want: "read,grep,find,ls"},
		{name: "coding", p: Policy{Profile: ProfileCoding}, want: "read,grep,find,ls,write,edit,bash"},
		{name: "full", p: Policy{Profile: ProfileFull},
			want: "read,grep,find,ls,write,edit,bash,mcp__github__get_issue,mcp__github__list_issues,mcp__slack__post,custom"},
		{name: "explicit list replaces the profile", p: Policy{Profile: ProfileFull, Tools: []string{"read", "bash"}}, want: "read,bash"},
		{name: "explicit list with a glob", p: Policy{Tools: []string{"read", "mcp__github__*"}}, want: "read,mcp__github__get_issue,mcp__github__list_issues"},
		{name: "empty explicit list", p: Policy{Tools: []string{}}, want: ""},
		{name: "no tools", p: Policy{NoTools: true, Tools: []string{"read"}}, want: ""},
		{name: "no tools then allow", p: Policy{NoTools: true, Allow: []string{"ls"}}, want: "ls"},
		{name: "allow adds", p: Policy{Profile: ProfileReadOnly, Allow: []string{"mcp__github__*"}},
			want: "read,grep,find,ls,mcp__github__get_issue,mcp__github__list_issues"},
		{name: "deny removes", p: Policy{Deny: []string{"bash", "w*"}}, want: "read,grep,find,ls,edit"},
		{name: "deny beats allow", p: Policy{Allow: []string{"mcp__*"}, Deny: []string{"mcp__slack__*"}},
			want: "read,grep,find,ls,write,edit,bash,mcp__github__get_issue,mcp__github__list_issues"},
		{name: "deny of an unknown name is fine", p: Policy{Deny: []string{"nothing"}}, want: "read,grep,find,ls,write,edit,bash"},
		{name: "read-only removes mutating tools", p: Policy{Profile: ProfileFull, ReadOnly: true},
			want: "read,grep,find,ls,mcp__github__list_issues"},
		{name: "read-only after an explicit list", p: Policy{Tools: []string{"read", "edit", "custom"}, ReadOnly: true}, want: "read"},
		{name: "unknown profile", p: Policy{Profile: "yolo"}, wantErr: `tool policy: unknown profile "yolo"; use readonly, coding or full`},
		{name: "typo in the tool list", p: Policy{Tools: []string{"reed"}},
			wantErr: `tool policy: the tool list names "reed", which is not a registered tool; registered tools: bash, custom, edit`},
		{name: "typo in the allow list", p: Policy{Allow: []string{"lss"}}, wantErr: `the allow list names "lss"`},
		{name: "bad glob", p: Policy{Deny: []string{"mcp__[*"}}, wantErr: `tool policy: "mcp__[*" is not a valid glob`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.p.Apply(r)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if names := strings.Join(got.Names(), ","); names != tt.want {
				t.Errorf("tools = %s, want %s", names, tt.want)
			}
			if len(got.Specs()) != got.Len() {
				t.Errorf("specs and tools disagree")
			}
		})
	}
	if r.Len() != 11 {
		t.Errorf("Apply changed the source registry: %d tools", r.Len())
	}
}

func TestPolicyCallOutsideSet(t *testing.T) {
	r := policyRegistry(t)
	ro, err := Policy{Profile: ProfileReadOnly}.Apply(r)
	if err != nil {
		t.Fatal(err)
	}
	res := ro.Execute(context.Background(), llm.ToolCall("c1", "bash", []byte(`{}`)), nil)
	if !res.IsError || res.Text() != `Tool "bash" not found. Available tools: find, grep, ls, read.` {
		t.Errorf("call outside the set: %+v", res)
	}
}

// A read-only run with the GitHub MCP tools: the profile gives the base
// set, Allow adds to it, Deny removes, and ReadOnly keeps only the tools
// that declare themselves read-only.
func ExamplePolicy_Apply() {
	yes, no := true, false
	r, _ := NewRegistry(
		&policyTool{Func{ToolName: "read"}, &yes},
		&policyTool{Func{ToolName: "edit"}, &no},
		&policyTool{Func{ToolName: "mcp__github__list_issues"}, &yes},
		&policyTool{Func{ToolName: "mcp__github__delete_repo"}, &no},
		&policyTool{Func{ToolName: "mcp__slack__read"}, &yes},
	)
	p := Policy{Profile: ProfileCoding, Allow: []string{"mcp__github__*"}, ReadOnly: true}
	filtered, err := p.Apply(r)
	if err != nil {
		panic(err)
	}
	fmt.Println(filtered.Names())
	// Output: [read mcp__github__list_issues]
}
