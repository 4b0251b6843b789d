package reply_test

import (
	"fmt"
	"testing"

	"github.com/agentloop/agentloop/reply"
)

func TestParseDirectives(t *testing.T) {
	tests := []struct {
		name string
		in   string
		opts reply.DirectiveOptions
		want reply.Directives
	}{
		{"reply_to_current", "[[reply_to_current]] hi", reply.DirectiveOptions{CurrentMessageID: "m1"},
			reply.Directives{Text: "hi", ReplyToID: "m1", ReplyToCurrent: true, HasReplyTag: true}},
		{"reply_to id", "ok [[reply_to:abc-123]]", reply.DirectiveOptions{},
			reply.Directives{Text: "ok", ReplyToID: "abc-123", HasReplyTag: true}},
		{"last explicit id wins over current", "[[reply_to:a]] x [[reply_to_current]] [[ reply_to : b ]]", reply.DirectiveOptions{CurrentMessageID: "m"},
			reply.Directives{Text: "x", ReplyToID: "b", ReplyToCurrent: true, HasReplyTag: true}},
		{"case and spaces inside brackets", "[[ Reply_To_Current ]]yo", reply.DirectiveOptions{CurrentMessageID: "m"},
			reply.Directives{Text: "yo", ReplyToID: "m", ReplyToCurrent: true, HasReplyTag: true}},
		{"audio_as_voice", "Listen [[audio_as_voice]]", reply.DirectiveOptions{},
			reply.Directives{Text: "Listen", AudioAsVoice: true}},
		{"glued tag leaves a space", "see[[reply_to_current]]now", reply.DirectiveOptions{},
			reply.Directives{Text: "see now", ReplyToCurrent: true, HasReplyTag: true}},
		{"unknown tags stay", "a [[note]] b [[reply_to]] c", reply.DirectiveOptions{},
			reply.Directives{Text: "a [[note]] b [[reply_to]] c"}},
		{"keep tags", "[[audio_as_voice]] [[reply_to:x]] hi", reply.DirectiveOptions{KeepAudioTag: true, KeepReplyTags: true},
			reply.Directives{Text: "[[audio_as_voice]] [[reply_to:x]] hi", AudioAsVoice: true, ReplyToID: "x", HasReplyTag: true}},
		{"whitespace tidied, code kept", "  a   b  \n\n\n\n```\nx    y  \n```\n    keep   this\n\tand  this", reply.DirectiveOptions{},
			reply.Directives{Text: "  a b\n\n```\nx    y  \n```\n    keep   this\n\tand  this"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := reply.ParseDirectives(tt.in, &tt.opts)
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestStripDirectivesForDelivery(t *testing.T) {
	got, changed := reply.StripDirectivesForDelivery("hello  [[reply_to_current]]\n world [[audio_as_voice]]")
	if got != "hello world" || !changed {
		t.Errorf("got %q %v", got, changed)
	}
	if got, changed := reply.StripDirectivesForDelivery("  untouched  "); got != "  untouched  " || changed {
		t.Errorf("text without tags changed: %q %v", got, changed)
	}
}

func TestSplitMedia(t *testing.T) {
	tests := []struct {
		name, in string
		text     string
		urls     []string
	}{
		{"url", "Here:\nMEDIA:https://example.com/a.png", "Here:", []string{"https://example.com/a.png"}},
		{"absolute path", "MEDIA:/tmp/x.png\ndone", "done", []string{"/tmp/x.png"}},
		{"file url", "MEDIA:file:///tmp/x.png", "", []string{"/tmp/x.png"}},
		{"windows drive", `MEDIA:C:\Users\me\a.jpg`, "", []string{`C:\Users\me\a.jpg`}},
		{"relative with slash", "MEDIA:images/a.png", "", []string{"images/a.png"}},
		{"bare file name", "MEDIA:photo.jpg", "", []string{"photo.jpg"}},
		{"quoted with spaces", `MEDIA:"/a b/c d.png"`, "", []string{"/a b/c d.png"}},
		{"several", "MEDIA: /a.png https://x.io/b.gif", "", []string{"/a.png", "https://x.io/b.gif"}},
		{"unquoted path with spaces", "MEDIA:/Users/me/My File.png", "", []string{"/Users/me/My File.png"}},
		{"traversal refused, line removed", "a\nMEDIA:/srv/../etc/passwd\nb", "a\nb", nil},
		{"home refused, line removed", "MEDIA:~/x.png", "", nil},
		{"prose kept", "The MEDIA: line format", "The MEDIA: line format", nil},
		{"bare word kept", "MEDIA:thing", "MEDIA:thing", nil},
		{"audio tag in any case", "Hi [[ Audio_As_Voice ]]\nMEDIA:/v.ogg", "Hi", []string{"/v.ogg"}},
		{"inside fence kept", "```\nMEDIA:/a.png\n```", "```\nMEDIA:/a.png\n```", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := reply.SplitMedia(tt.in)
			if m.Text != tt.text || fmt.Sprintf("%q", m.MediaURLs) != fmt.Sprintf("%q", tt.urls) {
				t.Errorf("got %q %q, want %q %q", m.Text, m.MediaURLs, tt.text, tt.urls)
			}
		})
	}
}

func TestSilentToken(t *testing.T) {
	tests := []struct {
		in                  string
		silent, starts, pre bool
		stripped            string
	}{
		{"NO_REPLY", true, false, true, ""},
		{" no_reply\n", true, false, false, ""},
		{"NO_", false, false, true, "NO_"},
		{"NO", false, false, true, "NO"},
		{"NOPE", false, false, false, "NOPE"},
		{"Done.\nNO_REPLY", false, false, false, "Done."},
		{"NO_REPLYand then", false, true, false, "NO_REPLYand then"},
		{"NO_REPLY: because", false, false, false, "NO_REPLY: because"},
		{"word.NO_REPLY", false, false, false, "word.NO_REPLY"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := reply.IsSilent(tt.in, ""); got != tt.silent {
				t.Errorf("IsSilent = %v", got)
			}
			if got := reply.StartsWithSilentToken(tt.in, ""); got != tt.starts {
				t.Errorf("StartsWithSilentToken = %v", got)
			}
			if got := reply.IsSilentPrefix(tt.in, ""); got != tt.pre {
				t.Errorf("IsSilentPrefix = %v", got)
			}
			if got := reply.StripSilentToken(tt.in, ""); got != tt.stripped {
				t.Errorf("StripSilentToken = %q, want %q", got, tt.stripped)
			}
		})
	}
}

func TestNormalizePayload(t *testing.T) {
	tests := []struct {
		name   string
		in     reply.Payload
		text   string
		reason string
	}{
		{"plain", reply.Payload{Text: " hi "}, "hi", ""},
		{"silent", reply.Payload{Text: "NO_REPLY"}, "", reply.SkipSilent},
		{"json action", reply.Payload{Text: `{"action":"NO_REPLY"}`}, "", reply.SkipSilent},
		{"blank", reply.Payload{Text: "  "}, "", reply.SkipEmpty},
		{"silent with media keeps media", reply.Payload{Text: "NO_REPLY", MediaURLs: []string{"/a.png"}}, "", ""},
		{"glued token stripped", reply.Payload{Text: "NO_REPLYHello"}, "Hello", ""},
		{"trailing token stripped", reply.Payload{Text: "Sure.\n\nNO_REPLY"}, "Sure.", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason := reply.NormalizePayload(tt.in, "")
			if reason != tt.reason {
				t.Fatalf("reason = %q, want %q", reason, tt.reason)
			}
			if reason == "" && (got == nil || got.Text != tt.text) {
				t.Errorf("got %+v, want text %q", got, tt.text)
			}
		})
	}
}

func TestSentTexts(t *testing.T) {
	var s reply.SentTexts
	s.Pending("c1", "The deployment finished successfully.")
	if s.Duplicate("The deployment finished successfully.") {
		t.Error("a pending send suppressed the reply")
	}
	s.Commit("c1", true)
	if !s.Duplicate("the deployment finished   successfully. 🎉") {
		t.Error("a committed send did not suppress its repeat")
	}
	if s.Duplicate("ok") {
		t.Error("a short text counted as a duplicate")
	}
	s.Pending("c2", "This one failed to send at all.")
	s.Commit("c2", false)
	if s.Duplicate("This one failed to send at all.") {
		t.Error("a failed send suppressed the reply")
	}
	for i := range reply.MaxSentTexts + 5 {
		id := fmt.Sprint("x", i)
		s.Pending(id, fmt.Sprintf("message number %d here", i))
		s.Commit(id, true)
	}
	if n := len(s.Texts()); n != reply.MaxSentTexts {
		t.Errorf("%d sends kept, want %d", n, reply.MaxSentTexts)
	}
	var nilSet *reply.SentTexts
	if nilSet.Duplicate("anything at all here") {
		t.Error("a nil set found a duplicate")
	}
}

func TestDirectiveStream(t *testing.T) {
	s := reply.DirectiveStream{CurrentMessageID: "m9"}
	steps := []struct {
		in    string
		final bool
		want  string // "" means no payload
		reply string
	}{
		{"[[reply_", false, "", ""},
		{"to_current]]", false, "", ""},
		{"Hello", false, "Hello", "m9"},
		{"MEDIA:/a.png", false, "", ""}, // media only: checked below
		{"NO_REPLY", false, "", ""},
		{"tail [[", false, "tail", "m9"},
		{"", true, "[[", "m9"},
	}
	for i, st := range steps {
		got := s.Consume(st.in, st.final)
		if st.in == "MEDIA:/a.png" {
			if got == nil || len(got.MediaURLs) != 1 || got.Text != "" {
				t.Fatalf("step %d: %+v, want a media payload", i, got)
			}
			continue
		}
		switch {
		case st.want == "" && got != nil:
			t.Errorf("step %d: %+v, want nothing", i, *got)
		case st.want != "" && (got == nil || got.Text != st.want || got.ReplyToID != st.reply):
			t.Errorf("step %d: %+v, want %q replying to %q", i, got, st.want, st.reply)
		}
	}
}

func TestPipeline(t *testing.T) {
	var sent reply.SentTexts
	sent.Pending("t", "I already told you this via the tool.")
	sent.Commit("t", true)
	p := reply.NewPipeline(&reply.PipelineOptions{
		Chunking:         &reply.ChunkerOptions{MinChars: 5, MaxChars: 60, FlushOnParagraph: true},
		CurrentMessageID: "u1",
		Sent:             &sent,
	})
	in := "<think>plan it</think>[[reply_to_current]]First part of the answer.\n\n" +
		"I already told you this via the tool.\n\nSame line\n\nSame line\n\nDone."
	var got []reply.Payload
	for i := 0; i < len(in); i += 3 {
		got = append(got, p.Write(in[i:min(len(in), i+3)])...)
	}
	got = append(got, p.Flush()...)
	var texts []string
	for _, pl := range got {
		texts = append(texts, pl.Text)
		if pl.ReplyToID != "u1" {
			t.Errorf("payload %q lost the reply context", pl.Text)
		}
	}
	// Blocks flush at blank lines; the block repeating the tool's send is
	// dropped; equal consecutive blocks are both kept.
	want := []string{"First part of the answer.", "Same line", "Same line", "Done."}
	if fmt.Sprintf("%q", texts) != fmt.Sprintf("%q", want) {
		t.Errorf("payloads = %q, want %q", texts, want)
	}
}

func TestPipelineBreak(t *testing.T) {
	p := reply.NewPipeline(nil)
	p.Write("Let me check the file. <thi")
	if got := p.Break(); len(got) != 1 || got[0].Text != "Let me check the file." {
		t.Fatalf("Break = %+v, want the text before the tool call", got)
	}
	p.Write("nk>hidden</think>Found it.")
	if got := p.Flush(); len(got) != 1 || got[0].Text != "Found it." {
		t.Fatalf("Flush = %+v, want the rest without the reasoning", got)
	}
}

func TestParseAudioTag(t *testing.T) {
	if got, ok := reply.ParseAudioTag("Hear this [[audio_as_voice]]  now"); got != "Hear this now" || !ok {
		t.Errorf("got %q %v", got, ok)
	}
	if got, ok := reply.ParseAudioTag("  plain  text "); got != "  plain  text " || ok {
		t.Errorf("text without the tag changed: %q %v", got, ok)
	}
}
