package compact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/agentloop/agentloop/llm"
)

// Summariser defaults.
const (
	// DefaultSummaryAttempts is how many times one summariser call is
	// tried.
	DefaultSummaryAttempts = 3
	// SummaryRetryBase and SummaryRetryMax bound the wait between tries;
	// it doubles from the base, ±20% jitter.
	SummaryRetryBase = 500 * time.Millisecond
	SummaryRetryMax  = 5 * time.Second
	// MaxSummaryChars caps a summary, file lists included.
	MaxSummaryChars = 16_000
	// minMessagesForStages is the least history summarised in stages.
	minMessagesForStages = 4
	// maxSerialisedResultChars caps each tool result in the summariser's
	// input: the model needs what was learnt, not the whole output.
	maxSerialisedResultChars = 2_000
)

// Summarizer condenses history into a structured summary by calling a
// model with no tools. A cheaper model than the agent's may be used.
type Summarizer struct {
	// Model writes the summaries.
	Model llm.Model
	// Window is Model's context window in tokens; it sizes the chunks.
	Window int
	// Options are sent with every call (MaxTokens, Thinking...). Tools
	// are never sent.
	Options llm.Options
	// Instructions tune what the summary must keep.
	Instructions Instructions
	// Parts is how many parts long history is split into and summarised
	// separately before a merge; 0 means DefaultParts.
	Parts int
	// Attempts is how many times each call is tried; 0 means
	// DefaultSummaryAttempts.
	Attempts int
	// Sleep waits between tries; nil waits on a timer. It must return
	// ctx's error if ctx ends first.
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter returns a number in [0, 1); nil uses math/rand/v2.
	Jitter func() float64
}

// SummaryError is a summary that could not be written: the last cause
// and the number of tries.
type SummaryError struct {
	Attempts int
	Err      error
}

func (e *SummaryError) Error() string {
	return fmt.Sprintf("summary generation failed after %d attempt(s): %v", e.Attempts, e.Err)
}

// Unwrap returns the last cause.
func (e *SummaryError) Unwrap() error { return e.Err }

// Summarize returns a summary of msgs, folding in previous (the summary of
// what came before them) when it is not empty. Messages over half the
// window are replaced by an omission note. History that does not fit one
// call is chunked (each chunk's summary feeds the next), and long history
// is summarised in parts and then merged.
func (s *Summarizer) Summarize(ctx context.Context, msgs []llm.Message, previous string) (string, error) {
	if s.Model == nil {
		return "", errors.New("compact: Summarizer has no Model: set one, or leave the Compactor's Summarizer nil to prune instead")
	}
	window := s.Window
	msgs = omitOversized(msgs, window)
	maxChunk := MaxChunkTokens(msgs, window)
	parts := s.Parts
	if parts == 0 {
		parts = DefaultParts
	}
	parts = normalizeParts(parts, len(msgs))
	if parts <= 1 || len(msgs) < minMessagesForStages || MessagesTokens(msgs) <= maxChunk {
		return s.chained(ctx, msgs, previous, maxChunk)
	}
	var partials []string
	for _, part := range SplitByTokenShare(msgs, parts) {
		sum, err := s.chained(ctx, part, "", maxChunk)
		if err != nil {
			return "", err
		}
		partials = append(partials, sum)
	}
	return s.call(ctx, mergePrompt(partials, previous, s.Instructions.Build()))
}

// chained summarises chunk after chunk, each call given the summary so
// far.
func (s *Summarizer) chained(ctx context.Context, msgs []llm.Message, previous string, maxChunk int) (string, error) {
	summary := previous
	for _, chunk := range ChunkByMaxTokens(msgs, maxChunk) {
		next, err := s.call(ctx, summaryPrompt(chunk, summary, s.Instructions.Build()))
		if err != nil {
			return "", err
		}
		summary = next
	}
	if strings.TrimSpace(summary) == "" {
		return "", errors.New("compact: nothing to summarise")
	}
	return summary, nil
}

// call runs one summariser request with retries.
func (s *Summarizer) call(ctx context.Context, prompt string) (string, error) {
	attempts := s.Attempts
	if attempts <= 0 {
		attempts = DefaultSummaryAttempts
	}
	var err error
	tried := 0
	for tried < attempts {
		if tried > 0 {
			if werr := s.sleep(ctx, s.backoff(tried)); werr != nil {
				return "", werr
			}
		}
		var text string
		text, err = s.once(ctx, prompt)
		tried++
		if err == nil {
			return text, nil
		}
		if !retryable(ctx, err) {
			break
		}
	}
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	return "", &SummaryError{Attempts: tried, Err: err}
}

