package main

import (
	"context"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/provider"
	"github.com/agentloop/agentloop/runner"
)

// resolveModel turns --model (and --script, --base-url, --models) into a
// ready model, what is known of it, and warnings to show.
func resolveModel(ctx context.Context, env *cliEnv, f *runFlags, home string, thinking llm.ThinkingLevel, idle time.Duration) (*provider.Resolved, error) {
	return resolveModelProfile(ctx, env, f, home, thinking, idle, "")
}

// modelsPath is the models file a run reads: --models, else
// $AGENTLOOP_HOME/models.json when it exists.
func modelsPath(f *runFlags, home string) string {
	if f.modelsFile != "" {
		return f.modelsFile
	}
	if p := filepath.Join(home, "models.json"); fileExists(p) {
		return p
	}
	return ""
}

// resolveModelProfile is resolveModel on a chosen auth profile of the
// models file ("" for the default key).
func resolveModelProfile(ctx context.Context, env *cliEnv, f *runFlags, home string, thinking llm.ThinkingLevel, idle time.Duration, profile string) (*provider.Resolved, error) {
	models := modelsPath(f, home)
	r, err := provider.Resolve(ctx, f.model, &provider.Options{
		Profile:     profile,
		BaseURL:     f.baseURL,
		ModelsFile:  models,
		Thinking:    thinking,
		Script:      f.script,
		LookupEnv:   env.lookupEnv,
		IdleTimeout: wireIdle(idle),
	})
	if err != nil {
		// Every resolution failure is a problem with the command line or
		// the configuration (unknown model, missing key, bad models file).
		return nil, usageError{err}
	}
	return r, nil
}

// userMessage is the one-line explanation of a provider failure, with the
// provider's own words after it.
func userMessage(pe *llm.ProviderError) string {
	return withProviderDetail(pe.Reason.UserMessage(), pe)
}

// withProviderDetail adds the provider's own words about a failure to msg,
// unless msg already quotes them or the provider said nothing.
func withProviderDetail(msg string, pe *llm.ProviderError) string {
	detail := providerDetail(pe)
	if detail == "" || strings.Contains(msg, pe.Provider+": ") {
		return msg
	}
	return msg + " (" + pe.Provider + ": " + oneLine(detail, 300) + ")"
}

// providerDetail is the provider's own words about a failure.
func providerDetail(pe *llm.ProviderError) string {
	if pe.Message != "" {
		return pe.Message
	}
	if pe.Err != nil {
		return pe.Err.Error()
	}
	return ""
}

// wireIdle is the idle timeout to give the wire packages, for which 0
// means their default: a disabled idle timeout becomes a very long one.
func wireIdle(d time.Duration) time.Duration {
	if d == 0 {
		return runner.MaxTimerDuration
	}
	return d
}

// authProfiles lists the auth profiles a run may rotate through: the one the
// resolved model uses first ("" for a key from the environment or the
// models file), then the provider's other profiles in the file's order.
func authProfiles(f *runFlags, home string, r *provider.Resolved) []string {
	path := modelsPath(f, home)
	if path == "" {
		return nil
	}
	mf, err := llm.LoadModelsFile(path)
	if err != nil {
		return nil
	}
	pc := mf.Provider(r.Info.Provider)
	if pc == nil || len(pc.Profiles) == 0 {
		return nil
	}
	cur, _ := strings.CutPrefix(r.KeySource, "profile ")
	if cur == r.KeySource {
		cur = ""
	}
	out := []string{cur}
	for _, p := range pc.Profiles {
		if p.ID != cur {
			out = append(out, p.ID)
		}
	}
	return out
}

// keepKeysFromTools adds to te what tools must not inherit: every variable
// the resolved model's key and headers were read from, those the models
// file's keys and headers of every provider and profile name (rotation and
// fallbacks use them), the providers' standard key variables, and all
// their values, so that a copy under another name is dropped too. Key
// commands other than the resolved model's are not run for this.
func keepKeysFromTools(env *cliEnv, f *runFlags, home string, resolved *provider.Resolved, te *toolEnvSettings) {
	deny := func(name string) {
		if v, ok := env.lookupEnv(name); ok && strings.TrimSpace(v) != "" {
			te.Deny = append(te.Deny, name)
			te.secrets = append(te.secrets, strings.TrimSpace(v))
		}
	}
	if resolved != nil {
		te.Deny = append(te.Deny, resolved.SecretVars...)
		te.secrets = append(te.secrets, resolved.Secrets...)
		if envVarName(resolved.KeySource) {
			te.Deny = append(te.Deny, resolved.KeySource)
		}
	}
	for _, vars := range provider.KeyVars {
		for _, v := range vars {
			deny(v)
		}
	}
	path := modelsPath(f, home)
	if path == "" {
		return
	}
	mf, err := llm.LoadModelsFile(path)
	if err != nil {
		return
	}
	keys, headers := mf.SecretSpecs()
	for _, spec := range keys {
		spec = strings.TrimSpace(spec)
		if spec == "" || strings.HasPrefix(spec, "!") {
			continue
		}
		if v, ok := env.lookupEnv(spec); ok && strings.TrimSpace(v) != "" {
			deny(spec)
		} else if !envVarName(spec) {
			te.secrets = append(te.secrets, spec) // the key itself
		}
	}
	for _, spec := range headers {
		if spec = strings.TrimSpace(spec); envVarName(spec) {
			deny(spec)
		}
	}
}
