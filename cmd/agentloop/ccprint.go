package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/runner"
	"github.com/agentloop/agentloop/session"
)

// resumeLatest is the value of a bare --resume (or --resume=latest): the
// latest session of the directory.
const resumeLatest = "latest"

// addClaudeFlags adds the flags of `claude -p` that have no name of ours.
func addClaudeFlags(fl *pflag.FlagSet, f *runFlags) {
	fl.StringVar(&f.outputFormat, "output-format", formatText, "text, json (one result object at the end) or stream-json (one JSON line per message), as claude -p writes them; --json is our own protocol")
	fl.StringVar(&f.inputFormat, "input-format", formatText, "text, or stream-json: user messages as claude -p reads them, one JSON line each on stdin, run as turns of one session (a line that comes while a turn runs steers it)")
	fl.BoolVar(&f.verbose, "verbose", false, "also show each tool's result on stderr")
	fl.StringSliceVar(&f.tools, "allowed-tools", nil, "same as --tools")
	fl.StringSliceVar(&f.tools, "allowedTools", nil, "same as --tools")
	fl.StringSliceVar(&f.disallowedTools, "disallowed-tools", nil, "never offer these tools (comma-separated)")
	fl.StringSliceVar(&f.disallowedTools, "disallowedTools", nil, "same as --disallowed-tools")
	fl.StringVarP(&f.resume, "resume", "r", "", "continue the session with this id or prefix; without one, the latest of this directory")
	fl.Lookup("resume").NoOptDefVal = resumeLatest
	fl.BoolVarP(&f.print, "print", "p", false, "print mode (what run does; for claude -p habits)")
	for _, n := range []string{"allowedTools", "disallowedTools", "print"} {
		_ = fl.MarkHidden(n)
	}
}

// claudeFlags checks the Claude Code flags and turns --resume into
// --session or --continue. A bare --resume followed by a word that names a
// session takes that word as its id (pflag gives an optional value only
// with "=").
func claudeFlags(f *runFlags, home string, args *[]string) error {
	for _, v := range []string{f.outputFormat, f.inputFormat} {
		if !slices.Contains([]string{formatText, formatJSON, formatStreamJSON}, v) {
			return fmt.Errorf("--output-format / --input-format %q: use text, json or stream-json", v)
		}
	}
	switch {
	case f.inputFormat == formatJSON:
		return errors.New("--input-format json: use text or stream-json")
	case f.inputFormat == formatStreamJSON && f.outputFormat != formatStreamJSON:
		return errors.New("--input-format stream-json needs --output-format stream-json")
	case f.inputFormat == formatStreamJSON && len(*args) > 0:
		return errors.New("--input-format stream-json reads the prompts from stdin: give no prompt argument")
	case f.json && f.outputFormat != formatText:
		return errors.New("use --json (our protocol) or --output-format, not both")
	}
	switch {
	case f.resume == "":
	case f.resume == resumeLatest:
		store := session.NewJSONLStore(sessionsDir(f, home))
		if len(*args) > 0 && !strings.ContainsAny((*args)[0], " \t\n/") {
			if _, err := store.Resolve((*args)[0]); err == nil {
				f.session, *args = (*args)[0], (*args)[1:]
				return nil
			}
		}
		f.cont = true
	default:
		f.session = f.resume
	}
	return nil
}

// printSetupError writes a run's failure to start as one JSON line in json
// and stream-json output, where a script reads stdout only.
func printSetupError(env *cliEnv, f *runFlags, err error) error {
	if err == nil || f.resultShown || f.outputFormat == formatText || f.outputFormat == "" {
		return err
	}
	msg := err.Error()
	var ee exitError
	if errors.As(err, &ee) {
		msg = ee.msg
	}
	ccSetupError(env.stdout, msg)
	return err
}

