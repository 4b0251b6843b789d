package main

import (
	"fmt"
	"strings"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
)

// resolveModel turns --model (and --script, --base-url, --models) into a
// model, what is known of it, and warnings to show.
func resolveModel(env *cliEnv, f *runFlags, home string) (llm.Model, llm.ModelInfo, []string, error) {
	spec := f.model
	if spec == "" && f.script != "" {
		spec = "faux/script"
	}
	provider, id, _ := strings.Cut(spec, "/")
	if provider == "faux" {
		var m *faux.Model
		var err error
		if f.script != "" {
			m, err = faux.Load(f.script)
		} else {
			m, err = faux.Builtin(id)
			if err != nil {
				err = usageError{fmt.Errorf("--model %s: %v (built-in scripts: %s; or give --script FILE)", spec, err, strings.Join(faux.BuiltinNames(), ", "))}
			}
		}
		if err != nil {
			return nil, llm.ModelInfo{}, nil, err
		}
		return m, m.ModelInfo(), nil, nil
	}
	if spec == "" {
		return nil, llm.ModelInfo{}, nil, usageError{fmt.Errorf("no model: real providers arrive with the providers issue; run offline with --model faux/demo")}
	}
	return nil, llm.ModelInfo{}, nil, usageError{fmt.Errorf("--model %s: provider %q is not available yet (Anthropic and OpenAI arrive with the providers issue); run offline with --model faux/demo", spec, provider)}
}

// userMessage is the one-line explanation of a provider failure.
func userMessage(pe *llm.ProviderError) string {
	return pe.Error()
}
