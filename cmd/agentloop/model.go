package main

import (
	"context"
	"path/filepath"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/provider"
)

// resolveModel turns --model (and --script, --base-url, --models) into a
// ready model, what is known of it, and warnings to show.
func resolveModel(ctx context.Context, env *cliEnv, f *runFlags, home string, thinking llm.ThinkingLevel) (*provider.Resolved, error) {
	models := f.modelsFile
	if models == "" {
		models = filepath.Join(home, "models.json")
		if !fileExists(models) {
			models = ""
		}
	}
	r, err := provider.Resolve(ctx, f.model, &provider.Options{
		BaseURL:    f.baseURL,
		ModelsFile: models,
		Thinking:   thinking,
		Script:     f.script,
		LookupEnv:  env.lookupEnv,
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
	detail := pe.Message
	if detail == "" && pe.Err != nil {
		detail = pe.Err.Error()
	}
	if detail != "" {
		msg += " (" + pe.Provider + ": " + oneLine(detail, 300) + ")"
	}
	return msg
}
