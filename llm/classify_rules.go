package llm

import (
	"strings"
)

// The classification rules: what the providers' error texts mean. The
// message is read first; the status then decides (decide). Texts are
// matched in lower case. The tests in classify_test.go hold the real texts
// each rule is for.

// classifyParsed is the whole classifier over a parsed body.
func classifyParsed(provider string, status int, b errorBody) Reason {
	r := classifyMessage(strings.ToLower(provider), b)
	return decide(status, r, b.hay)
}

// decide combines the status with what the message said (r, "" when it
// said nothing recognisable).
func decide(status int, r Reason, hay string) Reason {
	switch {
	case status == 401 || status == 403:
		if r == ReasonAuthPermanent || r == ReasonBilling {
			return r
		}
		return ReasonAuth
	case status == 402:
		return classify402(hay)
	case status == 404:
		switch r {
		case ReasonContextOverflow, ReasonBilling, ReasonAuth, ReasonAuthPermanent:
			return r
		}
		return ReasonModelNotFound
	case status == 407:
		// A proxy between us and the provider wants credentials: the path
		// failed, not the provider's key.
		return ReasonNetwork
	case status == 408:
		return ReasonTimeout
	case status == 410:
		switch r {
		case ReasonBilling, ReasonAuth, ReasonAuthPermanent:
			return r
		}
		return ReasonServer
	case status == 413:
		if r != "" {
			return r
		}
		return ReasonContextOverflow
	case status == 429:
		if r == ReasonBilling {
			return r
		}
		return ReasonRateLimit
	case status == 529:
		return ReasonOverloaded
	case status == 499:
		if r != "" {
			return r
		}
		return ReasonTimeout
	case status == 504:
		if r == ReasonOverloaded || r == ReasonRateLimit || r == ReasonContextOverflow {
			return r
		}
		return ReasonTimeout
	case status >= 500:
		if r != "" {
			return r
		}
		return ReasonServer
	case status >= 400:
		if r != "" {
			return r
		}
		return ReasonFormat
	}
	if r != "" {
		return r
	}
	return ReasonUnknown
}

// classify402 reads a 402 Payment Required: a periodic or spend limit that
// resets is a rate limit; credits, balance or a plan to upgrade is billing.
func classify402(hay string) Reason {
	switch {
	case hay == "":
		return ReasonBilling
	case billing402.MatchString(hay):
		return ReasonBilling
	case limit402.MatchString(hay) || strings.Contains(hay, "rate limit"):
		return ReasonRateLimit
	}
	return ReasonBilling
}

var (
	billing402 = rule(`credit|balance|top up|top-up|upgrade your plan|billing plan|maximum allowed|insufficient|add funds|payment method`)
	limit402   = rule(`\b(?:usage|spend|spending|daily|hourly|organization|org|workspace|quota|subscription)\s+(?:\w+\s+)?limit\s+(?:(?:has been|was|is)\s+)?(?:reached|exhausted|exceeded|hit)|\bresets?\b|\breset at\b|\bwait for\b|\btry again\b`)
)

// classifyMessage reads the provider's words. It returns "" when they say
// nothing it recognises, so the status decides.
func classifyMessage(provider string, b errorBody) Reason {
	hay := b.hay
	if hay == "" {
		return ""
	}
	// Image limits are request problems the caller fixes by resizing; no
	// failure reason of their own (a 400 makes them format).
	if imageLimit.MatchString(hay) {
		return ""
	}
	if IsContextOverflow(hay) {
		return ReasonContextOverflow
	}
	switch b.code {
	case "1311": // z.ai: model not in the plan
		return ReasonBilling
	case "1113": // z.ai: bad endpoint or credentials
		return ReasonAuth
	}
	if modelGone.MatchString(hay) {
		return ReasonModelNotFound
	}
	if authPermanent.MatchString(hay) {
		return ReasonAuthPermanent
	}
	if b.shortQuota {
		return ReasonRateLimit
	}
	// A rate limit message may point at the billing page ("increase your
	// rate limit by adding a payment method"): the rate limit is the news.
	if rateLimitStrong.MatchString(hay) && !strings.Contains(hay, "insufficient_quota") {
		return ReasonRateLimit
	}
	if isBillingText(provider, hay) {
		return ReasonBilling
	}
	if modelNotFound.MatchString(hay) {
		return ReasonModelNotFound
	}
	if rateLimit.MatchString(hay) {
		return ReasonRateLimit
	}
	if overloaded.MatchString(hay) {
		return ReasonOverloaded
	}
	if authFailure.MatchString(hay) {
		return ReasonAuth
	}
	if formatFailure.MatchString(hay) {
		return ReasonFormat
	}
	if networkFailure.MatchString(hay) {
		return ReasonNetwork
	}
	if timeoutFailure.MatchString(hay) {
		return ReasonTimeout
	}
	if serverFailure.MatchString(hay) {
		return ReasonServer
	}
	if provider == "anthropic" && strings.Contains(hay, "an unknown error occurred") {
		// Anthropic's words for a failure on its side; elsewhere the same
		// words say nothing.
		return ReasonServer
	}
	if provider == "openrouter" && strings.Contains(hay, "provider returned error") {
		// OpenRouter's wrapper for a failed upstream call.
		return ReasonServer
	}
	return ""
}

