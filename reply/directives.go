package reply

import (
	"strings"
)

// Directives is what ParseDirectives found in a reply.
type Directives struct {
	// Text is the reply without the tags, its whitespace tidied (see
	// ParseDirectives).
	Text string
	// AudioAsVoice is set by [[audio_as_voice]]: send audio as a voice
	// note.
	AudioAsVoice bool
	// ReplyToID is the message to reply to: the last [[reply_to:<id>]],
	// else, with [[reply_to_current]], DirectiveOptions.CurrentMessageID.
	ReplyToID string
	// ReplyToCurrent is set by [[reply_to_current]].
	ReplyToCurrent bool
	// HasReplyTag is set by either reply tag.
	HasReplyTag bool
}

// DirectiveOptions configure ParseDirectives.
type DirectiveOptions struct {
	// CurrentMessageID is the id [[reply_to_current]] stands for.
	CurrentMessageID string
	// KeepAudioTag and KeepReplyTags leave those tags in Text (they are
	// still reported).
	KeepAudioTag  bool
	KeepReplyTags bool
}

type directiveKind int

const (
	dirAudio directiveKind = iota
	dirReplyCurrent
	dirReplyTo
)

// directive is one [[...]] tag found in a text.
type directive struct {
	start, end int
	kind       directiveKind
	id         string
}

// findDirectives returns the directive tags of text in order: "[[", then
// audio_as_voice, reply_to_current or reply_to:<id>, then "]]", with
// optional whitespace inside the brackets, in any case.
func findDirectives(text string) []directive {
	var out []directive
	closeAt := -1 // the next "]]" at or after the last search start
	for i := 0; ; {
		k := strings.Index(text[i:], "[[")
		if k < 0 {
			return out
		}
		start := i + k
		if closeAt < start+2 {
			c := strings.Index(text[start+2:], "]]")
			if c < 0 {
				return out
			}
			closeAt = start + 2 + c
		}
		end := closeAt
		if end-start > maxDirectiveLen {
			i = start + 1 // too long to be a tag
			continue
		}
		inner := strings.TrimSpace(text[start+2 : end])
		d := directive{start: start, end: end + 2}
		low := strings.ToLower(inner)
		ok := true
		switch {
		case low == "audio_as_voice":
			d.kind = dirAudio
		case low == "reply_to_current":
			d.kind = dirReplyCurrent
		case strings.HasPrefix(low, "reply_to"):
			rest := strings.TrimSpace(inner[len("reply_to"):])
			if !strings.HasPrefix(rest, ":") {
				ok = false
				break
			}
			d.kind = dirReplyTo
			d.id = strings.TrimSpace(rest[1:])
			ok = d.id != "" && !strings.ContainsAny(d.id, "[\n")
		default:
			ok = false
		}
		if ok {
			out = append(out, d)
			i = d.end
		} else {
			i = start + 1
		}
	}
}

// maxDirectiveLen bounds a directive tag with its brackets; longer
// bracketed text is prose.
const maxDirectiveLen = 256

// ParseDirectives reads the reply directives of text and removes them. A
// removed tag leaves one space when it sat between two non-space
// characters ("see[[reply_to_current]]now" reads "see now"). Then the
// whitespace is tidied outside code (fenced blocks and lines indented by
// four spaces or a tab are left alone): runs of spaces or tabs between
// words become one space, trailing spaces of lines go, leading blank lines
// and one leading space go, more than one blank line in a row becomes
// one, and the end is trimmed. Text without tags is tidied too.
func ParseDirectives(text string, opts *DirectiveOptions) Directives {
	var o DirectiveOptions
	if opts != nil {
		o = *opts
	}
	var d Directives
	var b strings.Builder
	last := 0
	for _, t := range findDirectives(text) {
		keep := false
		switch t.kind {
		case dirAudio:
			d.AudioAsVoice = true
			keep = o.KeepAudioTag
		case dirReplyCurrent:
			d.ReplyToCurrent, d.HasReplyTag = true, true
			keep = o.KeepReplyTags
		case dirReplyTo:
			d.ReplyToID, d.HasReplyTag = t.id, true
			keep = o.KeepReplyTags
		}
		if keep {
			continue
		}
		b.WriteString(text[last:t.start])
		if t.start > 0 && t.end < len(text) && !isSpace(text[t.start-1]) && !isSpace(text[t.end]) {
			b.WriteByte(' ')
		}
		last = t.end
	}
	b.WriteString(text[last:])
	if d.ReplyToID == "" && d.ReplyToCurrent {
		d.ReplyToID = o.CurrentMessageID
	}
	d.Text = tidy(b.String())
	return d
}

