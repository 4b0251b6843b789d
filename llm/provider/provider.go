package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/anthropic"
	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/llm/google"
	"github.com/agentloop/agentloop/llm/openai"
	"github.com/agentloop/agentloop/llm/wrap"
)

// DefaultOrder is the order in which providers are tried when no model is
// named: the first whose key is set wins.
var DefaultOrder = []string{"anthropic", "openai", "google", "openrouter"}

// DefaultModels is the model a provider uses when it is chosen without a
// model id: a capable general model at a middle price.
var DefaultModels = map[string]string{
	"anthropic":  "claude-sonnet-4-6",
	"openai":     "gpt-5.4",
	"google":     "gemini-2.5-pro",
	"openrouter": "anthropic/claude-sonnet-4.6",
	"groq":       "openai/gpt-oss-120b",
	"deepseek":   "deepseek-v4-flash",
}

// KeyVars lists, per provider, the environment variables that hold its API
// key; the first one set wins. (Anthropic OAuth tokens are not supported.)
var KeyVars = map[string][]string{
	"anthropic":   {"ANTHROPIC_API_KEY"},
	"openai":      {"OPENAI_API_KEY"},
	"google":      {"GEMINI_API_KEY", "GOOGLE_API_KEY"},
	"openrouter":  {"OPENROUTER_API_KEY"},
	"groq":        {"GROQ_API_KEY"},
	"deepseek":    {"DEEPSEEK_API_KEY"},
	"ollama":      {"OLLAMA_API_KEY"},
	"xai":         {"XAI_API_KEY"},
	"mistral":     {"MISTRAL_API_KEY"},
	"cerebras":    {"CEREBRAS_API_KEY"},
	"zai":         {"ZAI_API_KEY"},
	"moonshotai":  {"MOONSHOT_API_KEY"},
	"fireworks":   {"FIREWORKS_API_KEY"},
	"huggingface": {"HF_TOKEN"},
	"minimax":     {"MINIMAX_API_KEY"},
}

// BaseURLVars names, per provider, the environment variable that moves its
// API root (a proxy, a gateway, a local mock).
var BaseURLVars = map[string]string{
	"anthropic": "ANTHROPIC_BASE_URL",
	"openai":    "OPENAI_BASE_URL",
}

// keyless providers serve without a key at their default address.
var keyless = map[string]bool{"ollama": true}

// ErrNoProvider is returned (wrapped) when no model is named and no
// provider key is set.
var ErrNoProvider = errors.New("no model named and no provider key set")

// ErrWireMissing is returned (wrapped) when a model needs a wire format
// agentloop does not speak.
var ErrWireMissing = errors.New("wire format not available yet")

// Options tune Resolve. The zero value reads the environment and the
// default models file.
type Options struct {
	// BaseURL overrides the provider's API root (--base-url).
	BaseURL string
	// ModelsFile is the models file to read; "" means
	// $AGENTLOOP_HOME/models.json, which may be absent. An explicit path
	// must exist.
	ModelsFile string
	// Models is an already loaded models file; it wins over ModelsFile.
	Models *llm.ModelsFile
	// Thinking is the level the caller will ask for; it only produces a
	// warning when the model cannot think.
	Thinking llm.ThinkingLevel
	// Script is a faux script file, used for faux/... specs (and for an
	// empty spec).
	Script string
	// Profile picks an auth profile of the models file by id.
	Profile string
	// LookupEnv reads the environment; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// HTTPClient and IdleTimeout are passed to the wire package.
	HTTPClient  *http.Client
	IdleTimeout time.Duration
}

// Resolved is a model ready to stream.
type Resolved struct {
	Model llm.Model
	Info  llm.ModelInfo
	// KeySource says where the key came from, never the key itself: an
	// environment variable name, "models file", "profile <id>", or "" when
	// no key is sent.
	KeySource string
	// SecretVars name every environment variable the key or a header
	// value was read from, and Secrets are those values and the key:
	// what tools must not inherit.
	SecretVars, Secrets []string
	// Warnings are things the user should know (an unknown model got
	// default limits, a key is missing on a custom base URL, ...).
	Warnings []string
}

// Wire constructors, replaced in tests to see the configuration.
var (
	newAnthropic = func(c anthropic.Config) llm.Model { return anthropic.New(c) }
	newOpenAI    = func(c openai.Config) llm.Model { return openai.New(c) }
	newGoogle    = func(c google.Config) llm.Model { return google.New(c) }
	newResponses = func(c openai.Config) llm.Model { return openai.NewResponses(c) }
)

