package reply

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// NormalizeForComparison lowers text, drops emoji, collapses whitespace
// and trims, so two texts that say the same thing compare equal.
func NormalizeForComparison(text string) string {
	var b strings.Builder
	space := false
	for _, r := range strings.ToLower(text) {
		if isEmoji(r) {
			continue
		}
		if unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isEmoji(r rune) bool {
	switch {
	case r == 0x200D, r == 0xFE0E, r == 0xFE0F, r == 0x20E3:
		return true // joiners, variation selectors, keycap
	case r >= 0x1F3FB && r <= 0x1F3FF:
		return true // skin tones
	case r >= 0xE0020 && r <= 0xE007F:
		return true // tag sequences
	}
	return r >= 0x2190 && unicode.Is(unicode.So, r)
}

// MinDuplicateLen is the shortest normalised text (in characters) that
// IsMessagingDuplicate compares; shorter texts ("ok", "done") are never
// duplicates.
const MinDuplicateLen = 10

// IsMessagingDuplicate reports whether text repeats one of sent (texts a
// messaging tool already delivered): after NormalizeForComparison, text is
// at least MinDuplicateLen characters and one contains the other.
func IsMessagingDuplicate(text string, sent []string) bool {
	n := NormalizeForComparison(text)
	if utf8.RuneCountInString(n) < MinDuplicateLen {
		return false
	}
	for _, s := range sent {
		ns := NormalizeForComparison(s)
		if ns != "" && (strings.Contains(n, ns) || strings.Contains(ns, n)) {
			return true
		}
	}
	return false
}

// MaxSentTexts is how many committed sends SentTexts remembers.
const MaxSentTexts = 200

// SentTexts tracks what messaging tools sent during a run, so the reply
// does not repeat it. A send is pending from the tool call's start and
// counts only once committed (the call succeeded): a failed send never
// swallows the reply. The newest MaxSentTexts commits are kept. It is safe
// for concurrent use.
type SentTexts struct {
	mu      sync.Mutex
	pending map[string]string
	sent    []string
}

// Pending records the text a messaging tool call is about to send.
func (s *SentTexts) Pending(callID, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending == nil {
		s.pending = map[string]string{}
	}
	s.pending[callID] = text
}

// Commit marks the call's send as delivered (ok) or drops it.
func (s *SentTexts) Commit(callID string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	text, found := s.pending[callID]
	delete(s.pending, callID)
	if !found || !ok {
		return
	}
	s.sent = append(s.sent, text)
	if over := len(s.sent) - MaxSentTexts; over > 0 {
		s.sent = append(s.sent[:0], s.sent[over:]...)
	}
}

// Texts returns the committed sends, oldest first.
func (s *SentTexts) Texts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.sent...)
}

// Duplicate reports whether text repeats a committed send.
func (s *SentTexts) Duplicate(text string) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return IsMessagingDuplicate(text, s.sent)
}
