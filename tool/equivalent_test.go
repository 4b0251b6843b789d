package tool

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// An engine's own call (here Claude Code's Read, which is no tool of the
// run) is judged by its equivalent: a deny rule written for our read
// refuses it, the approval mode sees whether it only reads, and a call the
// equivalent does not know is judged as it is.
func TestApprovalJudgesEquivalent(t *testing.T) {
	ws := t.TempDir()
	rules := &PermissionRules{Workspace: ws}
	r, err := ParsePermissionRule(VerdictDeny, "Read(./.env)", "settings.json")
	if err != nil {
		t.Fatal(err)
	}
	rules.Rules = append(rules.Rules, r)
	a := &Approval{Policy: rules.Policy(ApproveNever), ReadOnly: approvalRegistry(t).ReadOnly}
	eq := Equivalent(func(c Call) (Call, bool, bool) {
		if c.Name != "Read" {
			return Call{}, false, false
		}
		var in struct {
			FilePath string `json:"file_path"`
		}
		_ = json.Unmarshal(c.Args, &in)
		args, _ := json.Marshal(map[string]string{"path": in.FilePath})
		return Call{ID: c.ID, Name: "read", Args: args}, true, true
	})
	ctx := WithEquivalent(context.Background(), eq)
	read := func(p string) Call {
		return Call{ID: "c1", Name: "Read", Args: json.RawMessage(`{"file_path":"` + p + `"}`)}
	}

	if d := a.Decide(ctx, read(ws+"/.env")); d.Verdict != VerdictDeny || !strings.Contains(d.Reason, "Read(./.env)") {
		t.Errorf("the denied file: %v %q, want the deny rule", d.Verdict, d.Reason)
	}
	if d := a.Decide(ctx, read(ws+"/README")); d.Verdict != VerdictAllow {
		t.Errorf("another file under never: %v %q, want allowed as read-only", d.Verdict, d.Reason)
	}
	// Without the equivalent the engine's Read is an unknown tool: never
	// refuses it, and the rule does not see it.
	if d := a.Decide(context.Background(), read(ws+"/README")); d.Verdict != VerdictDeny || strings.Contains(d.Reason, "Read(./.env)") {
		t.Errorf("no equivalent: %v %q", d.Verdict, d.Reason)
	}
	if d := a.Decide(ctx, Call{ID: "c2", Name: "Write", Args: json.RawMessage(`{}`)}); d.Verdict != VerdictDeny {
		t.Errorf("a call the equivalent does not know: %v, want judged as it is (not read-only)", d.Verdict)
	}
}