// Resolve turns a model spec ("provider/id"; "" for the default) into a
// ready model. See the package documentation for where each setting comes
// from. Errors say what to set or write instead, and never contain keys.
func Resolve(ctx context.Context, spec string, opts *Options) (*Resolved, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	spec = strings.TrimSpace(spec)
	if spec == "" && o.Script != "" {
		spec = "faux/script"
	}
	if p, _, _ := strings.Cut(spec, "/"); p == "faux" {
		return resolveFaux(spec, &o)
	}
	mf, mfPath, err := loadModelsFile(&o)
	if err != nil {
		return nil, err
	}
	r := &resolver{o: &o, mf: mf, mfPath: mfPath}
	if spec == "" {
		return r.resolveDefault(ctx)
	}
	provider, id, ok := strings.Cut(spec, "/")
	if !ok || provider == "" || id == "" {
		return nil, fmt.Errorf("model %q: write it as provider/model, like anthropic/claude-sonnet-4-6, ollama/qwen3 or faux/demo", spec)
	}
	return r.resolve(ctx, provider, id)
}

func resolveFaux(spec string, o *Options) (*Resolved, error) {
	_, name, _ := strings.Cut(spec, "/")
	var (
		m   *faux.Model
		err error
	)
	if o.Script != "" {
		m, err = faux.Load(o.Script)
	} else {
		m, err = faux.Builtin(name)
		if err != nil {
			err = fmt.Errorf("model %s: %w (built-in scripts: %s; or give a script file)", spec, err, strings.Join(faux.BuiltinNames(), ", "))
		}
	}
	if err != nil {
		return nil, err
	}
	return &Resolved{Model: m, Info: m.ModelInfo()}, nil
}

// loadModelsFile reads the models file the options name, or the default
// one if it exists.
func loadModelsFile(o *Options) (*llm.ModelsFile, string, error) {
	if o.Models != nil {
		return o.Models, o.Models.Path, nil
	}
	if o.ModelsFile != "" {
		f, err := llm.LoadModelsFile(o.ModelsFile)
		return f, o.ModelsFile, err
	}
	path, err := llm.DefaultModelsPath(func(k string) string { v, _ := o.LookupEnv(k); return v })
	if err != nil {
		return nil, "", nil
	}
	f, err := llm.LoadModelsFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, path, nil
	}
	return f, path, err
}

type resolver struct {
	o      *Options
	mf     *llm.ModelsFile
	mfPath string
}

func (r *resolver) env(name string) string {
	v, ok := r.o.LookupEnv(name)
	if !ok {
		return ""
	}
	return strings.TrimSpace(v)
}

// hasKey reports whether a provider has a key configured, without running
// key commands.
func (r *resolver) hasKey(provider string) bool {
	for _, v := range KeyVars[provider] {
		if r.env(v) != "" {
			return true
		}
	}
	if pc := r.mf.Provider(provider); pc != nil && (pc.APIKey != "" || len(pc.Profiles) > 0) {
		return true
	}
	return false
}

func (r *resolver) resolveDefault(ctx context.Context) (*Resolved, error) {
	for _, p := range DefaultOrder {
		if r.hasKey(p) {
			return r.resolve(ctx, p, DefaultModels[p])
		}
	}
	return nil, fmt.Errorf("%w: set one of ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY or OPENROUTER_API_KEY, name a model with --model provider/id, or try agentloop offline with --model faux/demo", ErrNoProvider)
}

func wireAvailable(api llm.API) bool {
	switch api {
	case llm.APIAnthropicMessages, llm.APIOpenAICompletions, llm.APIOpenAIResponses, llm.APIGoogleGenerativeAI:
		return true
	}
	return false
}

