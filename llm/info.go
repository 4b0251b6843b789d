package llm

// API names a wire format. They match pi's models.json "api" values.
type API string

// The wire formats.
const (
	APIAnthropicMessages  API = "anthropic-messages"
	APIOpenAICompletions  API = "openai-completions"
	APIOpenAIResponses    API = "openai-responses"
	APIGoogleGenerativeAI API = "google-generative-ai"
	APIFaux               API = "faux"
)

// ModelInfo is what agentloop knows about a model: where it is served, how
// big its windows are, and what it costs. The registry holds these.
type ModelInfo struct {
	ID       string `json:"id"`
	Name     string `json:"name,omitempty"`
	Provider string `json:"provider"`
	API      API    `json:"api"`
	BaseURL  string `json:"baseUrl,omitempty"`
	// ContextWindow is the input limit in tokens.
	ContextWindow int `json:"contextWindow"`
	// MaxTokens is the output limit in tokens.
	MaxTokens int    `json:"maxTokens"`
	Cost      Prices `json:"cost"`
	// Reasoning says the model supports thinking levels.
	Reasoning bool `json:"reasoning,omitempty"`
	// Input lists accepted input kinds: "text", "image".
	Input []string `json:"input,omitempty"`
}

// AcceptsImages reports whether the model takes image input.
func (m *ModelInfo) AcceptsImages() bool {
	for _, in := range m.Input {
		if in == "image" {
			return true
		}
	}
	return false
}
