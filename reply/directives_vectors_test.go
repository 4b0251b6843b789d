package reply_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentloop/agentloop/reply"
)

// The reply_directives.json cases through small adapters. Skipped by name:
var skipDirectiveCases = map[string]string{
	"message display strip: non-array content returned unchanged": "operates on OpenClaw's message objects, whose content may be a bare string; ours always has blocks, and StripDirectivesForDisplay applies to each text block",
}

func TestDirectiveVectors(t *testing.T) {
	for _, c := range loadVectors(t, "reply_directives.json") {
		t.Run(c.Name, func(t *testing.T) {
			if why, ok := skipDirectiveCases[c.Name]; ok {
				t.Skip(why)
			}
			var in struct {
				Text    string `json:"text"`
				Token   string `json:"token"`
				Options struct {
					CurrentMessageID string `json:"currentMessageId"`
				} `json:"options"`
				SentTexts []string `json:"sentTexts"`
				Payload   *struct {
					Text     string `json:"text"`
					MediaURL string `json:"mediaUrl"`
				} `json:"payload"`
				Steps  []json.RawMessage `json:"steps"`
				Events []struct {
					Type  string `json:"type"`
					Delta string `json:"delta"`
				} `json:"events"`
				Config struct {
					BlockReplyChunking chunkCfg `json:"blockReplyChunking"`
				} `json:"config"`
			}
			unmarshal(t, c.Input, &in)
			switch c.Function {
			case "splitMediaFromOutput":
				checkMedia(t, reply.SplitMedia(in.Text), c.Expected)
			case "stripInlineDirectiveTagsForDisplay", "stripInlineDirectiveTagsForDelivery":
				var want struct {
					Text    string `json:"text"`
					Changed bool   `json:"changed"`
				}
				unmarshal(t, c.Expected, &want)
				strip := reply.StripDirectivesForDisplay
				if c.Function == "stripInlineDirectiveTagsForDelivery" {
					strip = reply.StripDirectivesForDelivery
				}
				got, changed := strip(in.Text)
				if got != want.Text || changed != want.Changed {
					t.Errorf("got %q %v, want %q %v", got, changed, want.Text, want.Changed)
				}
			case "parseAudioTag":
				var want struct {
					Text         *string `json:"text"`
					AudioAsVoice *bool   `json:"audioAsVoice"`
					HadTag       *bool   `json:"hadTag"`
				}
				unmarshal(t, c.Expected, &want)
				got, found := reply.ParseAudioTag(in.Text)
				if want.Text != nil && got != *want.Text {
					t.Errorf("text = %q, want %q", got, *want.Text)
				}
				for _, b := range []*bool{want.AudioAsVoice, want.HadTag} {
					if b != nil && *b != found {
						t.Errorf("found = %v, want %v", found, *b)
					}
				}
			case "parseInlineDirectives":
				var want struct {
					Text           *string `json:"text"`
					HasReplyTag    *bool   `json:"hasReplyTag"`
					ReplyToID      *string `json:"replyToId"`
					ReplyToCurrent *bool   `json:"replyToCurrent"`
				}
				unmarshal(t, c.Expected, &want)
				d := reply.ParseDirectives(in.Text, &reply.DirectiveOptions{CurrentMessageID: in.Options.CurrentMessageID})
				if want.Text != nil && d.Text != *want.Text {
					t.Errorf("text = %q, want %q", d.Text, *want.Text)
				}
				if want.HasReplyTag != nil && d.HasReplyTag != *want.HasReplyTag {
					t.Errorf("hasReplyTag = %v", d.HasReplyTag)
				}
				if want.ReplyToID != nil && d.ReplyToID != *want.ReplyToID {
					t.Errorf("replyToId = %q, want %q", d.ReplyToID, *want.ReplyToID)
				}
				if want.ReplyToCurrent != nil && d.ReplyToCurrent != *want.ReplyToCurrent {
					t.Errorf("replyToCurrent = %v", d.ReplyToCurrent)
				}
			case "streamingDirectiveAccumulator":
				var s reply.DirectiveStream
				for i, raw := range in.Steps {
					var st struct {
						Consume *string         `json:"consume"`
						Final   bool            `json:"final"`
						Reset   bool            `json:"reset"`
						Expect  json.RawMessage `json:"expect"`
					}
					unmarshal(t, raw, &st)
					if st.Reset {
						s.Reset()
						continue
					}
					got := s.Consume(*st.Consume, st.Final)
					checkPayload(t, fmt.Sprintf("step %d", i), got, st.Expect)
				}
			case "subscribeBlockReplyScenario":
				cfg := in.Config.BlockReplyChunking.options()
				p := reply.NewPipeline(&reply.PipelineOptions{Chunking: &cfg})
				var got []string
				for _, ev := range in.Events {
					switch ev.Type {
					case "text_delta":
						for _, pl := range p.Write(ev.Delta) {
							got = append(got, pl.Text)
						}
					case "message_end":
						for _, pl := range p.Flush() {
							got = append(got, pl.Text)
						}
					}
				}
				var want struct {
					BlockReplies []struct {
						Text string `json:"text"`
					} `json:"blockReplies"`
				}
				unmarshal(t, c.Expected, &want)
				var wantTexts []string
				for _, b := range want.BlockReplies {
					wantTexts = append(wantTexts, b.Text)
				}
				if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", wantTexts) {
					t.Errorf("block replies = %q, want %q", got, wantTexts)
				}
			case "subscribePartialReplyScenario":
				p := reply.NewPipeline(nil)
				var partials []string
				for _, ev := range in.Events {
					if ev.Type == "text_delta" {
						p.Write(ev.Delta)
						partials = append(partials, p.Partial())
					}
				}
				var want struct {
					LastPartialText   string `json:"lastPartialText"`
					NoPartialContains string `json:"noPartialContains"`
				}
				unmarshal(t, c.Expected, &want)
				if last := partials[len(partials)-1]; last != want.LastPartialText {
					t.Errorf("last partial = %q, want %q", last, want.LastPartialText)
				}
				for _, s := range partials {
					if strings.Contains(s, want.NoPartialContains) {
						t.Errorf("partial %q contains %q", s, want.NoPartialContains)
					}
				}
			case "isSilentReplyText":
				checkBool(t, reply.IsSilent(in.Text, in.Token), c.Expected)
			case "startsWithSilentToken":
				checkBool(t, reply.StartsWithSilentToken(in.Text, in.Token), c.Expected)
			case "isSilentReplyPrefixText":
				checkBool(t, reply.IsSilentPrefix(in.Text, in.Token), c.Expected)
			case "stripSilentToken":
				var want string
				unmarshal(t, c.Expected, &want)
				if got := reply.StripSilentToken(in.Text, in.Token); got != want {
					t.Errorf("got %q, want %q", got, want)
				}
			case "normalizeTextForComparison":
				var want string
				unmarshal(t, c.Expected, &want)
				if got := reply.NormalizeForComparison(in.Text); got != want {
					t.Errorf("got %q, want %q", got, want)
				}
			case "isMessagingToolDuplicate":
				checkBool(t, reply.IsMessagingDuplicate(in.Text, in.SentTexts), c.Expected)
			case "normalizeReplyPayload":
				pl := reply.Payload{Text: in.Payload.Text}
				if in.Payload.MediaURL != "" {
					pl.MediaURLs = []string{in.Payload.MediaURL}
				}
				got, reason := reply.NormalizePayload(pl, in.Token)
				var want struct {
					Text        *string  `json:"text"`
					MediaURL    string   `json:"mediaUrl"`
					SkipReasons []string `json:"skipReasons"`
				}
				unmarshal(t, c.Expected, &want)
				if want.SkipReasons != nil {
					if got != nil || reason != want.SkipReasons[0] {
						t.Errorf("got %+v (%q), want skipped as %q", got, reason, want.SkipReasons[0])
					}
					return
				}
				if got == nil {
					t.Fatalf("skipped (%q), want %+v", reason, want)
				}
				if want.Text != nil && got.Text != *want.Text {
					t.Errorf("text = %q, want %q", got.Text, *want.Text)
				}
				if want.MediaURL != "" && (len(got.MediaURLs) != 1 || got.MediaURLs[0] != want.MediaURL) {
					t.Errorf("media = %q, want %q", got.MediaURLs, want.MediaURL)
				}
			default:
				t.Fatalf("no adapter for %q", c.Function)
			}
		})
	}
}

