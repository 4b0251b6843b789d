package provider

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/openai"
)

// piCompatKeys are compat keys of pi's models.json that agentloop reads
// but does not apply: a warning names them, so a setting never seems to
// work when it does not.
var piCompatKeys = []string{
	"requiresMistralToolIds", "requiresReasoningContentOnAssistantMessages", "supportsLongCacheRetention",
	"sendSessionAffinityHeaders", "sessionAffinityFormat", "sendSessionIdHeader", "chatTemplateKwargs",
	"chatTemplateArgs", "zaiToolStream", "supportsThinkingTokenBudget", "cacheControlFormat",
	"supportsOpenAIGrammarTools", "supportsCacheControlOnTools", "forceAdaptiveThinking", "allowEmptySignature",
	"supportsToolSearch", "supportsStrictTools", "stripReasoningContent", "supportsFinishReason",
	"deferredToolsMode", "supportsTemperature", "extraBody", "supportsToolReferences",
}

// appliedCompatKeys lists the compat keys the wire of api applies ("wrap"
// is the stream middleware's, on every wire).
func appliedCompatKeys(api llm.API) []string {
	keys := []string{"wrap"}
	switch api {
	case llm.APIOpenAICompletions:
		keys = append(keys, openai.Compat{}.Keys()...)
	case llm.APIAnthropicMessages:
		keys = append(keys, "supportsEagerToolInputStreaming")
	}
	return keys
}

// compatWarnings names the compat keys of a model's records (the
// provider's, its modelOverrides entry's, its own) that the model's wire
// does not apply: pi settings agentloop lacks, settings of another wire,
// or keys nobody knows.
func compatWarnings(mf *llm.ModelsFile, provider, id string, api llm.API) []string {
	if mf == nil {
		return nil
	}
	applied := appliedCompatKeys(api)
	var out []string
	for _, k := range mf.CompatKeys {
		if k.Provider != provider || (k.Model != "" && k.Model != id) || slices.Contains(applied, k.Key) {
			continue
		}
		switch {
		case slices.Contains(piCompatKeys, k.Key):
			out = append(out, fmt.Sprintf("%s: %s is a pi setting agentloop does not apply", mf.Path, k.Where()))
		case k.Key == "supportsEagerToolInputStreaming" || slices.Contains(openai.Compat{}.Keys(), k.Key):
			out = append(out, fmt.Sprintf("%s: %s does not apply to the %s wire this model uses", mf.Path, k.Where(), api))
		default:
			out = append(out, fmt.Sprintf("%s: %s is not a compat setting agentloop knows: it is ignored", mf.Path, k.Where()))
		}
	}
	return out
}

// eagerToolInput reads supportsEagerToolInputStreaming from the compat
// layers, the last one that sets it winning; nil when none does.
func eagerToolInput(layers []json.RawMessage) *bool {
	var v *bool
	for _, layer := range layers {
		var c struct {
			Eager *bool `json:"supportsEagerToolInputStreaming"`
		}
		if json.Unmarshal(layer, &c) == nil && c.Eager != nil {
			v = c.Eager
		}
	}
	return v
}

// thinkingLevels folds a model's thinkingLevelMap into the Chat
// Completions compat record's effort names: a level mapped to null is one
// the model does not support, sent without an effort, with a warning when
// it is the level asked for.
func thinkingLevels(c *openai.Compat, levels map[string]*string, asked llm.ThinkingLevel, model string) []string {
	var warnings []string
	for level, v := range levels {
		if c.ReasoningEffortMap == nil {
			c.ReasoningEffortMap = map[string]string{}
		}
		if v == nil {
			c.ReasoningEffortMap[level] = ""
			if level == string(asked) {
				warnings = append(warnings, fmt.Sprintf("model %s does not support thinking level %s (thinkingLevelMap): no effort is sent", model, asked))
			}
			continue
		}
		c.ReasoningEffortMap[level] = *v
	}
	return warnings
}
