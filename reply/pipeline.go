package reply

import "strings"

// PipelineOptions configure a Pipeline.
type PipelineOptions struct {
	// Tags configures the tag stripper.
	Tags TagOptions
	// Chunking cuts the reply into blocks while it streams; nil sends one
	// block per message, at Flush.
	Chunking *ChunkerOptions
	// CurrentMessageID is the id [[reply_to_current]] stands for.
	CurrentMessageID string
	// Sent, when set, suppresses blocks that repeat a committed
	// messaging-tool send.
	Sent *SentTexts
}

// Pipeline turns the text deltas of one assistant message at a time into
// payloads for a channel: reasoning tags stripped, blocks cut by the
// chunker, each block's end trimmed, blank blocks and blocks repeating a
// messaging-tool send dropped, then directives, media and the silent token
// applied (DirectiveStream). Blocks equal to the previous one are kept. A
// Pipeline is not safe for concurrent use.
type Pipeline struct {
	opts    PipelineOptions
	strip   *Stripper
	chunker *Chunker
	dirs    DirectiveStream
	visible strings.Builder // the stripped text so far, for Partial
	held    strings.Builder // the whole stripped text, without a chunker
}

// NewPipeline returns a pipeline; nil options mean the defaults.
func NewPipeline(opts *PipelineOptions) *Pipeline {
	p := &Pipeline{}
	if opts != nil {
		p.opts = *opts
	}
	p.strip = NewStripper(&p.opts.Tags)
	if p.opts.Chunking != nil {
		p.chunker = NewChunker(*p.opts.Chunking)
	}
	p.dirs.CurrentMessageID = p.opts.CurrentMessageID
	return p
}

// Write takes the next text delta and returns the payloads ready to send.
func (p *Pipeline) Write(delta string) []Payload {
	text := p.strip.Write(delta)
	p.visible.WriteString(text)
	if p.chunker == nil {
		p.held.WriteString(text)
		return nil
	}
	p.chunker.Write(text)
	var out []Payload
	p.chunker.DrainFunc(false, func(b string) { out = p.block(out, b, false) })
	return out
}

// Flush ends the message: it returns the remaining payloads and resets the
// pipeline for the next message.
func (p *Pipeline) Flush() []Payload {
	text := p.strip.Flush()
	p.visible.WriteString(text)
	var out []Payload
	if p.chunker == nil {
		p.held.WriteString(text)
		out = p.block(out, p.held.String(), false)
	} else {
		p.chunker.Write(text)
		p.chunker.DrainFunc(true, func(b string) { out = p.block(out, b, false) })
	}
	out = p.block(out, "", true) // whatever the directive stream held back
	p.Reset()
	return out
}

// Break sends what is buffered now, without ending the message: call it
// before a tool starts, so the text before the call reaches the user
// first. Text the stripper or the directive stream cannot decide yet (a
// tag cut in half) stays held.
func (p *Pipeline) Break() []Payload {
	var out []Payload
	if p.chunker == nil {
		out = p.block(out, p.held.String(), false)
		p.held.Reset()
		return out
	}
	p.chunker.DrainFunc(true, func(b string) { out = p.block(out, b, false) })
	return out
}

// Partial returns the reply as a person should see it so far (for a
// preview that is edited in place): tags stripped, directives removed, an
// unfinished trailing "[[" left out. It re-reads the whole message, so a
// caller previewing a long reply should call it at a bounded rate, not per
// delta.
func (p *Pipeline) Partial() string {
	s := p.visible.String()
	if k := strings.LastIndex(s, "[["); k >= 0 && !strings.Contains(s[k:], "]]") {
		s = s[:k]
	}
	return ParseDirectives(s, &DirectiveOptions{CurrentMessageID: p.opts.CurrentMessageID}).Text
}

// Reset forgets the current message.
func (p *Pipeline) Reset() {
	p.strip.Reset()
	if p.chunker != nil {
		p.chunker.Reset()
	}
	p.dirs.Reset()
	p.visible.Reset()
	p.held.Reset()
}

func (p *Pipeline) block(out []Payload, b string, final bool) []Payload {
	b = strings.TrimRight(b, " \t\r\n")
	if b == "" && !final {
		return out
	}
	if b != "" && p.opts.Sent.Duplicate(b) {
		return out
	}
	if pl := p.dirs.Consume(b, final); pl != nil {
		out = append(out, *pl)
	}
	return out
}
