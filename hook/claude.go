package hook

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"

	"github.com/agentloop/agentloop/tool"
)

// Claude Code's hook event names, as they appear in settings files.
const (
	EventPreToolUse  = "PreToolUse"
	EventPostToolUse = "PostToolUse"
	// EventPostToolUseFailure fires after a tool ran and failed, where
	// PostToolUse fires after it ran and succeeded.
	EventPostToolUseFailure = "PostToolUseFailure"
	EventUserPromptSubmit   = "UserPromptSubmit"
	EventStop               = "Stop"
	EventSessionStart       = "SessionStart"
	EventSessionEnd         = "SessionEnd"
	EventPreCompact         = "PreCompact"
	EventPostCompact        = "PostCompact"
	EventSubagentStart      = "SubagentStart"
	EventSubagentStop       = "SubagentStop"
)

// eventPoints maps each supported Claude Code event to the point its
// commands are registered at. PostToolUse and PostToolUseFailure sit at
// tool_result_persist, not after_tool_call, because what they say must
// reach the model in the result; they run only for calls that were
// executed (tool.Executed), as in Claude Code.
var eventPoints = map[string]Point{
	EventPreToolUse:         BeforeToolCall,
	EventPostToolUse:        ToolResultPersist,
	EventPostToolUseFailure: ToolResultPersist,
	EventUserPromptSubmit:   UserPromptSubmit,
	EventStop:               Stop,
	EventSessionStart:       SessionStart,
	EventSessionEnd:         SessionEnd,
	EventPreCompact:         BeforeCompaction,
	EventPostCompact:        AfterCompaction,
	EventSubagentStart:      SubagentStart,
	EventSubagentStop:       SubagentStop,
}

// Events lists the Claude Code events agentloop runs, in a stable order.
var Events = []string{
	EventSessionStart, EventUserPromptSubmit, EventPreToolUse, EventPostToolUse, EventPostToolUseFailure,
	EventPreCompact, EventPostCompact, EventStop, EventSessionEnd, EventSubagentStart, EventSubagentStop,
}

// ccInput is the JSON a command hook reads on stdin: Claude Code's fields,
// then ours.
type ccInput struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	HookEventName  string `json:"hook_event_name"`

	ToolName     string          `json:"tool_name,omitempty"`
	ToolInput    json.RawMessage `json:"tool_input,omitempty"`
	ToolUseID    string          `json:"tool_use_id,omitempty"`
	ToolResponse json.RawMessage `json:"tool_response,omitempty"`
	// Error is, for PostToolUseFailure, the failed call's message.
	Error string `json:"error,omitempty"`

	Prompt               *string `json:"prompt,omitempty"`
	StopHookActive       *bool   `json:"stop_hook_active,omitempty"`
	LastAssistantMessage *string `json:"last_assistant_message,omitempty"`
	Source               string  `json:"source,omitempty"`
	Reason               string  `json:"reason,omitempty"`
	Trigger              string  `json:"trigger,omitempty"`
	CustomInstructions   *string `json:"custom_instructions,omitempty"`
	CompactSummary       *string `json:"compact_summary,omitempty"`
	// SubagentStart and SubagentStop: the task and its agent type (the
	// matcher), and, at the stop, the child's transcript.
	AgentID             string `json:"agent_id,omitempty"`
	AgentType           string `json:"agent_type,omitempty"`
	AgentTranscriptPath string `json:"agent_transcript_path,omitempty"`

	// Ours: the call as agentloop knows it, when tool_name is a twin's.
	AgentloopToolName  string          `json:"agentloop_tool_name,omitempty"`
	AgentloopToolInput json.RawMessage `json:"agentloop_tool_input,omitempty"`
}

// ccResponse is tool_response: the result as text, with Bash's field names
// too so that scripts reading .tool_response.stdout work.
type ccResponse struct {
	Output  string          `json:"output"`
	IsError bool            `json:"is_error"`
	Stdout  *string         `json:"stdout,omitempty"`
	Stderr  *string         `json:"stderr,omitempty"`
	Details json.RawMessage `json:"details,omitempty"`
}

func toolResponse(ccName string, res tool.Result) json.RawMessage {
	r := ccResponse{Output: res.Text(), IsError: res.IsError, Details: res.Details}
	if ccName == "Bash" {
		empty := ""
		r.Stdout, r.Stderr = &r.Output, &empty
	}
	b, _ := json.Marshal(r)
	return b
}

