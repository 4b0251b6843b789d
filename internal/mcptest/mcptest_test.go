package mcptest

import (
	"strings"
	"testing"
)

// Every generated description is a finished sentence: no verb of the
// format left over or missing.
func TestDescriptionsAreWellFormed(t *testing.T) {
	names := Names(len(verbs) * len(nouns))
	for i, name := range names {
		d := description(i)
		if strings.Contains(d, "%") {
			t.Fatalf("%s: description %q has a formatting error", name, d)
		}
		if !strings.Contains(d, nouns[(i/len(verbs))%len(nouns)].noun) {
			t.Fatalf("%s: description %q does not name its noun", name, d)
		}
	}
}
