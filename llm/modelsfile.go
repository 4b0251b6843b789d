package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/agentloop/agentloop/internal/lazyre"
	"github.com/agentloop/agentloop/internal/proc"
)

// The models file: a user's own providers and models, in the format of pi's
// models.json so pi users can bring theirs as is:
//
//	{"providers": {
//	  "local": {
//	    "baseUrl": "http://127.0.0.1:8080/v1",
//	    "api": "openai-completions",
//	    "apiKey": "LOCAL_KEY",
//	    "headers": {"X-Team": "infra"},
//	    "compat": {"maxTokensField": "max_tokens"},
//	    "profiles": [{"id": "work", "apiKey": "KEY_A"}, {"id": "spare", "apiKey": "!pass show spare"}],
//	    "models": [{"id": "qwen3", "contextWindow": 32768, "maxTokens": 4096,
//	                "cost": {"input": 0, "output": 0}, "reasoning": false, "input": ["text"]}]
//	  }
//	}}
//
// A provider entry for a built-in provider ("anthropic", "openrouter", ...)
// may omit baseUrl and api, and may only set apiKey or headers. apiKey and
// header values are resolved by ResolveKey.

// Defaults for models file entries that leave the limits out (pi's).
const (
	DefaultContextWindow = 128000
	DefaultMaxTokens     = 16384
)

// ModelsFile is a parsed models file.
type ModelsFile struct {
	// Path is where the file was read from ("" when parsed from bytes).
	Path      string                     `json:"-"`
	Providers map[string]*ProviderConfig `json:"providers"`
	// Warnings name the keys of the file nothing reads, with their line.
	Warnings []string `json:"-"`
	// CompatKeys are the keys of its compat records, for the wire
	// packages to say which ones they do not apply.
	CompatKeys []CompatKey `json:"-"`
}

