package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// classifyCases are real error texts of the providers (bodies as they send
// them, or the message part), with the status they come with.
var classifyCases = []struct {
	name     string
	provider string
	status   int
	body     string
	want     Reason
}{
	// Anthropic
	{"anthropic overloaded 529", "anthropic", 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, ReasonOverloaded},
	{"anthropic overloaded in stream", "anthropic", 0, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011"}`, ReasonOverloaded},
	{"anthropic prompt too long", "anthropic", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 213462 tokens > 200000 maximum"}}`, ReasonContextOverflow},
	{"anthropic request too large 413", "anthropic", 413, `{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}`, ReasonContextOverflow},
	{"anthropic credit balance", "anthropic", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}}`, ReasonBilling},
	{"anthropic invalid key", "anthropic", 401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, ReasonAuth},
	{"anthropic permission", "anthropic", 403, `{"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission to use the specified resource."}}`, ReasonAuth},
	{"anthropic model 404", "anthropic", 404, `{"type":"error","error":{"type":"not_found_error","message":"model: claude-sonnet-9"}}`, ReasonModelNotFound},
	{"anthropic rate limit", "anthropic", 429, `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization of 50,000 input tokens per minute."}}`, ReasonRateLimit},
	{"anthropic api_error 500", "anthropic", 500, `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`, ReasonServer},
	{"anthropic api_error in stream", "anthropic", 0, `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`, ReasonServer},
	{"anthropic tool_use id pattern", "anthropic", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"messages.1.content.1.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"}}`, ReasonFormat},
	{"anthropic tool_result without tool_use", "anthropic", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"messages.2.content.0: unexpected tool_use_id found in tool_result blocks: toolu_01. Each tool_result block must have a corresponding tool_use block in the previous message."}}`, ReasonFormat},
	{"anthropic extra usage", "anthropic", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"You're out of extra usage. Add more at claude.ai/settings/usage and keep going."}}`, ReasonBilling},
	{"anthropic context window stop", "anthropic", 0, `model_context_window_exceeded`, ReasonContextOverflow},
	{"anthropic disabled org", "anthropic", 403, `{"type":"error","error":{"type":"permission_error","message":"This organization has been disabled."}}`, ReasonAuthPermanent},
	{"anthropic oauth not allowed", "anthropic", 403, `{"type":"error","error":{"type":"permission_error","message":"OAuth authentication is currently not allowed for this organization."}}`, ReasonAuthPermanent},
	{"anthropic 413 no body", "anthropic", 413, ``, ReasonContextOverflow},
	{"anthropic 529 no body", "anthropic", 529, ``, ReasonOverloaded},

	// OpenAI
	{"openai context length", "openai", 400, `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 145000 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, ReasonContextOverflow},
	{"openai context window", "openai", 400, `{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`, ReasonContextOverflow},
	{"openai insufficient quota 429", "openai", 429, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`, ReasonBilling},
	{"openai rate limit tpm", "openai", 429, `{"error":{"message":"Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 2s.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`, ReasonRateLimit},
	{"openai free tier rate limit mentions billing", "openai", 429, `{"error":{"message":"Rate limit reached for gpt-4o-mini in organization org-abc on requests per day (RPD): Limit 200, Used 200, Requested 1. Please try again in 7m12s. Visit https://platform.openai.com/account/rate-limits to learn more. You can increase your rate limit by adding a payment method to your account at https://platform.openai.com/account/billing.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`, ReasonRateLimit},
	{"openrouter free model limit", "openrouter", 429, `{"error":{"message":"Rate limit exceeded: free-models-per-day. Add 10 credits to unlock 1000 free model requests per day","code":429}}`, ReasonRateLimit},
	{"openai invalid key", "openai", 401, `{"error":{"message":"Incorrect API key provided: sk-proj-****abcd. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, ReasonAuth},
	{"openai model not found", "openai", 404, `{"error":{"message":"The model ` + "`gpt-9`" + ` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`, ReasonModelNotFound},
	{"openai server error", "openai", 500, `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`, ReasonServer},
	{"openai overloaded 503", "openai", 503, `{"error":{"message":"The engine is currently overloaded, please try again later","type":"server_error"}}`, ReasonOverloaded},
	{"openai bad gateway html", "openai", 502, `<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>cloudflare</center></body></html>`, ReasonServer},
	{"openai tool message order", "openai", 400, `{"error":{"message":"Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.","type":"invalid_request_error","param":"messages.[2].role","code":null}}`, ReasonFormat},
	{"openai deactivated account", "openai", 401, `{"error":{"message":"Your account has been deactivated. Please contact us through our help center.","type":"invalid_request_error","code":"account_deactivated"}}`, ReasonAuthPermanent},
	{"openai unsupported parameter", "openai", 400, `{"error":{"message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.","type":"invalid_request_error","param":"max_tokens","code":"unsupported_parameter"}}`, ReasonFormat},
	{"openai timeout 408", "openai", 408, `{"error":{"message":"Request timed out.","type":"timeout"}}`, ReasonTimeout},
	{"openai gateway timeout", "openai", 504, `<html><head><title>504 Gateway Time-out</title></head><body></body></html>`, ReasonTimeout},

	// Gemini
	{"gemini resource exhausted", "google", 429, `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}`, ReasonRateLimit},
	{"gemini quota in array", "google", 0, `[{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED"}}]`, ReasonBilling},
	{"gemini overloaded 503", "google", 503, `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`, ReasonOverloaded},
	{"gemini token count", "google", 400, `{"error":{"code":400,"message":"The input token count (1196265) exceeds the maximum number of tokens allowed (1048575).","status":"INVALID_ARGUMENT"}}`, ReasonContextOverflow},
	{"gemini bad key", "google", 400, `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}]}}`, ReasonAuth},
	{"gemini permission denied", "google", 403, `{"error":{"code":403,"message":"Permission denied: Consumer 'api_key:x' has been suspended.","status":"PERMISSION_DENIED"}}`, ReasonAuthPermanent},
	{"gemini model not found", "google", 404, `{"error":{"code":404,"message":"models/gemini-9-pro is not found for API version v1beta, or is not supported for generateContent.","status":"NOT_FOUND"}}`, ReasonModelNotFound},
	{"gemini internal", "google", 500, `{"error":{"code":500,"message":"An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting","status":"INTERNAL"}}`, ReasonServer},
	{"gemini invalid argument", "google", 400, `{"error":{"code":400,"message":"* GenerateContentRequest.contents[2].parts: contents.parts must not be empty.","status":"INVALID_ARGUMENT"}}`, ReasonFormat},
	{"gemini deadline", "google", 504, `{"error":{"code":504,"message":"Deadline expired before operation could complete.","status":"DEADLINE_EXCEEDED"}}`, ReasonTimeout},
	{"gemini high demand", "google", 0, `This model is currently experiencing high demand. Please try again later.`, ReasonOverloaded},

	// Bedrock
	{"bedrock throttling", "amazon-bedrock", 400, `ThrottlingException: Too many concurrent requests`, ReasonRateLimit},
	{"bedrock too many tokens throttle", "amazon-bedrock", 429, `ThrottlingException: Too many tokens, please wait before trying again.`, ReasonRateLimit},
	{"bedrock input too long", "amazon-bedrock", 400, `ValidationException: Input is too long for requested model.`, ReasonContextOverflow},
	{"bedrock message only", "amazon-bedrock", 400, `{"message":"The input is too long for the model"}`, ReasonContextOverflow},
	{"bedrock model not ready", "amazon-bedrock", 0, `ModelNotReadyException: model is not ready`, ReasonOverloaded},
	{"bedrock access denied", "amazon-bedrock", 403, `{"message":"You don't have access to the model with the specified model ID."}`, ReasonAuth},
	{"bedrock service unavailable", "amazon-bedrock", 503, `{"message":"ServiceUnavailableException: The service is temporarily unable to handle the request."}`, ReasonServer},
	{"bedrock validation", "amazon-bedrock", 400, `{"message":"ValidationException: The provided model identifier is invalid."}`, ReasonFormat},

	// OpenRouter
	{"openrouter key limit", "openrouter", 403, `{"error":{"message":"Key limit exceeded (monthly limit)","code":403}}`, ReasonBilling},
	{"openrouter credits", "openrouter", 402, `{"error":{"message":"This request requires more credits, or fewer max_tokens. You requested up to 64000 tokens, but can only afford 1234.","code":402}}`, ReasonBilling},
	{"openrouter no endpoints", "openrouter", 404, `{"error":{"message":"No endpoints found for deepseek/deepseek-r1:free.","code":404}}`, ReasonModelNotFound},
	{"openrouter provider error", "openrouter", 0, `{"error":{"message":"Provider returned error","code":502,"metadata":{"raw":"upstream connect error","provider_name":"Together"}}}`, ReasonNetwork},
	{"openrouter provider error plain", "openrouter", 0, `Provider returned error`, ReasonServer},
	{"openrouter context", "openrouter", 400, `{"error":{"message":"This endpoint's maximum context length is 131072 tokens. However, you requested about 200000 tokens (190000 of text input, 10000 in the output). Please reduce the length of either one.","code":400}}`, ReasonContextOverflow},
	{"openrouter invalid model id", "openrouter", 400, `{"error":{"message":"foo/bar is not a valid model ID","code":400}}`, ReasonModelNotFound},
	{"openrouter no auth", "openrouter", 401, `{"error":{"message":"No auth credentials found","code":401}}`, ReasonAuth},
	{"openrouter upstream rate limit", "openrouter", 429, `{"error":{"message":"Provider returned error","code":429,"metadata":{"raw":"qwen/qwen3 is temporarily rate-limited upstream. Please retry shortly.","provider_name":"Chutes"}}}`, ReasonRateLimit},
	{"openrouter comment 200 body", "openrouter", 0, `{"error":{"message":"Internal Server Error","code":500}}`, ReasonServer},

	// Groq
	{"groq rate limit", "groq", 429, `{"error":{"message":"Rate limit reached for model ` + "`llama-3.3-70b-versatile`" + ` in organization ` + "`org_1`" + ` service tier ` + "`on_demand`" + ` on tokens per minute (TPM): Limit 6000, Used 5000, Requested 2000. Please try again in 10s.","type":"tokens","code":"rate_limit_exceeded"}}`, ReasonRateLimit},
	{"groq context", "groq", 400, `{"error":{"message":"Please reduce the length of the messages or completion.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, ReasonContextOverflow},
	{"groq decommissioned", "groq", 400, `{"error":{"message":"The model ` + "`mixtral-8x7b-32768`" + ` has been decommissioned and is no longer supported.","type":"invalid_request_error","code":"model_decommissioned"}}`, ReasonModelNotFound},
	{"groq invalid key", "groq", 401, `{"error":{"message":"Invalid API Key","type":"invalid_request_error","code":"invalid_api_key"}}`, ReasonAuth},
	{"groq tool use failed", "groq", 400, `{"error":{"message":"Failed to call a function. Please adjust your prompt.","type":"invalid_request_error","code":"tool_use_failed"}}`, ReasonFormat},

	// DeepSeek
	{"deepseek insufficient balance", "deepseek", 402, `{"error":{"message":"Insufficient Balance","type":"unknown_error","param":null,"code":"invalid_request_error"}}`, ReasonBilling},
	{"deepseek context", "deepseek", 400, `{"error":{"message":"This model's maximum context length is 65536 tokens. However, you requested 70000 tokens (60000 in the messages, 10000 in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}`, ReasonContextOverflow},
	{"deepseek auth fails", "deepseek", 401, `{"error":{"message":"Authentication Fails (no such user)","type":"authentication_error","param":null,"code":"invalid_request_error"}}`, ReasonAuth},
	{"deepseek server busy", "deepseek", 503, `{"error":{"message":"Server overloaded, please try again later.","type":"server_error"}}`, ReasonOverloaded},
	{"deepseek reasoning content", "deepseek", 400, `{"error":{"message":"Missing ` + "`reasoning_content`" + ` field in the assistant message at message index 2.","type":"invalid_request_error","code":"invalid_request_error"}}`, ReasonFormat},

	// Ollama, llama.cpp, vLLM, LM Studio
	{"ollama model not found", "ollama", 404, `{"error":"model \"qwen3:32b\" not found, try pulling it first"}`, ReasonModelNotFound},
	{"ollama prompt too long", "ollama", 400, `{"error":"prompt too long; exceeded max context length by 2048 tokens"}`, ReasonContextOverflow},
	{"llamacpp context size", "llamacpp", 400, `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}`, ReasonContextOverflow},
	{"vllm context", "vllm", 400, `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens in the messages, Please reduce the length of the messages.","type":"BadRequestError","param":null,"code":400}`, ReasonContextOverflow},
	{"vllm model does not exist", "vllm", 404, `{"object":"error","message":"The model ` + "`llama`" + ` does not exist.","type":"NotFoundError","param":null,"code":404}`, ReasonModelNotFound},
	{"lmstudio context", "lmstudio", 400, `{"error":"The number of tokens to keep from the initial prompt is greater than the context length."}`, ReasonContextOverflow},
	{"fastapi detail", "local", 422, `{"detail":[{"loc":["body","messages"],"msg":"Field required","type":"missing"}]}`, ReasonFormat},

	// Others: Mistral, xAI, Kimi, z.ai, MiniMax, proxies
	{"mistral context", "mistral", 400, `{"object":"error","message":"Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length","type":"invalid_request_error","code":null}`, ReasonContextOverflow},
	{"xai prompt length", "xai", 400, `This model's maximum prompt length is 131072 but the request contains 537812 tokens.`, ReasonContextOverflow},
	{"kimi token limit", "moonshotai", 400, `Invalid request: Your request exceeded model token limit: 262144 (requested: 291351)`, ReasonContextOverflow},
	{"zai plan", "zai", 0, `{"code":1311,"message":"The model you requested is not available in your current plan"}`, ReasonBilling},
	{"zai credentials", "zai", 0, `{"code":1113,"message":"invalid api endpoint or credentials"}`, ReasonAuth},
	{"minimax context", "minimax", 400, `invalid params, context window exceeds limit`, ReasonContextOverflow},
	{"venice balance", "venice", 402, `Insufficient USD or Diem balance to complete request. Visit https://venice.ai/settings/api to add credits.`, ReasonBilling},
	{"spend limit 402 resets", "zenmux", 402, `Monthly spend limit reached. Please visit your billing settings.`, ReasonRateLimit},
	{"cloudflare 521 page", "openai", 521, `<!DOCTYPE html><html><head><title>Web server is down | example.com | Cloudflare</title></head><body>down</body></html>`, ReasonServer},
	{"html 200 body in stream", "openai", 0, `<!DOCTYPE html><html><head><title>Just a moment...</title></head><body>checking your browser</body></html>`, ReasonUnknown},
	{"chinese proxy overflow", "proxy", 400, `错误：上下文过长，请减少输入`, ReasonContextOverflow},
	{"proxy 407", "openai", 407, `Proxy Authentication Required`, ReasonNetwork},

	// Transport and runtime texts
	{"econnrefused", "", 0, `connect ECONNREFUSED 127.0.0.1:11434`, ReasonNetwork},
	{"go connection refused", "", 0, `Post "http://127.0.0.1:11434/v1/chat/completions": dial tcp 127.0.0.1:11434: connect: connection refused`, ReasonNetwork},
	{"go no such host", "", 0, `dial tcp: lookup api.example.com: no such host`, ReasonNetwork},
	{"go unexpected eof", "", 0, `unexpected EOF`, ReasonNetwork},
	{"socket hang up", "", 0, `socket hang up`, ReasonNetwork},
	{"etimedout", "", 0, `Error: connect ETIMEDOUT 10.0.0.1:443`, ReasonTimeout},
	{"go deadline", "", 0, `context deadline exceeded (Client.Timeout exceeded while awaiting headers)`, ReasonTimeout},
	{"stream ended without chunks", "", 0, `request ended without sending any chunks`, ReasonTimeout},
	{"leading 429 text", "", 0, `429 Too Many Requests: Too many requests were sent in a given timeframe.`, ReasonRateLimit},
	{"leading HTTP 410 no body", "", 0, `HTTP 410: No body`, ReasonServer},
	{"prose with 402 is nothing", "", 0, `The building at 402 Main Street`, ReasonUnknown},
	{"empty text", "", 0, ``, ReasonUnknown},
	{"unknown 418", "", 418, `I'm a teapot`, ReasonFormat},
	{"our own precheck", "", 0, `Context overflow: prompt too large for the model (precheck).`, ReasonContextOverflow},
	{"conversation about overflow", "", 0, `We're debugging context overflow issues`, ReasonUnknown},
	{"expired key", "", 0, `Your API key has expired. Please renew it.`, ReasonAuth},
	{"payment_required code", "", 0, `{"error":{"code":"payment_required","message":"Add a payment method to continue."}}`, ReasonBilling},
	{"duplicate tool ids", "anthropic", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"messages.3: tool_use ids must be unique"}}`, ReasonFormat},
	{"undici socket", "", 0, `TypeError: fetch failed (cause: UND_ERR_SOCKET other side closed)`, ReasonNetwork},
	{"gemini quota metric", "google", 429, `{"error":{"code":429,"message":"Quota exceeded for quota metric 'Generate Content API requests per minute' and limit 'GenerateContent request limit per minute' of service 'generativelanguage.googleapis.com'","status":"RESOURCE_EXHAUSTED"}}`, ReasonRateLimit},
}

func TestClassifyRealTexts(t *testing.T) {
	if len(classifyCases) < 80 {
		t.Fatalf("only %d real error texts; the issue asks for at least 80", len(classifyCases))
	}
	for _, c := range classifyCases {
		t.Run(c.name, func(t *testing.T) {
			if got := ClassifyFor(c.provider, c.status, c.body); got != c.want {
				t.Errorf("ClassifyFor(%q, %d, %q) = %s, want %s", c.provider, c.status, c.body, got, c.want)
			}
			e := NewHTTPError(c.provider, "m", c.status, nil, []byte(c.body))
			if e.Reason != c.want {
				t.Errorf("NewHTTPError(...).Reason = %s, want %s", e.Reason, c.want)
			}
			if c.body != "" && e.Message == "" {
				t.Errorf("NewHTTPError(...).Message is empty for body %q", c.body)
			}
		})
	}
}

func TestNewHTTPErrorMessage(t *testing.T) {
	cases := []struct {
		name, body string
		status     int
		want       string
	}{
		{"anthropic", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, 529, "overloaded_error: Overloaded"},
		{"openai", `{"error":{"message":"Rate limit reached for gpt-4o.","type":"requests","code":"rate_limit_exceeded"}}`, 429, "requests: Rate limit reached for gpt-4o."},
		{"gemini", `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}`, 429, "RESOURCE_EXHAUSTED: Resource has been exhausted (e.g. check quota)."},
		{"ollama", `{"error":"model \"x\" not found, try pulling it first"}`, 404, `model "x" not found, try pulling it first`},
		{"plain", "upstream went away", 502, "upstream went away"},
		{"empty", "", 503, "503 Service Unavailable (no body)"},
		{"html", `<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>`, 502, "the provider answered with an HTML page instead of an API error: 502 Bad Gateway"},
		{"nested json in message", `{"error":{"message":"{\"error\":{\"message\":\"400 Incorrect role information\"}}"}}`, 400, "400 Incorrect role information"},
		{"openrouter raw", `{"error":{"message":"Provider returned error","code":400,"metadata":{"raw":"{\"error\":{\"message\":\"prompt is too long\"}}"}}}`, 400, "Provider returned error: prompt is too long"},
		{"fastapi", `{"detail":[{"msg":"Field required"},{"msg":"Input should be a valid string"}]}`, 422, "Field required; Input should be a valid string"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := NewHTTPError("p", "m", c.status, nil, []byte(c.body))
			if e.Message != c.want {
				t.Errorf("Message = %q, want %q", e.Message, c.want)
			}
			if e.Status != c.status || e.Provider != "p" || e.Model != "m" {
				t.Errorf("got status %d provider %q model %q", e.Status, e.Provider, e.Model)
			}
		})
	}
}

func TestNewHTTPErrorStatusFromStreamBody(t *testing.T) {
	e := NewStreamError("google", "gemini-2.5-pro", `{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`)
	if e.Status != 503 || e.Reason != ReasonOverloaded {
		t.Errorf("got status %d reason %s, want 503 overloaded", e.Status, e.Reason)
	}
}

func TestNewHTTPErrorRedactsKeys(t *testing.T) {
	keys := []string{"sk-proj-abcdefghijklmnop1234", "sk-ant-api03-abcdefghijkl", "AIzaSyA1234567890abcdefghijklmnopq", "gsk_abcdefghijklmnop", "Bearer abcdefghijklmnop"}
	for _, key := range keys {
		body := `{"error":{"message":"Incorrect API key provided: ` + key + `.","code":"invalid_api_key"}}`
		e := NewHTTPError("openai", "gpt-5", 401, nil, []byte(body))
		for _, s := range []string{e.Message, e.Body, e.Error(), ErrorText(e)} {
			if strings.Contains(s, key) || strings.Contains(s, key[len(key)-8:]) {
				t.Errorf("key %q leaks: %q", key, s)
			}
		}
		if e.Reason != ReasonAuth {
			t.Errorf("reason %s, want auth", e.Reason)
		}
	}
	ne := NetworkError("openai", "gpt-5", errors.New(`Post "https://x/v1?key=AIzaSyA1234567890abcdefghijklmnopq": EOF`))
	if strings.Contains(ne.Message, "AIzaSyA1234567890") {
		t.Errorf("key leaks from a network error: %q", ne.Message)
	}
}

// A key that straddles the point where the message and body are cut is
// redacted whole, not left as a prefix too short to recognise.
func TestNewHTTPErrorRedactsKeyAtTheCut(t *testing.T) {
	key := "AIzaSyA1234567890abcdefghijklmnopq"
	for _, limit := range []int{maxMessageKept, maxBodyKept} {
		for _, back := range []int{4, 10, 16, 20} {
			pad := strings.Repeat("x", limit-back-len(`{"error":{"message":"`)-1) + " "
			body := `{"error":{"message":"` + pad + key + `"}}`
			e := NewHTTPError("google", "gemini", 400, nil, []byte(body))
			ne := NetworkError("google", "gemini", errors.New(pad+key))
			for _, s := range []string{e.Message, e.Body, ne.Message} {
				if strings.Contains(s, "AIza") {
					t.Errorf("limit %d, key cut %d bytes in: a part of it leaks: …%q", limit, back, s[max(0, len(s)-40):])
				}
			}
		}
	}
}

func TestNewHTTPErrorTruncatesBody(t *testing.T) {
	body := `{"error":{"message":"` + strings.Repeat("é", 5000) + `"}}`
	e := NewHTTPError("p", "m", 500, nil, []byte(body))
	if len(e.Body) > maxBodyKept+len("…") || len(e.Message) > maxMessageKept+len("…") {
		t.Errorf("body %d bytes, message %d bytes: not truncated", len(e.Body), len(e.Message))
	}
	if !strings.HasSuffix(e.Body, "…") || !strings.HasSuffix(e.Message, "…") {
		t.Errorf("truncation not marked")
	}
	for _, s := range []string{e.Body, e.Message} {
		if !isValidUTF8(s) {
			t.Errorf("truncation split a rune")
		}
	}
}

func isValidUTF8(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		header http.Header
		body   string
		want   time.Duration
	}{
		{"seconds", http.Header{"Retry-After": {"7"}}, "", 7 * time.Second},
		{"milliseconds win", http.Header{"Retry-After": {"7"}, "Retry-After-Ms": {"1500"}}, "", 1500 * time.Millisecond},
		{"http date", http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, "", 90 * time.Second},
		{"past date", http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, "", 0},
		{"garbage", http.Header{"Retry-After": {"soon"}}, "", 0},
		{"none", nil, "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ParseRetryAfter(c.header, now); got != c.want {
				t.Errorf("ParseRetryAfter = %v, want %v", got, c.want)
			}
		})
	}
}

func TestRetryAfterFromBody(t *testing.T) {
	cases := []struct {
		name, body string
		status     int
		want       time.Duration
	}{
		{"gemini retry info", `{"error":{"code":429,"message":"Quota exceeded.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"32s"}]}}`, 429, 32 * time.Second},
		{"openai try again", `{"error":{"message":"Rate limit reached. Please try again in 1.5s.","code":"rate_limit_exceeded"}}`, 429, 1500 * time.Millisecond},
		{"ms", `{"error":{"message":"Rate limit reached. Please try again in 120ms."}}`, 429, 120 * time.Millisecond},
		{"minutes and seconds", `{"error":{"message":"Rate limit reached on requests per day (RPD). Please try again in 7m12s. Visit the docs."}}`, 429, 7*time.Minute + 12*time.Second},
		{"gemini retry in", `{"error":{"code":429,"message":"Quota exceeded. Please retry in 38.170064862s.","status":"RESOURCE_EXHAUSTED"}}`, 429, 38170064862 * time.Nanosecond},
		{"anthropic seconds", `{"type":"error","error":{"type":"rate_limit_error","message":"Rate limit reached. Try again in 30 seconds."}}`, 429, 30 * time.Second},
		{"not for auth", `{"error":{"message":"Invalid key. Try again in 5 seconds."}}`, 401, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := NewHTTPError("p", "m", c.status, nil, []byte(c.body)).RetryAfter; got != c.want {
				t.Errorf("RetryAfter = %v, want %v", got, c.want)
			}
		})
	}
	// The header wins over the body.
	e := NewHTTPError("p", "m", 429, http.Header{"Retry-After": {"3"}}, []byte(`{"error":{"message":"try again in 20s"}}`))
	if e.RetryAfter != 3*time.Second {
		t.Errorf("header Retry-After not preferred: %v", e.RetryAfter)
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestNetworkAndClassifyError(t *testing.T) {
	cases := []struct {
		name    string
		err     error
		network Reason // NetworkError's reason
		any     Reason // ClassifyError's reason
	}{
		{"deadline", context.DeadlineExceeded, ReasonTimeout, ReasonTimeout},
		{"wrapped deadline", fmt.Errorf("post: %w", context.DeadlineExceeded), ReasonTimeout, ReasonTimeout},
		{"os deadline", os.ErrDeadlineExceeded, ReasonTimeout, ReasonTimeout},
		{"net timeout", &net.OpError{Op: "read", Net: "tcp", Err: timeoutErr{}}, ReasonTimeout, ReasonTimeout},
		{"refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, ReasonNetwork, ReasonNetwork},
		{"dns", &net.DNSError{Err: "no such host", Name: "api.example.com", IsNotFound: true}, ReasonNetwork, ReasonNetwork},
		{"eof", io.ErrUnexpectedEOF, ReasonNetwork, ReasonNetwork},
		{"cancelled", context.Canceled, ReasonNetwork, ""},
		{"provider error in chain", fmt.Errorf("attempt 2: %w", &ProviderError{Reason: ReasonBilling}), ReasonNetwork, ReasonBilling},
		{"plain text", errors.New("429 Too Many Requests"), ReasonNetwork, ReasonRateLimit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := NetworkError("p", "m", c.err)
			if e.Reason != c.network {
				t.Errorf("NetworkError reason = %s, want %s", e.Reason, c.network)
			}
			if !errors.Is(e, c.err) {
				t.Errorf("NetworkError does not wrap its cause")
			}
			if got := ClassifyError(c.err); got != c.any {
				t.Errorf("ClassifyError = %q, want %q", got, c.any)
			}
		})
	}
	if ClassifyError(nil) != "" {
		t.Errorf("ClassifyError(nil) is not empty")
	}
	if !errors.Is(NetworkError("p", "m", context.Canceled), context.Canceled) {
		t.Errorf("a cancelled context is not recognisable with errors.Is")
	}
}

func TestOverflowTokens(t *testing.T) {
	cases := []struct {
		text string
		want int
		ok   bool
	}{
		{"prompt is too long: 277403 tokens > 200000 maximum", 277403, true},
		{"This model's maximum context length is 128000 tokens. However, your messages resulted in 145000 tokens.", 145000, true},
		{"Context window exceeded: requested 12000 tokens", 12000, true},
		{"you requested about 1,234,567 tokens", 1234567, true},
		{"The input token count (1196265) exceeds the maximum number of tokens allowed (1048575).", 1196265, true},
		{"Your request exceeded model token limit: 262144 (requested: 291351)", 291351, true},
		{"rate limit exceeded", 0, false},
	}
	for _, c := range cases {
		n, ok := OverflowTokens(c.text)
		if n != c.want || ok != c.ok {
			t.Errorf("OverflowTokens(%q) = %d, %v; want %d, %v", c.text, n, ok, c.want, c.ok)
		}
	}
}

func TestReasonTransientAndMessages(t *testing.T) {
	all := []Reason{ReasonAuth, ReasonAuthPermanent, ReasonBilling, ReasonRateLimit, ReasonOverloaded, ReasonTimeout,
		ReasonContextOverflow, ReasonFormat, ReasonModelNotFound, ReasonServer, ReasonNetwork, ReasonUnknown}
	transient := map[Reason]bool{ReasonOverloaded: true, ReasonServer: true, ReasonNetwork: true, ReasonTimeout: true, ReasonRateLimit: true}
	seen := map[string]Reason{}
	for _, r := range all {
		if r.Transient() != transient[r] {
			t.Errorf("%s.Transient() = %v", r, r.Transient())
		}
		msg := r.UserMessage()
		if msg == "" || strings.Contains(msg, "\n") {
			t.Errorf("%s.UserMessage() = %q, want one non-empty line", r, msg)
		}
		if other, dup := seen[msg]; dup {
			t.Errorf("%s and %s share the user message %q", r, other, msg)
		}
		seen[msg] = r
	}
}

func TestErrorText(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"overflow", NewHTTPError("anthropic", "m", 400, nil, []byte(`{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 1 tokens > 0 maximum"}}`)), ReasonContextOverflow.UserMessage()},
		{"auth", NewHTTPError("openai", "m", 401, nil, []byte(`{"error":{"message":"bad key"}}`)), ReasonAuth.UserMessage()},
		{"server keeps words", NewHTTPError("openai", "m", 500, nil, []byte(`{"error":{"message":"boom"}}`)), ReasonServer.UserMessage() + " The provider said: boom"},
		{"network error value", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, ReasonNetwork.UserMessage()},
		{"deadline", context.DeadlineExceeded, ReasonTimeout.UserMessage()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ErrorText(c.err); got != c.want {
				t.Errorf("ErrorText = %q, want %q", got, c.want)
			}
		})
	}
}

func ExampleNewHTTPError() {
	body := []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	err := NewHTTPError("anthropic", "claude-sonnet-4-5", 529, http.Header{"Retry-After": {"2"}}, body)
	fmt.Println(err)
	fmt.Println(err.Reason, err.Reason.Transient(), err.RetryAfter)
	fmt.Println(err.Reason.UserMessage())
	// Output:
	// anthropic/claude-sonnet-4-5: overloaded (HTTP 529): overloaded_error: Overloaded
	// overloaded true 2s
	// The provider is overloaded right now. Try again shortly or pick another model.
}

func ExampleClassifyText() {
	fmt.Println(ClassifyText("429 Too Many Requests: slow down"))
	fmt.Println(ClassifyText(`{"error":{"code":400,"message":"The input token count (1196265) exceeds the maximum number of tokens allowed (1048575).","status":"INVALID_ARGUMENT"}}`))
	// Output:
	// rate_limit
	// context_overflow
}

func BenchmarkClassifyFor(b *testing.B) {
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		c := classifyCases[i%len(classifyCases)]
		_ = ClassifyFor(c.provider, c.status, c.body)
	}
}

func BenchmarkNewHTTPError(b *testing.B) {
	body := []byte(`{"error":{"message":"Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 2s.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`)
	h := http.Header{"Retry-After": {"2"}}
	b.ReportAllocs()
	for b.Loop() {
		_ = NewHTTPError("openai", "gpt-4o", 429, h, body)
	}
}

// TestClassifySeam pins the status-only answers the wire packages rely on
// when a body says nothing recognisable.
func TestClassifySeam(t *testing.T) {
	cases := []struct {
		status int
		want   Reason
	}{
		{401, ReasonAuth}, {403, ReasonAuth}, {402, ReasonBilling}, {404, ReasonModelNotFound},
		{408, ReasonTimeout}, {413, ReasonContextOverflow}, {422, ReasonFormat}, {400, ReasonFormat},
		{429, ReasonRateLimit}, {500, ReasonServer}, {502, ReasonServer}, {503, ReasonServer},
		{504, ReasonTimeout}, {529, ReasonOverloaded}, {0, ReasonUnknown}, {200, ReasonUnknown},
	}
	for _, c := range cases {
		if got := Classify(c.status, "something went wrong"); got != c.want {
			t.Errorf("Classify(%d) = %s, want %s", c.status, got, c.want)
		}
	}
}