func (s *Summarizer) backoff(retry int) time.Duration {
	d := min(SummaryRetryBase<<(retry-1), SummaryRetryMax)
	j := rand.Float64
	if s.Jitter != nil {
		j = s.Jitter
	}
	return time.Duration(float64(d) * (0.8 + 0.4*j()))
}

func (s *Summarizer) sleep(ctx context.Context, d time.Duration) error {
	if s.Sleep != nil {
		return s.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// retryable reports whether another try may succeed: not after an abort
// or a timeout, nor when the provider refused for a reason a retry does
// not change.
func retryable(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	switch llm.ReasonOf(err) {
	case llm.ReasonTimeout, llm.ReasonContextOverflow, llm.ReasonAuth, llm.ReasonAuthPermanent,
		llm.ReasonBilling, llm.ReasonModelNotFound, llm.ReasonFormat:
		return false
	}
	return true
}

// once streams one summariser reply and returns its text.
func (s *Summarizer) once(ctx context.Context, prompt string) (string, error) {
	opts := s.Options
	opts.ToolChoice = ""
	req := &llm.Request{
		SystemPrompt: summarySystemPrompt,
		Messages:     []llm.Message{llm.UserText(prompt)},
		Options:      opts,
	}
	var final *llm.Message
	for ev, err := range s.Model.Stream(ctx, req) {
		if err != nil {
			return "", err
		}
		switch ev.Type {
		case llm.EventDone:
			final = ev.Message
		case llm.EventError:
			if ev.Err != nil {
				return "", ev.Err
			}
			if ev.Message != nil && ev.Message.ErrorMessage != "" {
				return "", errors.New(ev.Message.ErrorMessage)
			}
			return "", errors.New("summariser stream failed without a cause")
		}
	}
	if final == nil {
		return "", errors.New("summariser stream ended without a reply")
	}
	text := strings.TrimSpace(final.Text())
	if text == "" {
		return "", errors.New("summariser returned an empty summary")
	}
	return text, nil
}

// omitOversized replaces each message over half the window with a note
// of what was left out, keeping its role (and a tool result's call id).
func omitOversized(msgs []llm.Message, window int) []llm.Message {
	var out []llm.Message
	for i := range msgs {
		if !IsOversizedForSummary(&msgs[i], window) {
			continue
		}
		if out == nil {
			out = append([]llm.Message(nil), msgs...)
		}
		m := msgs[i]
		note := fmt.Sprintf("[Large %s message (about %dK tokens) left out of the summary]",
			m.Role, (MessageTokens(&m)+500)/1000)
		out[i] = llm.Message{Role: m.Role, ToolCallID: m.ToolCallID, ToolName: m.ToolName,
			Content: []llm.Content{llm.Text(note)}, Timestamp: m.Timestamp, StopReason: m.StopReason}
	}
	if out == nil {
		return msgs
	}
	return out
}

const summarySystemPrompt = "You condense conversations between a user and an AI assistant that uses tools. " +
	"The assistant will continue the work from your summary alone, so keep everything it needs and nothing else. " +
	"Never answer or continue the conversation: write only the summary."

const summaryFormat = `Write the summary in exactly these sections:

## Goal
What the user wants, in their terms.

## Constraints & Preferences
Requirements, rules and preferences the user stated.

## Progress
### Done
### In Progress
### Blocked

## Key Decisions
Each decision and why it was made.

## Next Steps
What remains, in order.

## Critical Context
Facts the work depends on: exact file paths, function names, commands, error messages, values.`

// SerializeConversation renders messages as plain text for a summariser,
// so it reads them as a record rather than a conversation to continue.
func SerializeConversation(msgs []llm.Message) string {
	var b strings.Builder
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case llm.RoleUser:
			writeLine(&b, "[User]", m.Text())
		case llm.RoleAssistant:
			for _, c := range m.Content {
				switch c.Type {
				case llm.ContentThinking:
					writeLine(&b, "[Assistant thinking]", c.Thinking)
				case llm.ContentText:
					writeLine(&b, "[Assistant]", c.Text)
				}
			}
			var calls []string
			for _, c := range m.ToolCalls() {
				calls = append(calls, c.Name+"("+string(c.Arguments)+")")
			}
			if len(calls) > 0 {
				writeLine(&b, "[Assistant tool calls]", strings.Join(calls, "; "))
			}
		case llm.RoleToolResult:
			text, _ := TruncateText(m.Text(), maxSerialisedResultChars, TruncateOptions{MinKeep: -1})
			label := "[Tool result]"
			if m.IsError {
				label = "[Tool error]"
			}
			writeLine(&b, label, text)
		}
	}
	return b.String()
}