func (r *resolver) resolve(ctx context.Context, provider, id string) (*Resolved, error) {
	res := &Resolved{}
	pc := r.mf.Provider(provider)
	builtinBase := llm.DefaultBaseURL(provider)

	info, fromFile := r.mf.Model(provider, id)
	known := fromFile
	if !known {
		info, known = llm.LookupModel(provider, id)
		if known {
			info = r.mf.Override(info)
		}
	}
	if !known {
		// A modelOverrides entry for a model our registry lacks (pi's is
		// larger): the override describes it.
		info, known = r.mf.OverrideModel(provider, id)
	}
	if r.mf != nil {
		res.Warnings = append(res.Warnings, r.mf.Warnings...)
	}
	if !known {
		api := llm.DefaultAPI(provider)
		if pc != nil && pc.API != "" {
			api = pc.API
		}
		if api == "" && r.o.BaseURL != "" {
			api = llm.APIOpenAICompletions
		}
		if api == "" {
			return nil, r.unknownProvider(provider, id)
		}
		info = llm.ModelInfo{
			ID: id, Name: id, Provider: provider, API: api, BaseURL: builtinBase,
			ContextWindow: llm.DefaultContextWindow, MaxTokens: llm.DefaultMaxTokens,
			Reasoning: r.o.Thinking.Enabled(), Input: []string{"text"},
		}
		res.Warnings = append(res.Warnings, fmt.Sprintf(
			"model %s/%s is not in the registry: assuming a %d-token context window, %d output tokens, text input only and unknown prices; describe it in %s for accurate limits and costs",
			provider, id, llm.DefaultContextWindow, llm.DefaultMaxTokens, r.modelsFileName()))
	}
	if !wireAvailable(info.API) {
		return nil, fmt.Errorf("model %s/%s: %w: agentloop speaks anthropic-messages, openai-completions, openai-responses and google-generative-ai, not %s", provider, id, ErrWireMissing, info.API)
	}

	// Base URL: --base-url, then the models file, then the environment,
	// then the registry's.
	base := info.BaseURL
	fileBase := ""
	if fromFile {
		fileBase = info.BaseURL
	} else if pc != nil {
		fileBase = pc.BaseURL
	}
	envBase := r.env(BaseURLVars[provider])
	switch {
	case r.o.BaseURL != "":
		base = r.o.BaseURL
	case fileBase != "":
		base = fileBase
	case envBase != "":
		base = envBase
	}
	if base == "" {
		return nil, fmt.Errorf("model %s/%s: no base URL for provider %q; give --base-url or set \"baseUrl\" for it in %s", provider, id, provider, r.modelsFileName())
	}
	info.BaseURL = base

	key, source, err := r.key(ctx, provider, pc, res)
	if err != nil {
		return nil, err
	}
	res.KeySource = source
	if key != "" {
		res.Secrets = append(res.Secrets, key)
	}
	if key == "" && !keyless[provider] && (builtinBase != "" || len(KeyVars[provider]) > 0) {
		if base == builtinBase {
			return nil, r.missingKey(provider)
		}
		res.Warnings = append(res.Warnings, fmt.Sprintf("no API key for %s (%s); sending requests to %s without one", provider, r.keyHint(provider), base))
	}

	var headers map[string]string
	var compat []json.RawMessage
	var bearer bool
	if pc != nil {
		headers, err = llm.ResolveHeaders(ctx, pc.ModelHeaders(id), res.recording(r.o.LookupEnv))
		if err != nil {
			return nil, fmt.Errorf("%s: provider %q: %w", r.modelsFileName(), provider, err)
		}
		compat = pc.CompatLayers(id)
		bearer = pc.AuthHeader != nil && *pc.AuthHeader
	}
	res.Warnings = append(res.Warnings, compatWarnings(r.mf, provider, id, info.API)...)
	levels := pc.ThinkingLevels(id)
	if len(levels) > 0 && info.API != llm.APIOpenAICompletions {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%s: provider %q, model %q: thinkingLevelMap is applied on the openai-completions wire only, not %s", r.modelsFileName(), provider, id, info.API))
	}
	if r.o.Thinking.Enabled() && !info.Reasoning {
		res.Warnings = append(res.Warnings, fmt.Sprintf("model %s/%s does not support thinking; thinking level %s is ignored", provider, id, r.o.Thinking))
	}

	switch info.API {
	case llm.APIAnthropicMessages:
		cfg := anthropic.Config{Info: info, APIKey: key, BaseURL: base, HTTPClient: r.o.HTTPClient, IdleTimeout: r.o.IdleTimeout, Headers: headers,
			EagerToolInput: eagerToolInput(compat)}
		if bearer && key != "" {
			// Gateways that want the key as a bearer token too (pi's
			// authHeader); the OpenAI wire sends one anyway.
			cfg.Headers = withHeader(cfg.Headers, "Authorization", "Bearer "+key)
		}
		res.Model = newAnthropic(cfg)
	case llm.APIOpenAICompletions:
		c := openai.CompatFor(provider, base)
		for _, layer := range compat {
			if err := json.Unmarshal(layer, &c); err != nil {
				return nil, fmt.Errorf("%s: provider %q: compat: %v", r.modelsFileName(), provider, err)
			}
		}
		res.Warnings = append(res.Warnings, thinkingLevels(&c, levels, r.o.Thinking, provider+"/"+id)...)
		res.Model = newOpenAI(openai.Config{Info: info, APIKey: key, BaseURL: base, HTTPClient: r.o.HTTPClient, IdleTimeout: r.o.IdleTimeout, Headers: headers, Compat: &c})
	case llm.APIOpenAIResponses:
		res.Model = newResponses(openai.Config{Info: info, APIKey: key, BaseURL: base, HTTPClient: r.o.HTTPClient, IdleTimeout: r.o.IdleTimeout, Headers: headers})
	case llm.APIGoogleGenerativeAI:
		res.Model = newGoogle(google.Config{Info: info, APIKey: key, BaseURL: base, HTTPClient: r.o.HTTPClient, IdleTimeout: r.o.IdleTimeout, Headers: headers})
	}
	wc, err := wrapConfig(provider, info.API, compat)
	if err != nil {
		return nil, fmt.Errorf("%s: provider %q: compat.wrap: %v", r.modelsFileName(), provider, err)
	}
	res.Model = wrap.Wrap(res.Model, wc)
	res.Info = info
	return res, nil
}

