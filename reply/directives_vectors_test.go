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
				unmarshalStrict(t, c.Expected, &want)
				strip := reply.StripDirectivesForDisplay
				if c.Function == "stripInlineDirectiveTagsForDelivery" {
					strip = reply.StripDirectivesForDelivery
				}
				got, changed := strip(in.Text)
				if got != want.Text || changed != want.Changed {
					t.Errorf("got %q %v, want %q %v", got, changed, want.Text, want.Changed)
				}
			case "parseAudioTag":
				got, found := reply.ParseAudioTag(in.Text)
				checkFields(t, "", c.Expected, textFields(got, fields{
					"audioAsVoice": boolField(found), "hadTag": boolField(found),
				}))
			case "parseInlineDirectives":
				d := reply.ParseDirectives(in.Text, &reply.DirectiveOptions{CurrentMessageID: in.Options.CurrentMessageID})
				checkFields(t, "", c.Expected, textFields(d.Text, fields{
					"hasReplyTag": boolField(d.HasReplyTag), "replyToTag": boolField(d.HasReplyTag),
					"replyToId": stringField(d.ReplyToID), "replyToCurrent": boolField(d.ReplyToCurrent),
					"audioAsVoice": boolField(d.AudioAsVoice),
				}))
			case "streamingDirectiveAccumulator":
				var s reply.DirectiveStream
				for i, raw := range in.Steps {
					var st struct {
						Consume *string         `json:"consume"`
						Final   bool            `json:"final"`
						Reset   bool            `json:"reset"`
						Expect  json.RawMessage `json:"expect"`
					}
					unmarshalStrict(t, raw, &st)
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
				unmarshalStrict(t, c.Expected, &want)
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
				unmarshalStrict(t, c.Expected, &want)
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
				var reasons []string
				if reason != "" {
					reasons = []string{string(reason)}
				}
				f := fields{
					"skipReasons": func(t *testing.T, raw json.RawMessage) {
						var want []string
						unmarshal(t, raw, &want)
						if fmt.Sprintf("%q", reasons) != fmt.Sprintf("%q", want) {
							t.Errorf("skip reasons %q, want %q", reasons, want)
						}
					},
					"result": func(t *testing.T, raw json.RawMessage) {
						if string(raw) != "null" {
							t.Fatalf("no adapter for a result object %s", raw)
						}
						if got != nil {
							t.Errorf("got %+v, want no payload", *got)
						}
					},
				}
				if got != nil {
					f = textFields(got.Text, f)
					f["mediaUrl"] = firstMediaField(got.MediaURLs)
					f["mediaUrls"] = mediaField(got.MediaURLs)
				} else {
					for _, k := range []string{"text", "mediaUrl", "mediaUrls"} {
						f[k] = func(t *testing.T, raw json.RawMessage) { t.Errorf("skipped (%q), want %s", reason, raw) }
					}
				}
				checkFields(t, "", c.Expected, f)
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
	checkFields(t, "", expected, textFields(got.Text, fields{
		"mediaUrls":    mediaField(got.MediaURLs),
		"mediaUrl":     firstMediaField(got.MediaURLs),
		"audioAsVoice": boolField(got.AudioAsVoice),
		"segments": func(t *testing.T, raw json.RawMessage) {
			var want []struct {
				Type string `json:"type"`
				Text string `json:"text"`
				URL  string `json:"url"`
			}
			unmarshalStrict(t, raw, &want)
			if len(got.Segments) != len(want) {
				t.Fatalf("segments = %+v, want %+v", got.Segments, want)
			}
			for i, w := range want {
				g := got.Segments[i]
				if g.Type != w.Type || g.Text != w.Text || g.URL != w.URL {
					t.Errorf("segment %d = %+v, want %+v", i, g, w)
				}
			}
		},
	}))
}

// fields checks the fields a case states, one function per field name.
type fields map[string]func(t *testing.T, raw json.RawMessage)

// checkFields runs the check of every field of expected (an object); a
// field without a check fails the case: nothing a case states passes
// unchecked. where names the step, for streaming cases.
func checkFields(t *testing.T, where string, expected json.RawMessage, f fields) {
	t.Helper()
	var stated map[string]json.RawMessage
	unmarshal(t, expected, &stated)
	for k, raw := range stated {
		check, ok := f[k]
		if !ok {
			t.Fatalf("%sno adapter for expected field %q (%s)", where, k, raw)
		}
		t.Run(k, func(t *testing.T) { check(t, raw) })
	}
}

// textFields adds to f the checks of a text: text, textContains and
// textNotContains (a string or a list).
func textFields(got string, f fields) fields {
	f["text"] = stringField(got)
	f["textContains"] = func(t *testing.T, raw json.RawMessage) {
		for _, s := range stringsOf(t, raw) {
			if !strings.Contains(got, s) {
				t.Errorf("text %q lacks %q", got, s)
			}
		}
	}
	f["textNotContains"] = func(t *testing.T, raw json.RawMessage) {
		for _, s := range stringsOf(t, raw) {
			if strings.Contains(got, s) {
				t.Errorf("text %q contains %q", got, s)
			}
		}
	}
	return f
}

func stringsOf(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}
	}
	var many []string
	unmarshal(t, raw, &many)
	return many
}

// stringField checks a string; null means absent, which is "".
func stringField(got string) func(*testing.T, json.RawMessage) {
	return func(t *testing.T, raw json.RawMessage) {
		var want *string
		unmarshal(t, raw, &want)
		if w := deref(want); got != w {
			t.Errorf("got %q, want %q", got, w)
		}
	}
}

// boolField checks a bool; null means absent, which is false.
func boolField(got bool) func(*testing.T, json.RawMessage) {
	return func(t *testing.T, raw json.RawMessage) {
		var want *bool
		unmarshal(t, raw, &want)
		if w := want != nil && *want; got != w {
			t.Errorf("got %v, want %v", got, w)
		}
	}
}

// mediaField checks a list of media; null means none.
func mediaField(got []string) func(*testing.T, json.RawMessage) {
	return func(t *testing.T, raw json.RawMessage) {
		var want []string
		unmarshal(t, raw, &want)
		if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("media = %q, want %q", got, want)
		}
	}
}

// firstMediaField checks the first media; null means none.
func firstMediaField(got []string) func(*testing.T, json.RawMessage) {
	return func(t *testing.T, raw json.RawMessage) {
		var want *string
		unmarshal(t, raw, &want)
		first := ""
		if len(got) > 0 {
			first = got[0]
		}
		if want == nil && len(got) > 0 || want != nil && first != *want {
			t.Errorf("media = %q, want first %v", got, raw)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
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
	checkFields(t, where+": ", expect, textFields(got.Text, fields{
		"replyToCurrent": boolField(got.ReplyToCurrent),
		"replyToTag":     boolField(got.ReplyToTag),
		"replyToId":      stringField(got.ReplyToID),
		"audioAsVoice":   boolField(got.AudioAsVoice),
		"mediaUrls":      mediaField(got.MediaURLs),
		"mediaUrl":       firstMediaField(got.MediaURLs),
	}))
}
