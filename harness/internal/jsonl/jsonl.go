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

// Proc is a running engine process with its stdin and stdout, for a
// caller that frames them itself (an ACP connection).
type Proc struct {
	cmd  *proc.Command
	kill context.CancelFunc
	// Stdin and Stdout are the engine's.
	Stdin  io.WriteCloser
	Stdout io.Reader

	errMu  sync.Mutex
	stderr []byte
	once   sync.Once
}

// StartProc starts name with args in dir; env nil means this process's.
func StartProc(name string, args []string, dir string, env []string) (*Proc, error) {
	kctx, kill := context.WithCancel(context.Background())
	cmd := proc.CommandContext(kctx, name, args...)
	cmd.Cmd.Dir, cmd.Cmd.Env = dir, env
	cmd.Cmd.WaitDelay = 2 * time.Second
	p := &Proc{cmd: cmd, kill: kill}
	var err error
	if p.Stdin, err = cmd.Cmd.StdinPipe(); err != nil {
		kill()
		return nil, err
	}
	if p.Stdout, err = cmd.Cmd.StdoutPipe(); err != nil {
		kill()
		return nil, err
	}
	cmd.Cmd.Stderr = (*stderrSink)(p)
	if err := cmd.Start(); err != nil {
		kill()
		return nil, err
	}
	return p, nil
}

// Kill stops the engine's whole process tree.
func (p *Proc) Kill() { p.kill() }

// Stderr returns the start of what the engine wrote to stderr.
func (p *Proc) Stderr() string {
	p.errMu.Lock()
	defer p.errMu.Unlock()
	return string(p.stderr)
}

// Wait closes stdin, waits up to grace for the engine to exit (its stdout
// must be read to its end or abandoned by then), kills what is left, and
// reaps it. It returns the exit error; later calls return nil.
func (p *Proc) Wait(grace time.Duration, drained <-chan struct{}) error {
	var err error
	p.once.Do(func() {
		p.Stdin.Close()
		t := time.AfterFunc(grace, p.kill)
		if drained != nil {
			<-drained
		}
		err = p.cmd.Cmd.Wait()
		t.Stop()
		p.cmd.Sweep(false, 2*time.Second)
		p.kill()
	})
	return err
}

// Conn is a running engine that speaks JSON lines.
type Conn struct {
	*Proc
	// Lines are the engine's stdout lines, closed at its end.
	Lines <-chan []byte

	inMu sync.Mutex
	stop chan struct{}
	read chan struct{}
}

// Start starts name with args in dir; env nil means this process's.
func Start(name string, args []string, dir string, env []string) (*Conn, error) {
	p, err := StartProc(name, args, dir, env)
	if err != nil {
		return nil, err
	}
	c := &Conn{Proc: p, stop: make(chan struct{}), read: make(chan struct{})}
	lines := make(chan []byte)
	c.Lines = lines
	go func() {
		defer close(c.read)
		defer close(lines)
		r := bufio.NewReaderSize(p.Stdout, 64<<10)
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

type stderrSink Proc

func (s *stderrSink) Write(p []byte) (int, error) {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	if room := maxStderr - len(s.stderr); room > 0 {
		s.stderr = append(s.stderr, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// Send writes v as one JSON line.
func (c *Conn) Send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.inMu.Lock()
	defer c.inMu.Unlock()
	_, err = c.Stdin.Write(append(b, '\n'))
	return err
}

// CloseInput closes the engine's stdin: the end of the conversation.
func (c *Conn) CloseInput() {
	c.inMu.Lock()
	defer c.inMu.Unlock()
	c.Stdin.Close()
}

// Close ends the engine: it closes stdin, waits up to grace for it to
// exit, kills what is left, and reaps it. It returns the exit error.
func (c *Conn) Close(grace time.Duration) error {
	c.inMu.Lock()
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	c.inMu.Unlock()
	return c.Wait(grace, c.read)
}
