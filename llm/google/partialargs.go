package google

import (
	"encoding/json"
	"strconv"
	"strings"
)

// partialArg is one piece of a streamed call's arguments: the value at a
// JSON path ("$.location", "$.items[0].name"). A string value may come in
// several pieces of the same path, each but the last with willContinue.
type partialArg struct {
	JSONPath     string          `json:"jsonPath"`
	StringValue  *string         `json:"stringValue"`
	NumberValue  *float64        `json:"numberValue"`
	BoolValue    *bool           `json:"boolValue"`
	NullValue    json.RawMessage `json:"nullValue"`
	WillContinue bool            `json:"willContinue"`
}

// streamedCall assembles the arguments of one streamed function call.
type streamedCall struct {
	index int // the call's content index
	root  any // the arguments so far: nested map[string]any and []any
	// open is the path of a string value still being continued.
	open string
}

// add applies pieces of the arguments.
func (sc *streamedCall) add(args []partialArg) {
	for _, a := range args {
		path, ok := parsePath(a.JSONPath)
		if !ok {
			continue // a path we cannot read: the piece is lost, not the call
		}
		var v any
		switch {
		case a.StringValue != nil:
			s := *a.StringValue
			if sc.open == a.JSONPath {
				if prev, ok := lookup(sc.root, path).(string); ok {
					s = prev + s
				}
			}
			v = s
		case a.NumberValue != nil:
			v = *a.NumberValue
		case a.BoolValue != nil:
			v = *a.BoolValue
		case a.NullValue != nil:
			v = nil
		default:
			continue
		}
		sc.open = ""
		if a.WillContinue && a.StringValue != nil {
			sc.open = a.JSONPath
		}
		sc.root = set(sc.root, path, v)
	}
}

// json returns the arguments as a JSON object.
func (sc *streamedCall) json() string {
	if _, ok := sc.root.(map[string]any); !ok {
		return "{}"
	}
	b, err := json.Marshal(sc.root)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// pathStep is one step of a path: a key, or an index when key is "".
type pathStep struct {
	key   string
	index int
}

// parsePath reads "$.a.b[2].c" (and "$['a']") into steps; the path must
// start at the root and name at least one step.
func parsePath(p string) ([]pathStep, bool) {
	if !strings.HasPrefix(p, "$") {
		return nil, false
	}
	p = p[1:]
	var steps []pathStep
	for p != "" {
		switch {
		case p[0] == '.':
			p = p[1:]
			n := strings.IndexAny(p, ".[")
			if n < 0 {
				n = len(p)
			}
			if n == 0 {
				return nil, false
			}
			steps = append(steps, pathStep{key: p[:n]})
			p = p[n:]
		case strings.HasPrefix(p, "['"):
			end := strings.Index(p, "']")
			if end < 2 {
				return nil, false
			}
			steps = append(steps, pathStep{key: p[2:end]})
			p = p[end+2:]
		case p[0] == '[':
			end := strings.IndexByte(p, ']')
			if end < 0 {
				return nil, false
			}
			n, err := strconv.Atoi(p[1:end])
			if err != nil || n < 0 || n > 1<<16 {
				return nil, false
			}
			steps = append(steps, pathStep{key: "", index: n})
			p = p[end+1:]
		default:
			return nil, false
		}
	}
	if len(steps) == 0 || steps[0].key == "" {
		return nil, false
	}
	return steps, true
}

// set stores v at path under node, making the objects and arrays on the
// way, and returns the new node.
func set(node any, path []pathStep, v any) any {
	if len(path) == 0 {
		return v
	}
	st := path[0]
	if st.key != "" {
		m, ok := node.(map[string]any)
		if !ok {
			m = map[string]any{}
		}
		m[st.key] = set(m[st.key], path[1:], v)
		return m
	}
	a, _ := node.([]any)
	for len(a) <= st.index {
		a = append(a, nil)
	}
	a[st.index] = set(a[st.index], path[1:], v)
	return a
}

// lookup returns the value at path under node, nil when there is none.
func lookup(node any, path []pathStep) any {
	for _, st := range path {
		if st.key != "" {
			m, _ := node.(map[string]any)
			node = m[st.key]
			continue
		}
		a, _ := node.([]any)
		if st.index >= len(a) {
			return nil
		}
		node = a[st.index]
	}
	return node
}