// twinNames maps our built-in tools to their Claude Code twins.
var twinNames = map[string]string{
	"bash": "Bash", "read": "Read", "write": "Write", "edit": "Edit", "grep": "Grep", "find": "Glob",
}

// fieldMap says which of our argument fields become which of the twin's.
var fieldMaps = map[string][][2]string{ // ours → theirs
	"bash":  {{"command", "command"}},
	"read":  {{"path", "file_path"}, {"offset", "offset"}, {"limit", "limit"}},
	"write": {{"path", "file_path"}, {"content", "content"}},
	"edit":  {{"path", "file_path"}},
	"grep":  {{"pattern", "pattern"}, {"path", "path"}, {"glob", "glob"}},
	"find":  {{"pattern", "pattern"}, {"path", "path"}},
}

// twin returns the Claude Code name and input of a call. Tools without a
// twin keep their name and arguments. File paths are made absolute against
// the workspace, as Claude Code's are.
func twin(call tool.Call, workspace string) (string, json.RawMessage) {
	ccName, ok := twinNames[call.Name]
	if !ok {
		if !json.Valid(call.Args) {
			return call.Name, json.RawMessage("{}")
		}
		return call.Name, call.Args
	}
	var ours map[string]json.RawMessage
	if json.Unmarshal(call.Args, &ours) != nil {
		return ccName, json.RawMessage("{}")
	}
	theirs := make(map[string]json.RawMessage, 4)
	for _, f := range fieldMaps[call.Name] {
		if v, ok := ours[f[0]]; ok {
			if f[1] == "file_path" {
				v = absPathJSON(v, workspace)
			}
			theirs[f[1]] = v
		}
	}
	if call.Name == "edit" {
		oldText, newText := firstEdit(ours)
		theirs["old_string"], _ = json.Marshal(oldText)
		theirs["new_string"], _ = json.Marshal(newText)
	}
	b, err := json.Marshal(theirs)
	if err != nil {
		return ccName, json.RawMessage("{}")
	}
	return ccName, b
}

// firstEdit finds the first replacement of an edit call: edits[0], or the
// legacy top-level oldText/newText.
func firstEdit(args map[string]json.RawMessage) (string, string) {
	var edits []struct {
		OldText string `json:"oldText"`
		NewText string `json:"newText"`
	}
	if raw, ok := args["edits"]; ok {
		if json.Unmarshal(raw, &edits) != nil {
			var s string // some models send edits as a JSON string
			if json.Unmarshal(raw, &s) == nil {
				_ = json.Unmarshal([]byte(s), &edits)
			}
		}
	}
	if len(edits) > 0 {
		return edits[0].OldText, edits[0].NewText
	}
	var o, n string
	_ = json.Unmarshal(args["oldText"], &o)
	_ = json.Unmarshal(args["newText"], &n)
	return o, n
}

func absPathJSON(v json.RawMessage, workspace string) json.RawMessage {
	var p string
	if json.Unmarshal(v, &p) != nil || p == "" || workspace == "" {
		return v
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(workspace, p)
	}
	b, _ := json.Marshal(p)
	return b
}

// untwin maps a hook's updatedInput, in the twin's names, back onto our
// arguments. Fields the twin does not know are kept; for tools without a
// twin the updated input replaces the arguments.
func untwin(call tool.Call, updated json.RawMessage, workspace string) json.RawMessage {
	var theirs, ours map[string]json.RawMessage
	if json.Unmarshal(updated, &theirs) != nil || theirs == nil {
		return nil // not an object: no rewrite
	}
	if _, ok := twinNames[call.Name]; !ok {
		return updated
	}
	if json.Unmarshal(call.Args, &ours) != nil || ours == nil {
		ours = make(map[string]json.RawMessage)
	}
	_, before := twin(call, workspace)
	var prev map[string]json.RawMessage
	_ = json.Unmarshal(before, &prev)
	changed := func(k string) (json.RawMessage, bool) {
		v, ok := theirs[k]
		if !ok {
			return nil, false
		}
		return v, !bytes.Equal(compactJSON(v), compactJSON(prev[k]))
	}
	for _, f := range fieldMaps[call.Name] {
		if v, ok := changed(f[1]); ok {
			ours[f[0]] = v
		}
	}
	if call.Name == "edit" {
		vo, co := changed("old_string")
		vn, cn := changed("new_string")
		if co || cn {
			var edits []map[string]json.RawMessage
			if json.Unmarshal(ours["edits"], &edits) != nil || len(edits) == 0 {
				edits = []map[string]json.RawMessage{{}}
				delete(ours, "oldText")
				delete(ours, "newText")
			}
			if co {
				edits[0]["oldText"] = vo
			} else if edits[0]["oldText"] == nil {
				edits[0]["oldText"] = prev["old_string"]
			}
			if cn {
				edits[0]["newText"] = vn
			} else if edits[0]["newText"] == nil {
				edits[0]["newText"] = prev["new_string"]
			}
			ours["edits"], _ = json.Marshal(edits)
		}
	}
	b, err := json.Marshal(ours)
	if err != nil {
		return nil
	}
	return b
}

