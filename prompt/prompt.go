package prompt

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentloop/agentloop/llm"
)

// Options say what goes into a system prompt.
type Options struct {
	// Tools are the tools the model is offered, named in the default prompt.
	Tools []llm.ToolSpec
	// Workspace is the root the agent works in (absolute).
	Workspace string
	// Home is agentloop's data directory ($AGENTLOOP_HOME); its AGENTS.md
	// applies to every workspace. Empty skips it.
	Home string
	// Now is the date the prompt states; zero means time.Now().
	Now time.Time
	// Replace, when non-empty, is used instead of the default prompt. The
	// instruction files and Append still follow it.
	Replace string
	// Append is added at the end.
	Append string
	// NoContextFiles skips AGENTS.md and CLAUDE.md files.
	NoContextFiles bool
}

// ContextFileNames are the instruction files looked for in each directory,
// in order of preference: the first one present is used.
var ContextFileNames = []string{"AGENTS.md", "CLAUDE.md"}

// ContextFile is one instruction file included in a prompt.
type ContextFile struct {
	Path    string
	Content string
}

// Build returns the system prompt and the instruction files it included.
func Build(opts Options) (string, []ContextFile, error) {
	var b strings.Builder
	if opts.Replace != "" {
		b.WriteString(strings.TrimSpace(opts.Replace))
	} else {
		writeDefault(&b, opts)
	}
	var files []ContextFile
	if !opts.NoContextFiles {
		var err error
		files, err = FindContextFiles(opts.Home, opts.Workspace)
		if err != nil {
			return "", nil, err
		}
	}
	if len(files) > 0 {
		b.WriteString("\n\n# Project instructions\n\nThese files were written by the user for you. Follow them; later files are more specific than earlier ones.\n")
		for _, f := range files {
			fmt.Fprintf(&b, "\n## %s\n\n%s\n", f.Path, strings.TrimSpace(f.Content))
		}
	}
	if a := strings.TrimSpace(opts.Append); a != "" {
		b.WriteString("\n\n")
		b.WriteString(a)
	}
	return b.String(), files, nil
}

func writeDefault(b *strings.Builder, opts Options) {
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	b.WriteString("You are a capable assistant running inside agentloop, an agent runtime. ")
	b.WriteString("You help the user by reading, searching and changing files and running commands with the tools below, then answering plainly.\n\n")
	if len(opts.Tools) > 0 {
		b.WriteString("Tools available:\n")
		for _, t := range opts.Tools {
			desc := t.Description
			if i := strings.IndexByte(desc, '\n'); i >= 0 {
				desc = desc[:i]
			}
			fmt.Fprintf(b, "- %s: %s\n", t.Name, strings.TrimSpace(desc))
		}
		b.WriteString("\nUse tools to look before you answer questions about files; do not guess their contents. ")
		b.WriteString("Prefer several independent read-only calls at once over one after another. ")
		b.WriteString("When a tool fails, read its error and change course instead of repeating the same call.\n\n")
	} else {
		b.WriteString("No tools are available in this run: answer from the conversation alone.\n\n")
	}
	b.WriteString("Be concise. Show file paths relative to the working directory.\n\n")
	if opts.Workspace != "" {
		fmt.Fprintf(b, "Working directory: %s\n", opts.Workspace)
	}
	fmt.Fprintf(b, "Current date: %s", now.Format("2006-01-02 (Monday)"))
}

// FindContextFiles returns the instruction files that apply to workspace:
// the one in home first, then those of workspace's ancestors from the
// outermost down to workspace itself, so that the most specific comes last.
// In each directory AGENTS.md is preferred over CLAUDE.md.
func FindContextFiles(home, workspace string) ([]ContextFile, error) {
	var dirs []string
	if home != "" {
		dirs = append(dirs, home)
	}
	if workspace != "" {
		var chain []string
		for d := filepath.Clean(workspace); ; d = filepath.Dir(d) {
			chain = append(chain, d)
			if filepath.Dir(d) == d {
				break
			}
		}
		for i := len(chain) - 1; i >= 0; i-- {
			dirs = append(dirs, chain[i])
		}
	}
	var files []ContextFile
	seen := map[string]bool{}
	for _, d := range dirs {
		for _, name := range ContextFileNames {
			p := filepath.Join(d, name)
			if seen[p] {
				break
			}
			if fi, err := os.Stat(p); err == nil && !fi.Mode().IsRegular() {
				continue // a directory (or a FIFO) of that name is not instructions
			}
			data, err := os.ReadFile(p)
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("read instructions %s: %w", p, err)
			}
			seen[p] = true
			files = append(files, ContextFile{Path: p, Content: string(data)})
			break
		}
	}
	return files, nil
}