// wrapConfig is the stream middleware of a provider: wrap.For's record,
// overridden field by field by a "wrap" object in the models file's compat
// layers, e.g. "compat": {"wrap": {"promote": true}} for a local model that
// writes its tool calls as text.
func wrapConfig(provider string, api llm.API, compat []json.RawMessage) (wrap.Config, error) {
	wc := wrap.For(provider, api)
	for _, layer := range compat {
		var c struct {
			Wrap json.RawMessage `json:"wrap"`
		}
		if err := json.Unmarshal(layer, &c); err != nil {
			return wc, err
		}
		if len(c.Wrap) > 0 {
			if err := json.Unmarshal(c.Wrap, &wc); err != nil {
				return wc, err
			}
		}
	}
	return wc, nil
}

func withHeader(h map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(h)+1)
	for hk, hv := range h {
		out[hk] = hv
	}
	out[k] = v
	return out
}

// key finds the provider's key: a chosen profile, the environment, the
// models file's apiKey, its first profile.
func (r *resolver) key(ctx context.Context, provider string, pc *llm.ProviderConfig, res *Resolved) (key, source string, err error) {
	resolve := func(spec, what string) (string, string, error) {
		k, err := llm.ResolveKey(ctx, spec, res.recording(r.o.LookupEnv))
		if err != nil {
			return "", "", fmt.Errorf("%s: provider %q: %s: %w", r.modelsFileName(), provider, what, err)
		}
		return k, what, nil
	}
	if r.o.Profile != "" {
		if pc != nil {
			for _, p := range pc.Profiles {
				if p.ID == r.o.Profile {
					return resolve(p.APIKey, "profile "+p.ID)
				}
			}
		}
		return "", "", fmt.Errorf("provider %q has no auth profile %q in %s", provider, r.o.Profile, r.modelsFileName())
	}
	for _, v := range KeyVars[provider] {
		if k := r.env(v); k != "" {
			res.SecretVars = append(res.SecretVars, v)
			return k, v, nil
		}
	}
	if pc != nil && pc.APIKey != "" {
		return resolve(pc.APIKey, "models file")
	}
	if pc != nil && len(pc.Profiles) > 0 {
		return resolve(pc.Profiles[0].APIKey, "profile "+pc.Profiles[0].ID)
	}
	return "", "", nil
}

// recording wraps lookup to note in SecretVars every variable it finds set.
func (res *Resolved) recording(lookup func(string) (string, bool)) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := lookup(name)
		if ok && strings.TrimSpace(v) != "" {
			res.SecretVars = append(res.SecretVars, name)
			res.Secrets = append(res.Secrets, strings.TrimSpace(v))
		}
		return v, ok
	}
}

func (r *resolver) keyHint(provider string) string {
	vars := KeyVars[provider]
	switch len(vars) {
	case 0:
		return fmt.Sprintf("set \"apiKey\" for %q in %s", provider, r.modelsFileName())
	case 1:
		return vars[0] + " is not set"
	}
	return strings.Join(vars, " and ") + " are not set"
}

func (r *resolver) missingKey(provider string) error {
	vars := KeyVars[provider]
	set := "set " + strings.Join(vars, " or ")
	if len(vars) == 0 {
		set = "set an apiKey"
	}
	return fmt.Errorf("no API key for %s: %s (or give \"apiKey\" for %q in %s); to try agentloop without a key, use --model faux/demo", provider, set, provider, r.modelsFileName())
}

func (r *resolver) unknownProvider(provider, id string) error {
	names := map[string]bool{"faux": true, "ollama": true}
	for _, p := range llm.BuiltinCatalog().Providers() {
		names[p] = true
	}
	if r.mf != nil {
		for p := range r.mf.Providers {
			names[p] = true
		}
	}
	list := make([]string, 0, len(names))
	for p := range names {
		list = append(list, p)
	}
	sort.Strings(list)
	return fmt.Errorf("model %s/%s: unknown provider %q; use one of %s, give --base-url for an OpenAI-compatible server, or add the provider to %s",
		provider, id, provider, strings.Join(list, ", "), r.modelsFileName())
}

func (r *resolver) modelsFileName() string {
	if r.mfPath != "" {
		return r.mfPath
	}
	return "$AGENTLOOP_HOME/models.json"
}
