package builtin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/tool"
)

// Limits shared by the file tools.
const (
	// ReadMaxLines is the most lines one read returns.
	ReadMaxLines = 2000
	// ReadMaxBytes is the most bytes of text one read, grep or find
	// returns, 50 KiB.
	ReadMaxBytes = 51200
	// ReadMaxLineChars is where read cuts a long line, in characters.
	ReadMaxLineChars = 2000
	// ReadMaxImageBytes is the largest image read sends to a model; a
	// larger PNG, JPEG or GIF is scaled down until it fits.
	ReadMaxImageBytes = 5 << 20
	// GrepMaxLineChars is where grep cuts a long line, in characters.
	GrepMaxLineChars = 500
	// GrepDefaultLimit, FindDefaultLimit and LsDefaultLimit are the default
	// result limits of grep, find and ls.
	GrepDefaultLimit = 100
	FindDefaultLimit = 1000
	LsDefaultLimit   = 500
)

// New returns the file tools over ws, in the order read, write, edit, grep,
// find, ls. A read-only workspace gets no write or edit. bash has its own
// constructor.
func New(ws *Workspace) []tool.Tool {
	tools := []tool.Tool{NewRead(ws)}
	if !ws.ReadOnly() {
		tools = append(tools, NewWrite(ws), NewEdit(ws))
	}
	return append(tools, NewGrep(ws), NewFind(ws), NewLs(ws))
}

// detailsJSON marshals tool details; they are informational, so a failure
// yields none rather than an error.
func detailsJSON(v any) json.RawMessage {
	b, err := llm.MarshalJSON(v)
	if err != nil {
		return nil
	}
	return b
}

// pathError turns an error about path p into text for the model.
func pathError(p string, err error) error {
	var esc *EscapeError
	switch {
	case errors.As(err, &esc), errors.Is(err, ErrReadOnly):
		return err
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s does not exist; check the path (find or ls can locate files)", p)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s: permission denied", p)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %v", p, pe.Err)
	}
	return err
}

// checkRegular refuses what is neither a regular file nor a directory
// (a FIFO would block the tool forever, a device never ends).
func checkRegular(p string, fi fs.FileInfo) error {
	if fi.Mode().IsRegular() || fi.IsDir() {
		return nil
	}
	return fmt.Errorf("%s is not a regular file (%s); the file tools work on regular files only", p, fi.Mode().Type())
}

// schemaOf is the arguments schema of a built-in tool, derived from its
// arguments type (tool.SchemaFor: descriptions in jsonschema tags, optional
// fields omitempty); refine sets what tags cannot say (minimums). It is
// built on first use, so that importing the package costs no reflection.
func schemaOf[In any](refine func(*jsonschema.Schema)) func() json.RawMessage {
	return sync.OnceValue(func() json.RawMessage {
		s, err := tool.SchemaFor[In]()
		if err != nil {
			panic(err) // the argument types are ours
		}
		if refine != nil {
			refine(s)
		}
		b, err := llm.MarshalJSON(s)
		if err != nil {
			panic(err)
		}
		return b
	})
}

// atLeast sets the minimum of integer properties of s.
func atLeast(n float64, props ...string) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) {
		for _, p := range props {
			s.Properties[p].Minimum = &n
		}
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// fileLocks serialises writes and edits of one file within the process.
// The agent loop already runs them one at a time, but several runs (or
// sessions of a gateway) may share a workspace, and an edit reads, changes
// and writes back: two interleaved would lose one.
var fileLocks struct {
	mu sync.Mutex
	m  map[string]*fileLock
}

type fileLock struct {
	mu   sync.Mutex
	refs int
}

// lockFile locks the real path p for a mutation and returns the unlock.
func lockFile(p string) (unlock func()) {
	fileLocks.mu.Lock()
	if fileLocks.m == nil {
		fileLocks.m = make(map[string]*fileLock)
	}
	l := fileLocks.m[p]
	if l == nil {
		l = &fileLock{}
		fileLocks.m[p] = l
	}
	l.refs++
	fileLocks.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		fileLocks.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(fileLocks.m, p)
		}
		fileLocks.mu.Unlock()
	}
}