func checkBool(t *testing.T, got bool, expected json.RawMessage) {
	t.Helper()
	var want bool
	unmarshal(t, expected, &want)
	if got != want {
		t.Errorf("got %v, want %v", got, want)
	}
}

func checkMedia(t *testing.T, got reply.Media, expected json.RawMessage) {
	t.Helper()
	var want struct {
		Text         *string   `json:"text"`
		MediaURLs    *[]string `json:"mediaUrls"`
		MediaURL     *string   `json:"mediaUrl"`
		AudioAsVoice *bool     `json:"audioAsVoice"`
		Segments     []struct {
			Type string `json:"type"`
			Text string `json:"text"`
			URL  string `json:"url"`
		} `json:"segments"`
	}
	unmarshal(t, expected, &want)
	if want.Text != nil && got.Text != *want.Text {
		t.Errorf("text = %q, want %q", got.Text, *want.Text)
	}
	if want.MediaURLs != nil && fmt.Sprintf("%q", got.MediaURLs) != fmt.Sprintf("%q", *want.MediaURLs) {
		t.Errorf("media = %q, want %q", got.MediaURLs, *want.MediaURLs)
	}
	if want.MediaURLs == nil && strings.Contains(string(expected), `"mediaUrls": null`) && len(got.MediaURLs) > 0 {
		t.Errorf("media = %q, want none", got.MediaURLs)
	}
	if want.MediaURL != nil && (len(got.MediaURLs) == 0 || got.MediaURLs[0] != *want.MediaURL) {
		t.Errorf("first media = %q, want %q", got.MediaURLs, *want.MediaURL)
	}
	wantVoice := want.AudioAsVoice != nil && *want.AudioAsVoice
	if got.AudioAsVoice != wantVoice {
		t.Errorf("audioAsVoice = %v, want %v", got.AudioAsVoice, wantVoice)
	}
	if want.Segments != nil {
		if len(got.Segments) != len(want.Segments) {
			t.Fatalf("segments = %+v, want %+v", got.Segments, want.Segments)
		}
		for i, w := range want.Segments {
			g := got.Segments[i]
			if g.Type != w.Type || g.Text != w.Text || g.URL != w.URL {
				t.Errorf("segment %d = %+v, want %+v", i, g, w)
			}
		}
	}
}

// checkPayload compares a DirectiveStream result with an expectation that
// is null (no payload) or a partial object.
func checkPayload(t *testing.T, where string, got *reply.Payload, expect json.RawMessage) {
	t.Helper()
	if string(expect) == "null" {
		if got != nil {
			t.Errorf("%s: got %+v, want no payload", where, *got)
		}
		return
	}
	if got == nil {
		t.Fatalf("%s: no payload, want %s", where, expect)
	}
	var want map[string]any
	unmarshal(t, expect, &want)
	for k, v := range want {
		var g any
		switch k {
		case "text":
			g = got.Text
		case "replyToCurrent":
			g = got.ReplyToCurrent
		case "replyToTag":
			g = got.ReplyToTag
		case "replyToId":
			if got.ReplyToID != "" {
				g = got.ReplyToID
			}
		default:
			t.Fatalf("%s: no check for %q", where, k)
		}
		if fmt.Sprint(g) != fmt.Sprint(v) {
			t.Errorf("%s: %s = %v, want %v", where, k, g, v)
		}
	}
}
