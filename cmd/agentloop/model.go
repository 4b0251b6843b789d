package main

import (
	"context"
	"path/filepath"
	"time"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/provider"
	"github.com/agentloop/agentloop/runner"
)

// resolveModel turns --model (and --script, --base-url, --models) into a
// ready model, what is known of it, and warnings to show.
func resolveModel(ctx context.Context, env *cliEnv, f *runFlags, home string, thinking llm.ThinkingLevel, idle time.Duration) (*provider.Resolved, error) {
	models := f.modelsFile
	if models == "" {
		models = filepath.Join(home, "models.json")
		if !fileExists(models) {
			models = ""
		}
	}
	r, err := provider.Resolve(ctx, f.model, &provider.Options{
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
	msg := pe.Reason.UserMessage()
	if detail := providerDetail(pe); detail != "" {
		msg += " (" + pe.Provider + ": " + oneLine(providerDetail(pe), 300) + ")"
	}
	return msg
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