func writeLine(b *strings.Builder, label, text string) {
	if strings.TrimSpace(text) == "" {
		return
	}
	b.WriteString(label)
	b.WriteString(": ")
	b.WriteString(text)
	b.WriteString("\n\n")
}

func summaryPrompt(msgs []llm.Message, previous, extra string) string {
	var b strings.Builder
	b.WriteString("<conversation>\n")
	b.WriteString(SerializeConversation(msgs))
	b.WriteString("</conversation>\n\n")
	if previous != "" {
		b.WriteString("<previous-summary>\n")
		b.WriteString(previous)
		b.WriteString("\n</previous-summary>\n\n")
		b.WriteString("The previous summary covers what came before this conversation. Write one summary of both: " +
			"keep what still holds, add what is new, move finished work from In Progress to Done and bring Next Steps up to date.\n\n")
	} else {
		b.WriteString("Summarise the conversation above.\n\n")
	}
	b.WriteString(summaryFormat)
	if extra != "" {
		b.WriteString("\n\n")
		b.WriteString(extra)
	}
	return b.String()
}

func mergePrompt(partials []string, previous, extra string) string {
	var b strings.Builder
	if previous != "" {
		b.WriteString("<previous-summary>\n")
		b.WriteString(previous)
		b.WriteString("\n</previous-summary>\n\n")
	}
	for i, p := range partials {
		fmt.Fprintf(&b, "<part-summary index=\"%d\">\n%s\n</part-summary>\n\n", i+1, p)
	}
	b.WriteString("These summaries cover consecutive parts of one conversation, oldest first")
	if previous != "" {
		b.WriteString(", after the previous summary")
	}
	b.WriteString(". Merge them into one summary. Where they disagree the later part wins. " +
		"Be sure to keep the tasks still active and their state, progress through any batch of work, " +
		"the user's latest request, decisions and their reasons, open TODOs and questions, and anything promised to the user.\n\n")
	b.WriteString(summaryFormat)
	if extra != "" {
		b.WriteString("\n\n")
		b.WriteString(extra)
	}
	return b.String()
}

// FileLists are the files the summarised history read and changed.
type FileLists struct {
	Read     []string `json:"readFiles,omitempty"`
	Modified []string `json:"modifiedFiles,omitempty"`
}

// Tool names whose "path" argument FileOps collects.
var (
	readTools   = map[string]bool{"read": true, "read_file": true, "view": true}
	modifyTools = map[string]bool{"write": true, "edit": true, "write_file": true, "edit_file": true, "multiedit": true}
)

// FileOps collects the paths that tool calls in msgs read and modified,
// added to prev. A modified file is not listed as read.
func FileOps(msgs []llm.Message, prev FileLists) FileLists {
	read := map[string]bool{}
	mod := map[string]bool{}
	for _, p := range prev.Read {
		read[p] = true
	}
	for _, p := range prev.Modified {
		mod[p] = true
	}
	for i := range msgs {
		for _, c := range msgs[i].ToolCalls() {
			if !readTools[c.Name] && !modifyTools[c.Name] {
				continue
			}
			var args map[string]any
			if json.Unmarshal(c.Arguments, &args) != nil {
				continue
			}
			for _, key := range []string{"path", "file_path", "filePath"} {
				if p, ok := args[key].(string); ok && p != "" {
					if modifyTools[c.Name] {
						mod[p] = true
					} else {
						read[p] = true
					}
					break
				}
			}
		}
	}
	var out FileLists
	for p := range read {
		if !mod[p] {
			out.Read = append(out.Read, p)
		}
	}
	for p := range mod {
		out.Modified = append(out.Modified, p)
	}
	slices.Sort(out.Read)
	slices.Sort(out.Modified)
	return out
}

// withFiles appends the file lists to a summary and caps it at
// MaxSummaryChars.
func withFiles(summary string, files FileLists) string {
	var b strings.Builder
	b.WriteString(summary)
	if len(files.Read) > 0 {
		b.WriteString("\n\n<read-files>\n")
		b.WriteString(strings.Join(files.Read, "\n"))
		b.WriteString("\n</read-files>")
	}
	if len(files.Modified) > 0 {
		b.WriteString("\n\n<modified-files>\n")
		b.WriteString(strings.Join(files.Modified, "\n"))
		b.WriteString("\n</modified-files>")
	}
	out, _ := TruncateText(b.String(), MaxSummaryChars, TruncateOptions{MinKeep: -1})
	return out
}
