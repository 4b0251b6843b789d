package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// homeWriteHint is the advice for an error writing under the agentloop
// home (a read-only $AGENTLOOP_HOME, one owned by someone else), "" for
// any other error.
func homeWriteHint(err error, home string) string {
	if home == "" || !(errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)) {
		return ""
	}
	var pe *fs.PathError
	var le *os.LinkError
	p := ""
	switch {
	case errors.As(err, &pe):
		p = pe.Path
	case errors.As(err, &le):
		p = le.New
	}
	rel, rerr := filepath.Rel(home, p)
	if p == "" || rerr != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return ""
	}
	return "agentloop cannot write to its home " + home + " (sessions, auth state): run with --no-session, or set AGENTLOOP_HOME to a directory you can write"
}
