package wrap

import (
	"context"
	"iter"
	"strings"

	"github.com/agentloop/agentloop/llm"
)

// TextTransforms returns the layer that applies literal rewrites to the
// text blocks of the reply (layer 1). Deltas are rewritten as they stream;
// a delta that ends with the beginning of a pattern is held back until the
// next one decides, so a match split across deltas is still found. Empty
// patterns are ignored.
func TextTransforms(rs ...Replace) Middleware {
	var pairs []string
	longest := 0
	var olds []string
	for _, r := range rs {
		if r.Old == "" {
			continue
		}
		pairs = append(pairs, r.Old, r.New)
		olds = append(olds, r.Old)
		longest = max(longest, len(r.Old))
	}
	if len(pairs) == 0 {
		return func(m llm.Model) llm.Model { return m }
	}
	rep := strings.NewReplacer(pairs...)
	return func(inner llm.Model) llm.Model {
		return layer(inner, func(ctx context.Context, req *llm.Request, in iter.Seq2[llm.Event, error], r *relay) {
			t := &textLayer{r: r, rep: rep, olds: olds, longest: longest, blocks: map[int]*textBlock{}}
			t.run(in)
		})
	}
}

type textLayer struct {
	r       *relay
	rep     *strings.Replacer
	olds    []string
	longest int
	blocks  map[int]*textBlock // by inner index
}

type textBlock struct {
	out     int
	pending string // held back: may begin a pattern
	text    strings.Builder
}

func (t *textLayer) run(in iter.Seq2[llm.Event, error]) {
	r := t.r
	for ev, err := range in {
		if err != nil {
			r.bare(ev, err)
			return
		}
		switch ev.Type {
		case llm.EventStart:
			r.start(ev)
		case llm.EventTextStart:
			c := blockOf(ev)
			first := c.Text
			c.Text = ""
			j, ok := r.begin(c)
			st := &textBlock{out: j}
			t.blocks[ev.ContentIndex] = st
			if ok && first != "" {
				t.feed(st, first, false)
			}
		case llm.EventTextDelta:
			if st := t.blocks[ev.ContentIndex]; st != nil {
				t.feed(st, ev.Delta, false)
			}
		case llm.EventTextEnd:
			st := t.blocks[ev.ContentIndex]
			if st == nil {
				break
			}
			delete(t.blocks, ev.ContentIndex)
			if !t.feed(st, "", true) {
				return
			}
			c := blockOf(ev)
			if ev.Block != nil {
				c = *ev.Block
			}
			c.Text = st.text.String()
			r.msg.Content[st.out] = c
			r.end(st.out)
		case llm.EventDone, llm.EventError:
			for _, st := range t.blocks {
				t.feed(st, "", true)
			}
			r.finish(ev, "", nil)
			return
		default:
			r.pass(ev, nil)
		}
		if r.stopped {
			return
		}
	}
}

// feed adds a delta and emits what is safe to rewrite; final flushes all.
func (t *textLayer) feed(st *textBlock, d string, final bool) bool {
	s := st.pending + d
	cut := len(s)
	if !final {
		cut = t.holdback(s)
	}
	st.pending = s[cut:]
	out := t.rep.Replace(s[:cut])
	if out == "" {
		return !t.r.stopped
	}
	st.text.WriteString(out)
	t.r.msg.Content[st.out].Text = st.text.String()
	return t.r.delta(st.out, out)
}

// holdback returns where the held-back tail of s starts: at the longest
// suffix that is a proper prefix of a pattern.
func (t *textLayer) holdback(s string) int {
	for k := min(len(s), t.longest-1); k > 0; k-- {
		suffix := s[len(s)-k:]
		for _, o := range t.olds {
			if strings.HasPrefix(o, suffix) {
				return len(s) - k
			}
		}
	}
	return len(s)
}
