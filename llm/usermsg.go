package llm

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/agentloop/agentloop/internal/lazyre"
)

// Transient reports whether a failure of this reason may pass by itself, so
// the same request is worth retrying after a wait: overloaded, server,
// network, timeout and rate_limit.
func (r Reason) Transient() bool {
	switch r {
	case ReasonOverloaded, ReasonServer, ReasonNetwork, ReasonTimeout, ReasonRateLimit:
		return true
	}
	return false
}

// UserMessage is one line for a person, saying what went wrong and what to
// do about it.
func (r Reason) UserMessage() string {
	switch r {
	case ReasonAuth:
		return "The provider rejected the API key. Check that the key is set and valid for this provider."
	case ReasonAuthPermanent:
		return "The provider says this API key or account is revoked or disabled. Use another key or account."
	case ReasonBilling:
		return "The provider refused the request for billing reasons: the account is out of credits or over its spending limit. Top up or switch to another key."
	case ReasonRateLimit:
		return "The provider is rate limiting this key. Wait a moment and try again, or use another key."
	case ReasonOverloaded:
		return "The provider is overloaded right now. Try again shortly or pick another model."
	case ReasonTimeout:
		return "The request to the provider timed out. Try again; if it keeps happening, check the network or the provider's status."
	case ReasonContextOverflow:
		return "The conversation no longer fits the model's context window. Compact it, start a new session, or use a model with a larger window."
	case ReasonFormat:
		return "The provider rejected the request as malformed. Try again; if it persists, start a new session and report it."
	case ReasonModelNotFound:
		return "The provider does not know this model, or this key cannot use it. Check the model id."
	case ReasonServer:
		return "The provider had an internal error. Try again in a moment."
	case ReasonNetwork:
		return "Could not reach the provider: the network connection failed or was interrupted. Check the connection and try again."
	}
	return "The model call failed for a reason agentloop does not recognise."
}

// ErrorText returns one line for a person about a failed model call: the
// most specific thing we can say, in our words, with the provider's words
// added where they help (a limit that resets at a given time, an error we
// do not recognise). It never contains credentials.
func ErrorText(err error) string {
	if err == nil {
		return ""
	}
	var pe *ProviderError
	local := false
	if !errors.As(err, &pe) {
		text := err.Error()
		pe = NewStreamError("", "", text)
		if r := ClassifyError(err); r != "" {
			pe.Reason = r
		}
		// Not a provider's answer: an error of this machine (a file, the
		// disk) or of agentloop itself, which no provider said.
		local = isLocalError(err) || pe.Reason == ReasonUnknown
	}
	msg := pe.Message
	if msg == "" && pe.Err != nil {
		msg = redact(pe.Err.Error())
	}
	lower := strings.ToLower(truncate(msg, maxHay))
	switch {
	case errors.Is(err, ErrResponseTooLarge):
		return "The provider sent a reply larger than agentloop accepts in one piece, so the call was stopped; a retry would get the same. Ask for a shorter output, or report it to the provider."
	case pe.Reason == ReasonContextOverflow:
		return ReasonContextOverflow.UserMessage()
	case strings.Contains(lower, "reasoning is mandatory") || strings.Contains(lower, "requires reasoning"):
		return "This model only works with reasoning on. Choose a thinking level other than off (for example --thinking minimal) and try again."
	case roleOrder.MatchString(lower):
		return "The provider rejected the order of the messages in the history. Try again; if it persists, start a new session."
	case pe.Status == 407 || strings.Contains(lower, "proxy authentication required"):
		return "A proxy between agentloop and the provider refused the request (HTTP 407). Check the proxy settings (HTTPS_PROXY) and its credentials."
	case strings.Contains(lower, "unexpected event order") || strings.Contains(lower, "malformed_response"):
		return "The provider sent a malformed streaming response. Try again."
	case strings.Contains(lower, "enospc") || strings.Contains(lower, "no space left on device") || strings.Contains(lower, "disk full") || strings.Contains(lower, "disk quota exceeded"):
		return "The disk is full: the session could not be written. Free some disk space and try again."
	case local:
		return "A local problem stopped the run, not the provider: " + oneLine(msg)
	case oauthRefresh.MatchString(lower):
		return "The OAuth sign-in could not be refreshed, so agentloop has no valid token for this provider. Sign in again. (" + oneLine(msg) + ")"
	case pe.Reason == ReasonBilling:
		return BillingMessage(pe.Provider, pe.Model)
	case strings.Contains(lower, "request ended without sending any chunks"):
		return ReasonTimeout.UserMessage()
	case pe.Reason == ReasonRateLimit && waitHint.MatchString(lower) && !strings.Contains(lower, "<html"):
		return "Rate limited by the provider: " + oneLine(msg)
	case pe.Reason == ReasonUnknown || pe.Reason == "" || pe.Reason == ReasonFormat || pe.Reason == ReasonServer || pe.Reason == ReasonModelNotFound:
		if msg != "" && !strings.HasPrefix(msg, "the provider answered with an HTML page") {
			return pe.Reason.UserMessage() + " The provider said: " + oneLine(msg)
		}
	}
	return pe.Reason.UserMessage()
}

// BillingMessage is the billing failure's line for a person, naming the
// provider and the model refused (either may be unknown, "").
func BillingMessage(provider, model string) string {
	who := "The provider"
	if provider != "" {
		who = provider
	}
	what := "the request"
	if model != "" {
		what = "the request for " + model
	}
	return who + " refused " + what + " for billing reasons: the account is out of credits or over its spending limit. Top up or switch to another key."
}

// isLocalError reports an error of this machine rather than of a provider:
// a file operation that failed, a full or read-only disk, too many open
// files.
func isLocalError(err error) bool {
	var pathErr *fs.PathError
	var linkErr *os.LinkError
	if errors.As(err, &pathErr) || errors.As(err, &linkErr) {
		return true
	}
	for _, no := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT, syscall.EROFS, syscall.EMFILE, syscall.ENFILE} {
		if errors.Is(err, no) {
			return true
		}
	}
	return false
}

var (
	oauthRefresh = lazyre.New(`(?:oauth|refresh)[^.]{0,40}(?:refresh|token)[^.]{0,40}(?:failed|failure|error|invalid|expired|revoked)|invalid_grant|refresh token (?:is )?(?:invalid|expired|revoked|not found)|could not refresh`)
	roleOrder    = lazyre.New(`roles must alternate|incorrect role information|unexpected role|must be followed by|messages with role 'tool'|tool_calls must be followed|tool_result block\(s\) (?:provided|without)|tool_use_id`)
	waitHint     = lazyre.New(`try again|retry|resets?\b|in \d+ (?:seconds?|minutes?|hours?)`)
)

// oneLine keeps the first line of s, cut to a readable length.
func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return truncate(s, 300)
}