func compactJSON(v json.RawMessage) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, v) != nil {
		return v
	}
	return buf.Bytes()
}

// ccOutput is the JSON a command hook may print on stdout with exit code 0.
type ccOutput struct {
	Continue       *bool  `json:"continue"`
	StopReason     string `json:"stopReason"`
	SuppressOutput bool   `json:"suppressOutput"`
	SystemMessage  string `json:"systemMessage"`
	Decision       string `json:"decision"`
	Reason         string `json:"reason"`

	HookSpecificOutput *struct {
		HookEventName            string          `json:"hookEventName"`
		PermissionDecision       string          `json:"permissionDecision"`
		PermissionDecisionReason string          `json:"permissionDecisionReason"`
		UpdatedInput             json.RawMessage `json:"updatedInput"`
		AdditionalContext        string          `json:"additionalContext"`
	} `json:"hookSpecificOutput"`
}

// verdict is what one command said, in our terms.
type verdict struct {
	block      bool   // refuse (PreToolUse, UserPromptSubmit) or keep going (Stop)
	feedback   string // for the model
	user       string // for the user
	context    string // added to the model's context
	permission Permission
	permReason string
	updated    json.RawMessage // PreToolUse updatedInput, in the twin's names
	halt       string          // "continue": false
	failed     bool            // exit code other than 0 and 2, or it could not run
}

// interpret reads a finished command the way Claude Code does: exit code 0
// passes and may print JSON; 2 blocks where the event can block, its
// stderr going to the model (PreToolUse, PostToolUse, Stop) or the user
// (UserPromptSubmit, the rest); any other code is reported and ignored.
func interpret(event string, code int, stdout, stderr string) verdict {
	var v verdict
	switch code {
	case 0:
	case 2:
		msg := strings.TrimSpace(stderr)
		switch event {
		case EventPreToolUse, EventStop:
			v.block, v.feedback = true, msg
		case EventPostToolUse, EventPostToolUseFailure:
			v.feedback = msg
		case EventUserPromptSubmit:
			v.block, v.user = true, msg
		default:
			v.user = msg
		}
		return v
	default:
		v.failed = true
		return v
	}
	out := strings.TrimSpace(stdout)
	var o ccOutput
	if !strings.HasPrefix(out, "{") || json.Unmarshal([]byte(out), &o) != nil {
		if event == EventUserPromptSubmit || event == EventSessionStart {
			v.context = out
		}
		return v
	}
	v.user = o.SystemMessage
	if o.Continue != nil && !*o.Continue {
		v.halt = o.StopReason
		if v.halt == "" {
			v.halt = "A " + event + " hook stopped the run."
		}
	}
	hso := o.HookSpecificOutput
	if hso != nil {
		v.context = hso.AdditionalContext
	}
	switch event {
	case EventPreToolUse:
		decision, reason := "", o.Reason
		switch o.Decision { // the older fields, still honoured
		case "approve":
			decision = "allow"
		case "block":
			decision = "deny"
		}
		if hso != nil {
			if hso.PermissionDecision != "" {
				decision, reason = hso.PermissionDecision, hso.PermissionDecisionReason
			}
			v.updated = hso.UpdatedInput
		}
		switch decision {
		case "deny":
			v.block, v.feedback = true, reason
		case "ask":
			v.permission, v.permReason = PermissionAsk, reason
		case "allow":
			v.permission, v.permReason = PermissionAllow, reason
		}
		v.context = "" // PreToolUse context has nowhere to go before the call runs
	case EventPostToolUse, EventPostToolUseFailure:
		if o.Decision == "block" {
			v.feedback = o.Reason
		}
	case EventUserPromptSubmit:
		if o.Decision == "block" {
			v.block, v.user = true, joinLines(v.user, o.Reason)
		}
	case EventStop:
		if o.Decision == "block" {
			v.block, v.feedback = true, o.Reason
		}
	}
	return v
}

func joinLines(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n" + b
}