// ProviderConfig is one provider of a models file.
type ProviderConfig struct {
	BaseURL string `json:"baseUrl,omitempty"`
	API     API    `json:"api,omitempty"`
	// APIKey is the key spec, unresolved: "!command", an environment
	// variable name, or the key itself. Resolve it with ResolveKey.
	APIKey  string            `json:"apiKey,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// AuthHeader, when true, asks for the key as "Authorization: Bearer".
	AuthHeader *bool `json:"authHeader,omitempty"`
	// Compat is the wire-specific compatibility record, kept raw: the wire
	// package that uses it defines its shape.
	Compat json.RawMessage `json:"compat,omitempty"`
	// Profiles are alternative credentials, tried in order.
	Profiles []AuthProfile `json:"profiles,omitempty"`
	Models   []ModelConfig `json:"models,omitempty"`
	// ModelOverrides change fields of this provider's built-in models, by
	// id, without listing them again. An id the registry does not know
	// (pi's registry is larger than ours) describes a model of a provider
	// whose api and base URL are known: the override on pi's defaults.
	ModelOverrides map[string]ModelOverride `json:"modelOverrides,omitempty"`
}

// ModelOverride is a partial model description: only the fields it sets
// replace those of the built-in entry.
type ModelOverride struct {
	Name          string            `json:"name,omitempty"`
	Reasoning     *bool             `json:"reasoning,omitempty"`
	Input         []string          `json:"input,omitempty"`
	Cost          *PartialPrices    `json:"cost,omitempty"`
	ContextWindow int               `json:"contextWindow,omitempty"`
	MaxTokens     int               `json:"maxTokens,omitempty"`
	Headers       map[string]string `json:"headers,omitempty"`
	Compat        json.RawMessage   `json:"compat,omitempty"`
	// ThinkingLevelMap renames thinking levels to the provider's values;
	// a null value marks a level the model does not support.
	ThinkingLevelMap map[string]*string `json:"thinkingLevelMap,omitempty"`
}

// PartialPrices are prices of which only some may be given.
type PartialPrices struct {
	Input      *float64 `json:"input,omitempty"`
	Output     *float64 `json:"output,omitempty"`
	CacheRead  *float64 `json:"cacheRead,omitempty"`
	CacheWrite *float64 `json:"cacheWrite,omitempty"`
}

// Apply returns m with the override's fields set.
func (o ModelOverride) Apply(m ModelInfo) ModelInfo {
	m = cloneInfo(m)
	if o.Name != "" {
		m.Name = o.Name
	}
	if o.Reasoning != nil {
		m.Reasoning = *o.Reasoning
	}
	if len(o.Input) > 0 {
		m.Input = append([]string(nil), o.Input...)
	}
	if o.ContextWindow > 0 {
		m.ContextWindow = o.ContextWindow
	}
	if o.MaxTokens > 0 {
		m.MaxTokens = o.MaxTokens
	}
	if c := o.Cost; c != nil {
		set := func(dst *float64, v *float64) {
			if v != nil {
				*dst = *v
			}
		}
		set(&m.Cost.Input, c.Input)
		set(&m.Cost.Output, c.Output)
		set(&m.Cost.CacheRead, c.CacheRead)
		set(&m.Cost.CacheWrite, c.CacheWrite)
	}
	return m
}

// OverrideModel describes a model the registry does not know from the
// file's modelOverrides entry for it, when the provider's api and base URL
// are known (a built-in provider, or one the file gives them for): the
// override over pi's defaults for a custom model. f may be nil.
func (f *ModelsFile) OverrideModel(provider, id string) (ModelInfo, bool) {
	p := f.Provider(provider)
	if p == nil {
		return ModelInfo{}, false
	}
	o, ok := p.ModelOverrides[id]
	if !ok {
		return ModelInfo{}, false
	}
	api, base := p.API, p.BaseURL
	if api == "" {
		api = DefaultAPI(provider)
	}
	if base == "" {
		base = DefaultBaseURL(provider)
	}
	if api == "" || base == "" {
		return ModelInfo{}, false
	}
	info := ModelInfo{ID: id, Name: id, Provider: provider, API: api, BaseURL: base,
		ContextWindow: DefaultContextWindow, MaxTokens: DefaultMaxTokens, Input: []string{"text"}}
	return o.Apply(info), true
}

// ThinkingLevels returns the thinkingLevelMap of a model of this provider:
// the modelOverrides entry's, then the model's own (which wins), merged;
// nil when neither has one.
func (p *ProviderConfig) ThinkingLevels(modelID string) map[string]*string {
	var out map[string]*string
	add := func(m map[string]*string) {
		for k, v := range m {
			if out == nil {
				out = map[string]*string{}
			}
			out[k] = v
		}
	}
	if p == nil {
		return nil
	}
	add(p.ModelOverrides[modelID].ThinkingLevelMap)
	for _, m := range p.Models {
		if m.ID == modelID {
			add(m.ThinkingLevelMap)
		}
	}
	return out
}

// Override applies the file's modelOverrides for m's provider and id, if
// any, to a built-in model. f may be nil.
func (f *ModelsFile) Override(m ModelInfo) ModelInfo {
	p := f.Provider(m.Provider)
	if p == nil {
		return m
	}
	if o, ok := p.ModelOverrides[m.ID]; ok {
		return o.Apply(m)
	}
	return m
}

// AuthProfile is one named credential of a provider.
type AuthProfile struct {
	ID string `json:"id"`
	// APIKey is a key spec, as ProviderConfig.APIKey.
	APIKey string `json:"apiKey"`
}

// ModelConfig is one model of a models file provider. Zero limits mean
// DefaultContextWindow and DefaultMaxTokens; no input list means text only.
type ModelConfig struct {
	ID            string            `json:"id"`
	Name          string            `json:"name,omitempty"`
	API           API               `json:"api,omitempty"`
	BaseURL       string            `json:"baseUrl,omitempty"`
	Reasoning     bool              `json:"reasoning,omitempty"`
	Input         []string          `json:"input,omitempty"`
	ContextWindow int               `json:"contextWindow,omitempty"`
	MaxTokens     int               `json:"maxTokens,omitempty"`
	Cost          *Prices           `json:"cost,omitempty"`
	Headers       map[string]string `json:"headers,omitempty"`
	Compat        json.RawMessage   `json:"compat,omitempty"`
	// ThinkingLevelMap renames thinking levels to the provider's values
	// (pi's thinkingLevelMap); a null value marks a level the model does
	// not support.
	ThinkingLevelMap map[string]*string `json:"thinkingLevelMap,omitempty"`
}

// KnownAPIs lists the api values a models file may use.
var KnownAPIs = []API{APIAnthropicMessages, APIOpenAICompletions, APIOpenAIResponses, APIGoogleGenerativeAI}

// Home returns the agentloop home, where everything agentloop keeps
// lives: $AGENTLOOP_HOME, else ~/.agentloop. getenv nil means os.Getenv.
// It is the one place the home is worked out: a program resolves it once
// and passes it down (the CLI does); the packages' defaults for a caller
// that names no home call it.
func Home(getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if h := getenv("AGENTLOOP_HOME"); h != "" {
		return h, nil
	}
	u, err := os.UserHomeDir()
	if err != nil || u == "" {
		return "", fmt.Errorf("no home directory (%v): set AGENTLOOP_HOME to where agentloop may keep its files", err)
	}
	return filepath.Join(u, ".agentloop"), nil
}

// DefaultModelsPath returns $AGENTLOOP_HOME/models.json, or
// ~/.agentloop/models.json (see Home). getenv nil means os.Getenv.
func DefaultModelsPath(getenv func(string) string) (string, error) {
	home, err := Home(getenv)
	if err != nil {
		return "", fmt.Errorf("find the models file: %w", err)
	}
	return filepath.Join(home, "models.json"), nil
}

// LoadModelsFile reads and checks a models file. A missing file is an
// error that matches fs.ErrNotExist, so callers reading the default path
// can ignore it.
func LoadModelsFile(path string) (*ModelsFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read models file: %w", err)
	}
	return ParseModelsFile(path, data)
}

// ParseModelsFile parses and checks a models file's bytes; name is used in
// errors (the file's path).
func ParseModelsFile(name string, data []byte) (*ModelsFile, error) {
	f := &ModelsFile{Path: name}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(f); err != nil {
		return nil, fmt.Errorf("%s: %s", name, describeJSONError(data, err))
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: unexpected text after the JSON object", name)
	}
	if err := f.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	f.Warnings, f.CompatKeys = checkKeys(data)
	for i, k := range f.CompatKeys {
		// A model's record is named by the model's id.
		if n, ok := strings.CutPrefix(k.Model, "#"); ok {
			var idx int
			if _, err := fmt.Sscan(n, &idx); err == nil {
				if p := f.Providers[k.Provider]; p != nil && idx < len(p.Models) {
					f.CompatKeys[i].Model = p.Models[idx].ID
				}
			}
		}
	}
	return f, nil
}

// describeJSONError says where JSON went wrong, by line and column, without
// quoting the file (it holds keys).
func describeJSONError(data []byte, err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		line, col := lineCol(data, syn.Offset)
		return fmt.Sprintf("invalid JSON at line %d, column %d: %v", line, col, syn)
	case errors.As(err, &typ):
		line, col := lineCol(data, typ.Offset)
		field := typ.Field
		if field == "" {
			field = "the top level"
		}
		return fmt.Sprintf("line %d, column %d: %s must be %s, not a JSON %s", line, col, field, jsonKind(typ.Type.Kind().String()), typ.Value)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return "the file is empty or cut short: it must hold a JSON object like {\"providers\": {...}}"
	}
	return "invalid JSON: " + err.Error()
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "map", "struct", "ptr":
		return "an object"
	case "slice":
		return "an array"
	case "bool":
		return "true or false"
	}
	return "a number"
}

func lineCol(data []byte, off int64) (int, int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}

func (f *ModelsFile) check() error {
	names := make([]string, 0, len(f.Providers))
	for name := range f.Providers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := f.Providers[name]
		if p == nil {
			return fmt.Errorf("provider %q is null; give it an object", name)
		}
		if strings.TrimSpace(name) == "" || strings.Contains(name, "/") {
			return fmt.Errorf("provider name %q is not usable in --model provider/id; pick a name without slashes", name)
		}
		if p.API != "" && !knownAPI(p.API) {
			return fmt.Errorf("provider %q: unknown api %q; use one of %s", name, p.API, apiList())
		}
		builtinProvider := DefaultBaseURL(name) != ""
		seen := map[string]bool{}
		for i, m := range p.Models {
			if strings.TrimSpace(m.ID) == "" {
				return fmt.Errorf("provider %q: model #%d has no id", name, i+1)
			}
			if seen[m.ID] {
				return fmt.Errorf("provider %q: model %q is listed twice", name, m.ID)
			}
			seen[m.ID] = true
			if m.API != "" && !knownAPI(m.API) {
				return fmt.Errorf("provider %q, model %q: unknown api %q; use one of %s", name, m.ID, m.API, apiList())
			}
			if m.ContextWindow < 0 || m.MaxTokens < 0 {
				return fmt.Errorf("provider %q, model %q: contextWindow and maxTokens must be positive", name, m.ID)
			}
			if p.API == "" && m.API == "" && !builtinProvider {
				return fmt.Errorf("provider %q, model %q: no api; set \"api\" on the provider to one of %s", name, m.ID, apiList())
			}
			if p.BaseURL == "" && m.BaseURL == "" && !builtinProvider {
				return fmt.Errorf("provider %q: no baseUrl; set it to the server's API root, like http://127.0.0.1:8080/v1", name)
			}
		}
		for id, o := range p.ModelOverrides {
			if o.ContextWindow < 0 || o.MaxTokens < 0 {
				return fmt.Errorf("provider %q, modelOverrides %q: contextWindow and maxTokens must be positive", name, id)
			}
		}
		ids := map[string]bool{}
		for i, pr := range p.Profiles {
			if strings.TrimSpace(pr.ID) == "" {
				return fmt.Errorf("provider %q: profile #%d has no id", name, i+1)
			}
			if ids[pr.ID] {
				return fmt.Errorf("provider %q: profile %q is listed twice", name, pr.ID)
			}
			ids[pr.ID] = true
			if strings.TrimSpace(pr.APIKey) == "" {
				return fmt.Errorf("provider %q: profile %q has no apiKey", name, pr.ID)
			}
		}
	}
	return nil
}

func knownAPI(a API) bool {
	for _, k := range KnownAPIs {
		if a == k {
			return true
		}
	}
	return false
}

func apiList() string {
	s := make([]string, len(KnownAPIs))
	for i, a := range KnownAPIs {
		s[i] = string(a)
	}
	return strings.Join(s, ", ")
}

// Provider returns a provider's entry, or nil. f may be nil.
func (f *ModelsFile) Provider(name string) *ProviderConfig {
	if f == nil {
		return nil
	}
	return f.Providers[name]
}

// Model finds a model of the file and describes it, with the provider's
// settings and the defaults filled in.
func (f *ModelsFile) Model(provider, id string) (ModelInfo, bool) {
	p := f.Provider(provider)
	if p == nil {
		return ModelInfo{}, false
	}
	for _, m := range p.Models {
		if m.ID == id {
			return p.Info(provider, m), true
		}
	}
	return ModelInfo{}, false
}

// AddTo applies the file's modelOverrides to c's entries, then adds every
// model of the file, replacing entries of the same provider and id.
func (f *ModelsFile) AddTo(c *Catalog) {
	if f == nil {
		return
	}
	for name, p := range f.Providers {
		for id, o := range p.ModelOverrides {
			if m, ok := c.Lookup(name, id); ok {
				c.Add(o.Apply(m))
			}
		}
		for _, m := range p.Models {
			c.Add(p.Info(name, m))
		}
	}
}

// Info describes model m of this provider: the model's own fields, then the
// provider's, then the built-in defaults.
func (p *ProviderConfig) Info(provider string, m ModelConfig) ModelInfo {
	name := m.Name
	if name == "" {
		name = m.ID // as pi names it
	}
	info := ModelInfo{
		ID: m.ID, Name: name, Provider: provider,
		API: m.API, BaseURL: m.BaseURL,
		ContextWindow: m.ContextWindow, MaxTokens: m.MaxTokens,
		Reasoning: m.Reasoning, Input: append([]string(nil), m.Input...),
	}
	if info.API == "" {
		info.API = p.API
	}
	if info.API == "" {
		info.API = DefaultAPI(provider)
	}
	if info.BaseURL == "" {
		info.BaseURL = p.BaseURL
	}
	if info.BaseURL == "" {
		info.BaseURL = DefaultBaseURL(provider)
	}
	if info.ContextWindow == 0 {
		info.ContextWindow = DefaultContextWindow
	}
	if info.MaxTokens == 0 {
		info.MaxTokens = DefaultMaxTokens
	}
	if len(info.Input) == 0 {
		info.Input = []string{"text"}
	}
	if m.Cost != nil {
		info.Cost = *m.Cost
	}
	return info
}

// CompatLayers returns the compat records that apply to a model, in the
// order to apply them: the provider's, the model override's, then the
// model's. Entries are raw JSON; the wire package decodes each over its
// defaults.
func (p *ProviderConfig) CompatLayers(modelID string) []json.RawMessage {
	var out []json.RawMessage
	if len(p.Compat) > 0 {
		out = append(out, p.Compat)
	}
	if o, ok := p.ModelOverrides[modelID]; ok && len(o.Compat) > 0 {
		out = append(out, o.Compat)
	}
	for _, m := range p.Models {
		if m.ID == modelID && len(m.Compat) > 0 {
			out = append(out, m.Compat)
		}
	}
	return out
}

// ModelHeaders merges the provider's headers with a model override's and
// a model's (the most specific win). Values are unresolved specs.
func (p *ProviderConfig) ModelHeaders(modelID string) map[string]string {
	out := map[string]string{}
	for k, v := range p.Headers {
		out[k] = v
	}
	for k, v := range p.ModelOverrides[modelID].Headers {
		out[k] = v
	}
	for _, m := range p.Models {
		if m.ID == modelID {
			for k, v := range m.Headers {
				out[k] = v
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// KeyCommandTimeout bounds a "!command" key lookup when the context has no
// deadline of its own.
const KeyCommandTimeout = 10 * time.Second

// ResolveKey turns a key spec into a key, as pi does: "!command" runs the
// command with sh -c and takes its output, trimmed; otherwise the
// environment variable of that name, when it is set and not empty;
// otherwise the spec itself, taken as the key. lookup nil means
// os.LookupEnv. Errors never contain the key.
//
// A spec that reads as a variable's name (MY_API_KEY) but names no set
// variable is an error matching ErrKeyVariableUnset, rather than a key.
func ResolveKey(ctx context.Context, spec string, lookup func(string) (string, bool)) (string, error) {
	return resolveSpec(ctx, spec, lookup, true)
}

// resolveSpec is ResolveKey; names says whether a variable's name that is
// not set is an error (a key) or the value itself (a header).
func resolveSpec(ctx context.Context, spec string, lookup func(string) (string, bool), names bool) (string, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return "", nil
	}
	if cmdline, ok := strings.CutPrefix(spec, "!"); ok {
		return runKeyCommand(ctx, strings.TrimSpace(cmdline))
	}
	if lookup == nil {
		lookup = os.LookupEnv
	}
	if v, ok := lookup(spec); ok && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v), nil
	}
	if names && envName.MatchString(spec) {
		// A name like MY_API_KEY is a variable the user meant to set, not
		// a key: sending the name as the key only earns a 401 that says
		// nothing of why.
		return "", fmt.Errorf("%w: %s is not set (set it, or give the key itself or a !command)", ErrKeyVariableUnset, spec)
	}
	return spec, nil
}

// ErrKeyVariableUnset is matched (errors.Is) by the error of a key spec
// that names an environment variable that is not set.
var ErrKeyVariableUnset = errors.New("the apiKey names an environment variable")

// envName matches what reads as an environment variable's name rather
// than a key: capitals, digits and at least one underscore (keys have
// lower case letters or dashes, or no underscore).
var envName = lazyre.New(`^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$`)

// ResolveHeaders resolves every header value of h like a key spec.
func ResolveHeaders(ctx context.Context, h map[string]string, lookup func(string) (string, bool)) (map[string]string, error) {
	if len(h) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(h))
	for k, v := range h {
		r, err := resolveSpec(ctx, v, lookup, false)
		if err != nil {
			return nil, fmt.Errorf("header %s: %w", k, err)
		}
		out[k] = r
	}
	return out, nil
}

func runKeyCommand(ctx context.Context, cmdline string) (string, error) {
	if cmdline == "" {
		return "", errors.New(`apiKey "!" has no command after the "!"`)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, KeyCommandTimeout)
		defer cancel()
	}
	// Its own process tree: at the timeout the whole tree is killed, and
	// what it leaves behind (a background child, a daemon) is ended with
	// it.
	c := proc.CommandContext(ctx, "sh", "-c", cmdline)
	var stdout, stderr bytes.Buffer
	c.Cmd.Stdout = &stdout
	c.Cmd.Stderr = &stderr
	// A background child that keeps the pipes open must not hang us.
	c.Cmd.WaitDelay = time.Second
	name := commandName(cmdline)
	if err := c.Run(time.Second); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg != "" {
			msg = ": " + truncate(redact(firstLine(msg)), 200)
		}
		if ctx.Err() != nil {
			return "", fmt.Errorf("key command %q did not finish in time (%v)%s", name, ctx.Err(), msg)
		}
		return "", fmt.Errorf("key command %q failed (%v)%s", name, err, msg)
	}
	key := strings.TrimSpace(stdout.String())
	if key == "" {
		return "", fmt.Errorf("key command %q printed nothing; it must print the key on stdout", name)
	}
	return key, nil
}

// commandName is the first word of a command line: enough to say which
// command failed without echoing arguments that may hold secrets.
func commandName(cmdline string) string {
	f := strings.Fields(cmdline)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// SecretSpecs lists the key specs (apiKey of every provider and profile)
// and the header values of every provider, model and override, unresolved:
// what names, runs or holds a credential, for a caller to keep from tools.
func (f *ModelsFile) SecretSpecs() (keys, headers []string) {
	if f == nil {
		return nil, nil
	}
	for _, p := range f.Providers {
		if p == nil {
			continue
		}
		keys = append(keys, p.APIKey)
		for _, pr := range p.Profiles {
			keys = append(keys, pr.APIKey)
		}
		for _, v := range p.Headers {
			headers = append(headers, v)
		}
		for _, o := range p.ModelOverrides {
			for _, v := range o.Headers {
				headers = append(headers, v)
			}
		}
		for _, m := range p.Models {
			for _, v := range m.Headers {
				headers = append(headers, v)
			}
		}
	}
	return keys, headers
}
