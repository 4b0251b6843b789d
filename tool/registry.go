package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sort"
	"strings"
	"sync"

	"github.com/agentloop/agentloop/llm"
)

// Registry holds the tools of a run by name and carries out calls to them.
// It is safe for concurrent use: Add may come while calls run (an MCP
// server that lists a new tool mid-run), but not during Policy.Apply.
type Registry struct {
	mu      sync.RWMutex
	tools   map[string]*entry
	order   []string
	unknown func(name string) string // the text for a call of an unknown tool; nil: list them all
}

// SetUnknownText sets what a call of a tool the registry does not hold is
// told (a catalog points at tool_search instead of naming hundreds of
// tools); nil restores the default, which names every tool.
func (r *Registry) SetUnknownText(text func(name string) string) {
	r.mu.Lock()
	r.unknown = text
	r.mu.Unlock()
}

type entry struct {
	tool   Tool
	schema *schema // nil when the tool's schema could not be compiled
}

// NewRegistry returns a registry holding tools. Duplicate names are an
// error.
func NewRegistry(tools ...Tool) (*Registry, error) {
	r := &Registry{tools: make(map[string]*entry)}
	for _, t := range tools {
		if err := r.Add(t); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Add registers t. Its schema is compiled once here.
func (r *Registry) Add(t Tool) error {
	name := t.Name()
	if name == "" {
		return errors.New("tool: a tool needs a name")
	}
	r.mu.Lock()
	if r.tools == nil {
		r.tools = make(map[string]*entry)
	}
	_, dup := r.tools[name]
	r.mu.Unlock()
	if dup {
		return fmt.Errorf("tool: %q is registered twice", name)
	}
	s, err := compileSchema(t.Schema())
	if err != nil {
		return fmt.Errorf("tool %s: %w", name, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.tools[name]; dup {
		return fmt.Errorf("tool: %q is registered twice", name)
	}
	r.tools[name] = &entry{tool: t, schema: s}
	r.order = append(r.order, name)
	return nil
}

// lookup returns the entry of name, nil when there is none.
func (r *Registry) lookup(name string) *entry {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.tools[name]
}

// Get returns the tool called name.
func (r *Registry) Get(name string) (Tool, bool) {
	e := r.lookup(name)
	if e == nil {
		return nil, false
	}
	return e.tool, true
}

// Names returns the tool names in the order they were added.
func (r *Registry) Names() []string {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]string(nil), r.order...)
}

// Tools returns the tools in the order they were added.
func (r *Registry) Tools() []Tool {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Tool, 0, len(r.order))
	for _, n := range r.order {
		out = append(out, r.tools[n].tool)
	}
	return out
}

// Len is the number of tools.
func (r *Registry) Len() int {
	if r == nil {
		return 0
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.order)
}

// Specs describes the tools to a model, in the order they were added.
func (r *Registry) Specs() []llm.ToolSpec {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	specs := make([]llm.ToolSpec, 0, len(r.order))
	for _, n := range r.order {
		t := r.tools[n].tool
		specs = append(specs, llm.ToolSpec{Name: n, Description: t.Description(), Parameters: t.Schema()})
	}
	return specs
}

// Prepare checks a tool-call block from the model: the tool exists and the
// arguments validate (after coercion). It returns the call to run, or a
// non-nil isError result that says what was wrong.
func (r *Registry) Prepare(block llm.Content) (Call, *Result) {
	call := Call{ID: block.ID, Name: block.Name, Args: block.Arguments}
	if len(call.Args) == 0 {
		call.Args = json.RawMessage("{}")
	}
	e := r.lookup(block.Name)
	if e == nil {
		res := ErrorResult(r.unknownToolText(block.Name))
		return call, &res
	}
	args, err := e.schema.validate(call.Args)
	if err != nil {
		res := ErrorResult(fmt.Sprintf("Invalid arguments for tool %q: %v\n\nReceived arguments:\n%s\n\nFix the arguments to match the tool's schema and call it again.",
			block.Name, err, prettyJSON(call.Args)))
		return call, &res
	}
	call.Args = args
	return call, nil
}

func (r *Registry) unknownToolText(name string) string {
	if r != nil {
		r.mu.RLock()
		text := r.unknown
		r.mu.RUnlock()
		if text != nil {
			return text(name)
		}
	}
	names := r.Names()
	sort.Strings(names)
	if len(names) == 0 {
		return fmt.Sprintf("Tool %q not found: no tools are available in this run.", name)
	}
	return fmt.Sprintf("Tool %q not found. Available tools: %s.", name, strings.Join(names, ", "))
}

// ConcurrencySafe reports whether call may run beside other calls. Unknown
// tools and tools that do not classify their calls are exclusive.
func (r *Registry) ConcurrencySafe(call Call) bool {
	t, ok := r.Get(call.Name)
	if !ok {
		return false
	}
	c, ok := t.(ConcurrencyClassifier)
	return ok && c.ConcurrencySafe(call)
}

// Run executes a prepared call. Nothing escapes as a panic or an error: a
// returned error becomes an isError result with its text, a panic becomes
// an isError result naming the tool, and a cancelled context becomes an
// "aborted" result. update may be nil.
func (r *Registry) Run(ctx context.Context, call Call, update func(Partial)) (res Result) {
	t, ok := r.Get(call.Name)
	if !ok {
		return ErrorResult(r.unknownToolText(call.Name))
	}
	if update == nil {
		update = func(Partial) {}
	}
	if err := ctx.Err(); err != nil {
		return AbortedResult(err)
	}
	defer func() {
		if p := recover(); p != nil {
			res = ErrorResult(fmt.Sprintf("Tool %q crashed: %v. This is a bug in the tool, not in your arguments; try another approach.", call.Name, p))
			res.Details, _ = json.Marshal(map[string]string{"panic": fmt.Sprint(p), "stack": string(debug.Stack())})
		}
	}()
	out, err := t.Execute(ctx, call, update)
	switch {
	case err != nil && ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, ctx.Err())):
		// Only the call's own cancellation is an abort: a context.Canceled
		// from inside the tool (a connection it lost) is a failure the
		// model should read, not "the call was cancelled".
		return AbortedResult(err)
	case err != nil:
		out.IsError = true
		out.Content = append(out.Content, llm.Text(err.Error()))
	}
	if out.Content == nil {
		out.Content = []llm.Content{}
	}
	return out
}

// Execute prepares and runs a tool-call block.
func (r *Registry) Execute(ctx context.Context, block llm.Content, update func(Partial)) Result {
	call, bad := r.Prepare(block)
	if bad != nil {
		return *bad
	}
	return r.Run(ctx, call, update)
}

// AbortedText is the text of the result of a call that was cancelled.
const AbortedText = "aborted: the call was cancelled before it finished"

// AbortedResult is the result of a call that was cancelled.
func AbortedResult(cause error) Result {
	res := ErrorResult(AbortedText)
	if cause != nil && !errors.Is(cause, context.Canceled) {
		res.Content[0].Text += " (" + cause.Error() + ")"
	}
	return res
}

func prettyJSON(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return string(raw)
	}
	return string(b)
}