var (
	imageLimit = rule(`image (?:exceeds|is too large|dimensions? exceed)|image dimensions exceed|image\.source.*exceed`)

	// modelGone is checked before authPermanent, whose "deactivated" would
	// otherwise take a retired model for a disabled account.
	modelGone = rule(`model_is_deactivated|model (?:has been|was|is) (?:deactivated|decommissioned|deprecated and removed|retired)|has been decommissioned`)

	authPermanent = rule(`api_key_deleted|api_key_revoked|api[ _-]?key (?:has been |was |is )?(?:deleted|revoked|disabled|suspended|deactivated)|key (?:has been|was) (?:revoked|disabled|deleted)|\brevoked\b|account (?:has been |is |was )?(?:deactivated|disabled|suspended|banned|terminated)|organization (?:has been |is |was )?(?:deactivated|disabled|suspended)|oauth authentication is currently not allowed|consumer .* has been suspended|user (?:has been |is )?(?:deactivated|banned)`)

	billingStrong = rule(`insufficient_quota|(?:got|returned|received|returns) (?:an? )?(?:http )?402\b|insufficient[ _]quota|insufficient(?:\s+\w+){0,3}\s+(?:balance|credits?|funds)|credit balance|out of credits|more credits|add (?:more )?credits|no credits|credits? (?:exhausted|depleted)|payment[ _]required|requires? payment|extra usage|(?:http|status|code|error)\W{0,3}402\b|\b402\s+(?:payment|response|error|status)|spending limit|exceeded your current quota|upgrade your plan|your current plan|billing`)

	modelNotFound = rule(`model_not_found|model not found|no such model|unknown model|invalid model|model .{0,80} (?:does not exist|not found|is not found|is not supported|not supported)|(?:does not exist|not found)[^.]{0,40}\bmodel\b|no endpoints found|is not a valid model|not_found_error|unsupported model|model is not available|^404\s*(?:status code)?\s*\(no body\)`)

	rateLimit = rule(`rate[ _-]?limit|too many requests|too many concurrent|resource_exhausted|resource has been exhausted|quota (?:exceeded|has been exhausted|limit|exhausted)|quota_exceeded|throttl|concurrency limit|tokens per (?:minute|day|hour)|requests per (?:minute|day|hour)|\b(?:tpm|rpm|tpd|rpd)\b|usage limit|limit exhausted|(?:daily|weekly|monthly|hourly) (?:usage |token |request )?limit (?:reached|exceeded|exhausted|hit)|slow down|model_cooldown`)

	rateLimitStrong = rule(`rate[ _-]?limit|too many requests`)

	overloaded = rule(`overload|high demand|modelnotreadyexception|at capacity|over capacity|no capacity|capacity (?:exceeded|constraints|limits?)|server is busy|server busy|temporarily unavailable due to load`)

	authFailure = rule(`invalid[ _-]?api[ _-]?key|invalid x-api-key|incorrect api key|api key not valid|api_key_invalid|api key (?:is |has )?(?:invalid|missing|required|not found|expired)|no api key|missing api key|unauthori[sz]ed|unauthenticated|authenticat(?:e|ion)(?:_error| error| failed| failure| required|ion fails)|could not authenticate|could not validate credentials|invalid credentials|no credentials|no auth credentials|credentials? (?:are |is )?(?:invalid|expired|missing)|permission_error|permission[ _]denied|insufficient permissions|forbidden|invalid (?:bearer )?token|token (?:has )?expired|access denied|accountid|missing scopes|invalid_grant|token refresh failed|re-authenticate`)

	formatFailure = rule(`invalid request format|tool_use ids|should match pattern|tool_use\.(?:id|input)|tool_use_id|tool_call_id|field required|roles must alternate|incorrect role|unexpected role|must be followed by|messages with role|tool_calls must|reasoning is mandatory|requires reasoning|invalid_request_error|invalid[ _]argument|validationexception|unprocessable entity|malformed request|invalid json|could not parse the json|invalid input format|malformed_function_call`)

	networkFailure = rule(`econnrefused|econnreset|econnaborted|ehostunreach|enetunreach|ehostdown|enetdown|\bepipe\b|enotfound|eai_again|socket hang up|fetch failed|network[ _]error|no such host|connection (?:refused|reset|error|closed|aborted)|broken pipe|other side closed|upstream connect error|unexpected eof|reset before headers|tls handshake|dns (?:failure|error|lookup)|und_err_socket|premature close|enetreset|stream (?:was )?(?:closed|aborted)|^reason: error$`)

	timeoutFailure = rule(`timeout|timed out|time out|deadline[ _]exceeded|etimedout|esockettimedout|request ended without sending any chunks|unhandled stop reason|stop reason: (?:abort|error)|operation was aborted|reason: abort`)

	serverFailure = rule(`internal server error|internal[ _]error|server[ _]error|api_error|bad gateway|service[ _]?unavailable|\bunavailable\b|malformed_response|unexpected event order|invalid streaming|unknown error, 5\d\d|upstream error`)
)

// isBillingText reports words that mean the account cannot pay. Long prose
// (a model's answer quoted into an error) needs an explicit 402 to count.
func isBillingText(provider, hay string) bool {
	if provider == "openrouter" && strings.Contains(hay, "key limit exceeded") {
		return true
	}
	if len(hay) > 512 {
		return explicit402.MatchString(hay)
	}
	return billingStrong.MatchString(hay)
}

var explicit402 = rule(`(?:got|returned|received|returns) (?:an? )?(?:http )?402\b|(?:http|status|code|error)\W{0,3}402\b|\b402\s+(?:payment|response|error|status)`)
