package reply

import (
	"path"
	"strings"
)

// Segment is a piece of a reply in order: text, or one media reference.
type Segment struct {
	Type string // "text" or "media"
	Text string
	URL  string
}

// Media is what SplitMedia found.
type Media struct {
	// Text is the reply without its media lines and [[audio_as_voice]].
	Text         string
	MediaURLs    []string
	AudioAsVoice bool
	Segments     []Segment
}

// SplitMedia takes the MEDIA: lines out of a reply. A line whose trimmed
// start is "MEDIA:" names one media reference (or several separated by
// spaces), quoted when it contains spaces: an http(s) URL, a local path
// (absolute, ./relative, a Windows drive or UNC path, or a relative path
// with a slash; file:// is dropped), or, failing those, a bare file name
// with an extension. Paths that climb out with a ".." segment or start
// with "~" are refused; their line is still removed, so the path is not
// shown either. A MEDIA: line that names nothing usable and does not look
// like a path stays as text, as do MEDIA: lines inside code fences and
// prose that merely mentions "MEDIA:". [[audio_as_voice]] is detected and
// removed too.
func SplitMedia(text string) Media {
	var m Media
	if !strings.Contains(text, "MEDIA:") && !strings.Contains(text, "[[") {
		m.Text = strings.TrimSpace(text)
		if m.Text != "" {
			m.Segments = []Segment{{Type: "text", Text: m.Text}}
		}
		return m
	}
	var kept []string
	var seg []string
	flush := func() {
		if t := strings.TrimSpace(strings.Join(seg, "\n")); t != "" {
			m.Segments = append(m.Segments, Segment{Type: "text", Text: t})
		}
		seg = seg[:0]
	}
	var fences fenceTracker
	for _, line := range strings.Split(text, "\n") {
		if !fences.line(line) {
			if trimmed := strings.TrimLeft(line, " \t"); strings.HasPrefix(trimmed, "MEDIA:") {
				urls, remove := mediaRefs(strings.TrimSpace(trimmed[len("MEDIA:"):]))
				if remove {
					if len(urls) > 0 {
						flush()
						for _, u := range urls {
							m.Segments = append(m.Segments, Segment{Type: "media", URL: u})
						}
						m.MediaURLs = append(m.MediaURLs, urls...)
					}
					continue
				}
			}
		}
		kept = append(kept, line)
		seg = append(seg, line)
	}
	flush()
	out, voice := stripAudioTags(strings.Join(kept, "\n"))
	if voice {
		m.AudioAsVoice = true
		for i := range m.Segments {
			if m.Segments[i].Type == "text" {
				t, _ := stripAudioTags(m.Segments[i].Text)
				m.Segments[i].Text = tidy(t)
			}
		}
	}
	if voice || len(kept) < strings.Count(text, "\n")+1 {
		m.Text = tidy(out) // close the gaps the removals left
	} else {
		m.Text = strings.TrimSpace(out)
	}
	return m
}

// ParseAudioTag removes the [[audio_as_voice]] tags of text, tidying the
// gaps they leave (see ParseDirectives), and reports whether there were
// any. Text without the tag is returned unchanged.
func ParseAudioTag(text string) (string, bool) {
	out, found := stripAudioTags(text)
	if !found {
		return text, false
	}
	return tidy(out), true
}

// stripAudioTags removes the [[audio_as_voice]] tags of text and reports
// whether there were any.
func stripAudioTags(text string) (string, bool) {
	var b strings.Builder
	last, found := 0, false
	for _, d := range findDirectives(text) {
		if d.kind != dirAudio {
			continue
		}
		found = true
		b.WriteString(text[last:d.start])
		last = d.end
	}
	if !found {
		return text, false
	}
	b.WriteString(text[last:])
	return b.String(), true
}

// mediaRefs reads what follows "MEDIA:". It returns the accepted
// references and whether the line is to be removed (something was
// accepted, or it looks like a path even if refused).
func mediaRefs(s string) ([]string, bool) {
	if s == "" {
		return nil, false
	}
	if q := s[0]; (q == '"' || q == '\'' || q == '`') && len(s) > 1 {
		if k := strings.IndexByte(s[1:], q); k >= 0 {
			return acceptOne(s[1 : 1+k])
		}
	}
	fields := strings.Fields(s)
	if len(fields) > 1 {
		var urls []string
		for _, f := range fields {
			u, ok := acceptMedia(f)
			if !ok || !(looksLikePath(f) || strings.Contains(f, "://")) {
				urls = nil
				break
			}
			urls = append(urls, u)
		}
		if urls != nil {
			return urls, true
		}
	}
	return acceptOne(s) // a path with spaces, as a whole
}

func acceptOne(s string) ([]string, bool) {
	if u, ok := acceptMedia(s); ok {
		return []string{u}, true
	}
	return nil, looksLikePath(s)
}

// acceptMedia reports whether s is a media reference to deliver.
func acceptMedia(s string) (string, bool) {
	s = strings.TrimSpace(s)
	low := strings.ToLower(s)
	switch {
	case s == "":
		return "", false
	case strings.HasPrefix(low, "http://") || strings.HasPrefix(low, "https://"):
		return s, !strings.ContainsAny(s, " \t")
	case strings.HasPrefix(low, "file://"):
		s = s[len("file://"):]
	}
	if strings.HasPrefix(s, "~") || climbs(s) {
		return "", false
	}
	if looksLikePath(s) {
		return s, true
	}
	// Fallback: a bare file name with an extension.
	if ext := path.Ext(s); len(ext) > 1 && len(ext) <= 6 && !strings.ContainsAny(s, " \t:") && strings.Trim(ext[1:], "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") == "" {
		return s, true
	}
	return "", false
}

// looksLikePath reports whether s has the shape of a local path.
func looksLikePath(s string) bool {
	switch {
	case strings.HasPrefix(s, "/"), strings.HasPrefix(s, "./"), strings.HasPrefix(s, "../"),
		strings.HasPrefix(s, "~"), strings.HasPrefix(s, `\\`), strings.HasPrefix(s, "file://"):
		return true
	case len(s) >= 3 && isLetter(s[0]) && s[1] == ':' && (s[2] == '\\' || s[2] == '/'):
		return true
	}
	return strings.ContainsAny(s, `/\`) && !strings.Contains(s, "://")
}

// climbs reports whether a path has a ".." segment.
func climbs(s string) bool {
	for _, seg := range strings.FieldsFunc(s, func(r rune) bool { return r == '/' || r == '\\' }) {
		if seg == ".." {
			return true
		}
	}
	return false
}
