package wrap

import (
	"context"
	"iter"
	"strings"

	"github.com/agentloop/agentloop/llm"
)

// KnownPrefixes are the namespaces models put before a tool's name:
// OpenAI-style "functions.", Gemini's "default_api:", and the like.
var KnownPrefixes = []string{"functions.", "function.", "functions:", "default_api:", "default_api.", "tools.", "tool.", "tools:", "api."}

// NormalizeToolNames returns the layer that matches tool-call names to the
// offered tools (layer 4): see MatchToolName. A name that matches no
// offered tool is left as the model wrote it, so the tool registry can say
// which tool was unknown.
func NormalizeToolNames() Middleware {
	return func(inner llm.Model) llm.Model {
		return layer(inner, func(ctx context.Context, req *llm.Request, in iter.Seq2[llm.Event, error], r *relay) {
			offered := offeredNames(req)
			rewrite := func(c llm.Content) llm.Content {
				if c.Type == llm.ContentToolCall {
					if name, ok := MatchToolName(c.Name, offered); ok {
						c.Name = name
					}
				}
				return c
			}
			r.passAll(in, rewrite)
		})
	}
}

func offeredNames(req *llm.Request) []string {
	if req == nil {
		return nil
	}
	names := make([]string, len(req.Tools))
	for i, t := range req.Tools {
		names[i] = t.Name
	}
	return names
}

// MatchToolName finds the offered tool a model meant by name: the name
// itself; else trimmed of whitespace; else without a known prefix
// (KnownPrefixes); else the one offered name equal to it ignoring case.
// It reports false when no offered tool, or more than one, fits.
func MatchToolName(name string, offered []string) (string, bool) {
	for _, o := range offered {
		if o == name {
			return o, true
		}
	}
	// The forms the model may have meant, from the least changed.
	forms := []string{strings.TrimSpace(name)}
	for n := forms[0]; ; {
		cut := false
		for _, p := range KnownPrefixes {
			if len(n) > len(p) && strings.EqualFold(n[:len(p)], p) {
				n = strings.TrimSpace(n[len(p):])
				forms = append(forms, n)
				cut = true
				break
			}
		}
		if !cut {
			break
		}
	}
	for _, f := range forms {
		for _, o := range offered {
			if o == f {
				return o, true
			}
		}
	}
	for _, f := range forms {
		found := ""
		for _, o := range offered {
			if strings.EqualFold(o, f) {
				if found != "" && found != o {
					return "", false // ambiguous
				}
				found = o
			}
		}
		if found != "" {
			return found, true
		}
	}
	return "", false
}
