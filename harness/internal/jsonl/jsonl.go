// Package jsonl runs an engine that speaks JSON lines on its stdin and
// stdout (Claude Code's stream-json, pi's rpc mode) as one child process
// tree owned by internal/proc.
package jsonl

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/agentloop/agentloop/internal/proc"
)

// maxStderr bounds the stderr kept for error messages.
const maxStderr = 16 << 10

// Conn is a running engine.
type Conn struct {
	cmd  *proc.Command
	kill context.CancelFunc
	in   io.WriteCloser
	// Lines are the engine's stdout lines, closed at its end.
	Lines <-chan []byte

	inMu   sync.Mutex
	stop   chan struct{}
	once   sync.Once
	read   chan struct{}
	errMu  sync.Mutex
	stderr []byte
}

// Start starts name with args in dir; env nil means this process's.
func Start(name string, args []string, dir string, env []string) (*Conn, error) {
	kctx, kill := context.WithCancel(context.Background())
	cmd := proc.CommandContext(kctx, name, args...)
	cmd.Cmd.Dir, cmd.Cmd.Env = dir, env
	cmd.Cmd.WaitDelay = 2 * time.Second
	in, err := cmd.Cmd.StdinPipe()
	if err != nil {
		kill()
		return nil, err
	}
	out, err := cmd.Cmd.StdoutPipe()
	if err != nil {
		kill()
		return nil, err
	}
	c := &Conn{cmd: cmd, kill: kill, in: in, stop: make(chan struct{}), read: make(chan struct{})}
	cmd.Cmd.Stderr = (*stderrSink)(c)
	if err := cmd.Start(); err != nil {
		kill()
		return nil, err
	}
	lines := make(chan []byte)
	c.Lines = lines
	go func() {
		defer close(c.read)
		defer close(lines)
		r := bufio.NewReaderSize(out, 64<<10)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 1 {
				select {
				case lines <- line:
				case <-c.stop:
					io.Copy(io.Discard, r)
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return c, nil
}

type stderrSink Conn

func (s *stderrSink) Write(p []byte) (int, error) {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	if room := maxStderr - len(s.stderr); room > 0 {
		s.stderr = append(s.stderr, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// Stderr returns the start of what the engine wrote to stderr.
func (c *Conn) Stderr() string {
	c.errMu.Lock()
	defer c.errMu.Unlock()
	return string(c.stderr)
}

// Send writes v as one JSON line.
func (c *Conn) Send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.inMu.Lock()
	defer c.inMu.Unlock()
	_, err = c.in.Write(append(b, '\n'))
	return err
}

// CloseInput closes the engine's stdin: the end of the conversation.
func (c *Conn) CloseInput() {
	c.inMu.Lock()
	defer c.inMu.Unlock()
	c.in.Close()
}

// Kill stops the engine's whole process tree.
func (c *Conn) Kill() { c.kill() }

// Close ends the engine: it closes stdin, waits up to grace for it to
// exit, kills what is left, and reaps it. It returns the exit error.
func (c *Conn) Close(grace time.Duration) error {
	var err error
	c.once.Do(func() {
		c.CloseInput()
		t := time.AfterFunc(grace, c.kill)
		close(c.stop)
		<-c.read
		err = c.cmd.Cmd.Wait()
		t.Stop()
		c.cmd.Sweep(false, 2*time.Second)
		c.kill()
	})
	return err
}
