package llm

// Tool-count limits of the wires: the most tool definitions one request
// may carry. OpenAI documents 128 functions for Chat Completions and the
// Responses API; Vertex AI documents 64 function declarations for Gemini.
// Anthropic documents no limit; 128 keeps such a request as bounded as
// the others (a run that finds more tools drops the earliest found).
const (
	MaxToolsOpenAI    = 128
	MaxToolsGoogle    = 64
	MaxToolsAnthropic = 128
	// MaxToolsDefault is the cap of an API not named above.
	MaxToolsDefault = 128
)

// MaxTools is the most tool definitions one request on api may carry.
func MaxTools(api API) int {
	switch api {
	case APIOpenAICompletions, APIOpenAIResponses:
		return MaxToolsOpenAI
	case APIGoogleGenerativeAI:
		return MaxToolsGoogle
	case APIAnthropicMessages:
		return MaxToolsAnthropic
	}
	return MaxToolsDefault
}

// DocumentedMaxTools is the tool-count limit api's provider documents and
// refuses a request over, or 0 where it documents none (Anthropic, and
// APIs not named above): MaxTools is a cap of ours there, not theirs.
func DocumentedMaxTools(api API) int {
	switch api {
	case APIOpenAICompletions, APIOpenAIResponses:
		return MaxToolsOpenAI
	case APIGoogleGenerativeAI:
		return MaxToolsGoogle
	}
	return 0
}