// tidy normalises whitespace outside code, as ParseDirectives describes.
func tidy(text string) string {
	lines := strings.Split(text, "\n")
	var fences fenceTracker
	out := make([]string, 0, len(lines))
	blank := 0
	for _, line := range lines {
		protected := fences.line(line)
		if !protected && (strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "\t")) {
			protected = true
		}
		if !protected {
			line = collapseSpaces(line)
		}
		if line == "" && !protected {
			blank++
			if blank > 1 || len(out) == 0 {
				continue
			}
		} else {
			blank = 0
		}
		out = append(out, line)
	}
	s := strings.Join(out, "\n")
	if len(s) >= 2 && (s[0] == ' ' || s[0] == '\t') && !isSpace(s[1]) {
		s = s[1:]
	}
	return strings.TrimRight(s, " \t\r\n")
}

// collapseSpaces turns runs of spaces and tabs between non-space
// characters into one space and drops trailing ones; leading indentation
// stays.
func collapseSpaces(line string) string {
	end := len(strings.TrimRight(line, " \t"))
	lead := len(line) - len(strings.TrimLeft(line, " \t"))
	if lead >= end {
		return ""
	}
	body := line[lead:end]
	if !strings.Contains(body, "  ") && !strings.Contains(body, "\t") {
		return line[:end]
	}
	var b strings.Builder
	b.WriteString(line[:lead])
	space := false
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c == ' ' || c == '\t' {
			if !space {
				b.WriteByte(' ')
			}
			space = true
			continue
		}
		space = false
		b.WriteByte(c)
	}
	return b.String()
}

// StripDirectivesForDisplay removes the directive tags from text without
// touching the whitespace around them, and reports whether it removed any.
func StripDirectivesForDisplay(text string) (string, bool) {
	ds := findDirectives(text)
	if len(ds) == 0 {
		return text, false
	}
	var b strings.Builder
	last := 0
	for _, d := range ds {
		b.WriteString(text[last:d.start])
		last = d.end
	}
	b.WriteString(text[last:])
	return b.String(), true
}

// StripDirectivesForDelivery replaces each directive tag and the
// whitespace around it with one space and trims the result; text without
// tags is returned unchanged.
func StripDirectivesForDelivery(text string) (string, bool) {
	ds := findDirectives(text)
	if len(ds) == 0 {
		return text, false
	}
	var b strings.Builder
	last := 0
	for _, d := range ds {
		b.WriteString(strings.TrimRight(text[last:d.start], " \t\r\n"))
		b.WriteByte(' ')
		last = d.end
		for last < len(text) && isSpace(text[last]) {
			last++
		}
	}
	b.WriteString(text[last:])
	return strings.TrimSpace(b.String()), true
}

// Payload is one piece of a reply ready for a channel.
type Payload struct {
	Text      string
	MediaURLs []string
	// AudioAsVoice asks the channel to send audio as a voice note.
	AudioAsVoice bool
	// ReplyToID, ReplyToCurrent and ReplyToTag carry the reply context
	// (see Directives).
	ReplyToID      string
	ReplyToCurrent bool
	ReplyToTag     bool
}

// DirectiveStream applies directives to the blocks of one streamed
// assistant message. A trailing "[[" that is not closed yet is held back
// until the next block (or the final one). The reply context is sticky: a
// reply tag applies to every later payload of the message until Reset. A
// block that is only tags yields no payload but keeps its context. Media
// lines become MediaURLs, and silent replies (NO_REPLY) yield nothing.
type DirectiveStream struct {
	// CurrentMessageID is the id [[reply_to_current]] stands for.
	CurrentMessageID string

	pending      string
	replyTo      string
	replyCurrent bool
	replyTag     bool
}

// Reset clears the held text and the reply context, for the next message.
func (s *DirectiveStream) Reset() {
	*s = DirectiveStream{CurrentMessageID: s.CurrentMessageID}
}

// Consume takes the next block; final says it is the message's last, so
// nothing is held back. It returns nil when the block yields nothing to
// send.
func (s *DirectiveStream) Consume(text string, final bool) *Payload {
	text = s.pending + text
	s.pending = ""
	if !final {
		if k := strings.LastIndex(text, "[["); k >= 0 && !strings.Contains(text[k:], "]]") {
			s.pending = text[k:]
			text = text[:k]
		}
	}
	m := SplitMedia(text)
	d := ParseDirectives(m.Text, &DirectiveOptions{CurrentMessageID: s.CurrentMessageID})
	if d.HasReplyTag {
		s.replyTag = true
		if d.ReplyToCurrent {
			s.replyCurrent = true
		}
		if d.ReplyToID != "" {
			s.replyTo = d.ReplyToID
		}
	}
	p, _ := NormalizePayload(Payload{
		Text: d.Text, MediaURLs: m.MediaURLs, AudioAsVoice: m.AudioAsVoice || d.AudioAsVoice,
		ReplyToID: s.replyTo, ReplyToCurrent: s.replyCurrent, ReplyToTag: s.replyTag,
	}, "")
	if p == nil || (p.Text == "" && len(p.MediaURLs) == 0 && !p.AudioAsVoice) {
		return nil
	}
	return p
}
