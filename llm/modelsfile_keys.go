package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// The keys a models file may hold, outside the compat records (whose keys
// the wire packages know): a key nobody reads is most often a typo
// ("provders", "contextWindw"), and silently dropping it would leave the
// user wondering why the setting has no effect.

// keySchema describes the keys of one JSON value.
type keySchema struct {
	fields  map[string]*keySchema // an object with these keys
	mapOf   *keySchema            // an object whose keys are names, values of this schema
	arrayOf *keySchema            // an array of these
	compat  bool                  // a compat record: its keys are listed for the wire to check
}

// anyValue is a value whose inside is not checked (headers, a map of
// levels).
var anyValue = &keySchema{}

var modelsFileSchema = func() *keySchema {
	cost := &keySchema{fields: map[string]*keySchema{"input": anyValue, "output": anyValue, "cacheRead": anyValue, "cacheWrite": anyValue}}
	compat := &keySchema{compat: true}
	model := &keySchema{fields: map[string]*keySchema{
		"id": anyValue, "name": anyValue, "api": anyValue, "baseUrl": anyValue, "reasoning": anyValue, "input": anyValue,
		"contextWindow": anyValue, "maxTokens": anyValue, "cost": cost, "headers": anyValue, "compat": compat,
		"thinkingLevelMap": anyValue,
	}}
	override := &keySchema{fields: map[string]*keySchema{
		"name": anyValue, "reasoning": anyValue, "input": anyValue, "cost": cost, "contextWindow": anyValue,
		"maxTokens": anyValue, "headers": anyValue, "compat": compat, "thinkingLevelMap": anyValue,
	}}
	profile := &keySchema{fields: map[string]*keySchema{"id": anyValue, "apiKey": anyValue}}
	provider := &keySchema{fields: map[string]*keySchema{
		"baseUrl": anyValue, "api": anyValue, "apiKey": anyValue, "headers": anyValue, "authHeader": anyValue,
		"compat": compat, "profiles": &keySchema{arrayOf: profile}, "models": &keySchema{arrayOf: model},
		"modelOverrides": &keySchema{mapOf: override},
	}}
	return &keySchema{fields: map[string]*keySchema{"providers": {mapOf: provider}}}
}()

// CompatKey is a key of a compat record, where the file has it.
type CompatKey struct {
	// Provider is the provider the record belongs to; Model the model
	// (or modelOverrides entry) when the record is a model's.
	Provider, Model string
	Key             string
	Line            int
}

// Where says where the key is, for a warning.
func (k CompatKey) Where() string {
	if k.Model != "" {
		return fmt.Sprintf("line %d: provider %q, model %q: compat.%s", k.Line, k.Provider, k.Model, k.Key)
	}
	return fmt.Sprintf("line %d: provider %q: compat.%s", k.Line, k.Provider, k.Key)
}

// checkKeys walks the file's JSON and returns a warning for each key
// outside the schema, with its line and the nearest known key, and the
// keys of the compat records.
func checkKeys(data []byte) (warnings []string, compat []CompatKey) {
	dec := json.NewDecoder(bytes.NewReader(data))
	w := &keyWalker{dec: dec, data: data}
	w.value(modelsFileSchema, nil)
	return w.warnings, w.compat
}

type keyWalker struct {
	dec      *json.Decoder
	data     []byte
	warnings []string
	compat   []CompatKey
}

// value reads one value of schema s; path holds the names on the way
// (provider, "models", model id...).
func (w *keyWalker) value(s *keySchema, path []string) bool {
	tok, err := w.dec.Token()
	if err != nil {
		return false
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return true
	}
	switch d {
	case '[':
		for i := 0; w.dec.More(); i++ {
			child := anyValue
			if s.arrayOf != nil {
				child = s.arrayOf
			}
			if !w.value(child, append(path, fmt.Sprint(i))) {
				return false
			}
		}
	case '{':
		// Models are named by their id, which may come after the keys:
		// read the object whole when it is one.
		for w.dec.More() {
			kt, err := w.dec.Token()
			if err != nil {
				return false
			}
			key, _ := kt.(string)
			line, _ := lineCol(w.data, w.dec.InputOffset())
			child := anyValue
			switch {
			case s.compat:
				prov, model := compatOwner(path)
				w.compat = append(w.compat, CompatKey{Provider: prov, Model: model, Key: key, Line: line})
			case s.mapOf != nil:
				child = s.mapOf
			case s.fields != nil:
				if c, ok := s.fields[key]; ok {
					child = c
				} else {
					w.warnings = append(w.warnings, unknownKey(key, line, path, s))
				}
			}
			if !w.value(child, append(path, key)) {
				return false
			}
		}
	}
	_, err = w.dec.Token() // the closing delimiter
	return err == nil
}

// compatOwner names the provider and model of a compat record from its
// path: [providers P compat], [providers P models i compat],
// [providers P modelOverrides ID compat].
func compatOwner(path []string) (provider, model string) {
	if len(path) >= 2 {
		provider = path[1]
	}
	if len(path) >= 4 {
		model = path[3]
		if path[2] == "models" {
			model = "#" + model
		}
	}
	return provider, model
}

func unknownKey(key string, line int, path []string, s *keySchema) string {
	where := "the top level"
	if len(path) > 0 {
		where = strings.Join(path, ".")
	}
	msg := fmt.Sprintf("line %d: unknown key %q in %s: agentloop ignores it", line, key, where)
	if near := nearestKey(key, s.fields); near != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", near)
	}
	return msg
}

// nearestKey returns the known key within two edits of key, if one is.
func nearestKey(key string, fields map[string]*keySchema) string {
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	best, bestD := "", 3
	for _, k := range names {
		if d := editDistance(strings.ToLower(key), strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of two short strings.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
