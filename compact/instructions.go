package compact

import "strings"

// IdentifierPolicy says how the summariser is told to treat opaque
// identifiers (ids, hashes, URLs, paths).
type IdentifierPolicy string

// The identifier policies.
const (
	// IdentifiersStrict (the default) asks for every identifier verbatim.
	IdentifiersStrict IdentifierPolicy = "strict"
	// IdentifiersOff adds no identifier instruction.
	IdentifiersOff IdentifierPolicy = "off"
	// IdentifiersCustom uses Instructions.IdentifierText instead.
	IdentifiersCustom IdentifierPolicy = "custom"
)

// strictIdentifiers is the default identifier instruction.
const strictIdentifiers = "Copy every opaque identifier exactly, character for character, never abbreviated or " +
	"rebuilt from memory: UUIDs, hashes, IDs, tokens, API keys, hostnames, IPs, ports, URLs and file names."

// Instructions tune what the summariser is asked to keep.
type Instructions struct {
	// Identifiers is the identifier policy; "" means IdentifiersStrict.
	Identifiers IdentifierPolicy
	// IdentifierText replaces the strict instruction under
	// IdentifiersCustom; empty falls back to the strict one.
	IdentifierText string
	// Focus is extra guidance, from the user or the caller (what `/compact
	// <text>` passes), appended under "Additional focus:".
	Focus string
}

// Build returns the extra instructions given to the summariser: the
// identifier instruction of the policy, then the focus text.
func (in Instructions) Build() string {
	var parts []string
	switch in.Identifiers {
	case IdentifiersOff:
	case IdentifiersCustom:
		if t := strings.TrimSpace(in.IdentifierText); t != "" {
			parts = append(parts, t)
		} else {
			parts = append(parts, strictIdentifiers)
		}
	default:
		parts = append(parts, strictIdentifiers)
	}
	if f := strings.TrimSpace(in.Focus); f != "" {
		parts = append(parts, "Additional focus:\n"+f)
	}
	return strings.Join(parts, "\n\n")
}