// runClaudeFormat runs print mode with --output-format json or
// stream-json: one run, or with --input-format stream-json one turn per
// line of stdin.
func runClaudeFormat(ctx context.Context, env *cliEnv, f *runFlags, rn *runner.Runner, q runner.Request, info llm.ModelInfo, home string) error {
	cp := newCCPrinter(env, f.outputFormat, f.verbose, info.Provider+"/"+info.ID)
	if f.inputFormat != formatStreamJSON {
		q.OnEvent = cp.event
		res, err := rn.Run(ctx, q)
		if err != nil {
			return startFailure(ctx, err, home)
		}
		cp.finish(res, "")
		f.resultShown = true
		return runOutcome(ctx, res)
	}
	q.OnEvent = nil // the events come from Run.Events
	lines := make(chan string)
	quit := make(chan struct{})
	defer close(quit) // the reader stops at its next line
	go readUserLines(env, lines, quit)
	var pending []string
	var last runner.Result
	turns := 0
	for {
		var text string
		if len(pending) > 0 {
			text, pending = pending[0], pending[1:]
		} else {
			var ok bool
			select {
			case text, ok = <-lines:
			case <-ctx.Done():
			}
			if !ok {
				break
			}
		}
		if text == "" {
			break
		}
		q.Prompt = text
		run, err := rn.Start(ctx, q)
		if err != nil {
			return startFailure(ctx, err, home)
		}
		// Lines that come while the turn runs steer it; one that comes
		// as it ends is the next turn.
		stop, steered := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(steered)
			for {
				select {
				case l, ok := <-lines:
					if !ok {
						lines = nil
						return
					}
					if !run.Steer(l) {
						pending = append(pending, l)
						return
					}
				case <-stop:
					return
				}
			}
		}()
		for ev := range run.Events() {
			cp.event(ev)
		}
		close(stop)
		<-steered
		res, err := run.Wait()
		if err != nil {
			return startFailure(ctx, err, home)
		}
		cp.finish(res, "")
		f.resultShown = true
		last, turns = res, turns+1
		if res.SessionID != "" {
			q.Session = runner.SessionSpec{Cwd: q.Session.Cwd, ID: res.SessionID, Opened: q.Session.Opened}
		} else {
			q.History = append(q.History, res.Messages...)
		}
		if !res.OK() || lines == nil && len(pending) == 0 {
			break
		}
	}
	if turns == 0 {
		return usageError{errors.New("--input-format stream-json: no user message on stdin")}
	}
	return runOutcome(ctx, last)
}

// startFailure is the error of a run that could not start.
func startFailure(ctx context.Context, err error, home string) error {
	if ctx.Err() != nil {
		return exitError{code: exitInterrupted, msg: "interrupted"}
	}
	msg := describeError(err)
	if hint := homeWriteHint(err, home); hint != "" {
		msg += "\n" + hint
	}
	return exitError{code: exitFailed, msg: msg}
}

// ccUserLine is a line of --input-format stream-json.
type ccUserLine struct {
	Type    string `json:"type"`
	Message struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"message"`
}

// readUserLines sends the text of each user message on stdin to lines and
// closes it at the end of stdin. A line that is not a user message is
// reported on stderr and skipped.
func readUserLines(env *cliEnv, lines chan<- string, quit <-chan struct{}) {
	defer close(lines)
	sc := bufio.NewScanner(env.stdin)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	for n := 1; sc.Scan(); n++ {
		raw := strings.TrimSpace(sc.Text())
		if raw == "" {
			continue
		}
		text, err := userLineText([]byte(raw))
		if err != nil {
			fmt.Fprintf(env.stderr, "agentloop: stdin line %d: %v (skipped)\n", n, err)
			continue
		}
		select {
		case lines <- text:
		case <-quit:
			return
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(env.stderr, "agentloop: reading stdin: %v\n", err)
	}
}

// userLineText is the text of one user-message line: its content as a
// string, or the text blocks of its content joined.
func userLineText(raw []byte) (string, error) {
	var l ccUserLine
	if err := json.Unmarshal(raw, &l); err != nil {
		return "", fmt.Errorf("not JSON: %w", err)
	}
	if l.Type != "user" || l.Message.Role != "" && l.Message.Role != "user" {
		return "", fmt.Errorf(`want {"type":"user","message":{"role":"user","content":...}}, got type %q`, l.Type)
	}
	var s string
	if json.Unmarshal(l.Message.Content, &s) == nil {
		if strings.TrimSpace(s) == "" {
			return "", errors.New("empty message")
		}
		return s, nil
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(l.Message.Content, &blocks); err != nil {
		return "", errors.New("content is neither a string nor a list of blocks")
	}
	var parts []string
	for _, b := range blocks {
		if b.Type != "text" {
			return "", fmt.Errorf("a %q block: only text is read from stdin", b.Type)
		}
		parts = append(parts, b.Text)
	}
	if strings.TrimSpace(strings.Join(parts, "")) == "" {
		return "", errors.New("empty message")
	}
	return strings.Join(parts, "\n"), nil
}
