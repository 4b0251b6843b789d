package main

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentloop/agentloop/llm"
)

// Limits on what one @ include may add to a prompt.
const (
	maxIncludeText  = 1 << 20 // a text file
	maxIncludeImage = 5 << 20 // an image (the Anthropic API's limit per image)
)

// includeFiles finds the @ includes of text: a word that starts with "@"
// (at the start, after white space or an opening bracket or quote) and
// names a file of the workspace cwd, with trailing punctuation (the comma
// of "@README.md,") not part of the name. The text itself is kept byte for
// byte; each text file is appended after it, fenced and labelled with its
// path, and each image (png, jpeg, gif, webp, by content) becomes an image
// block. A word that names no file ("@@ -1,2 +1,3 @@", "@someone") is
// just text. A file outside the workspace (an absolute path elsewhere,
// "../", a link leading out) is refused: files are opened through the
// workspace root (os.Root), so no path can escape it.
func includeFiles(text, cwd string) (userPrompt, error) {
	p := userPrompt{text: text}
	if !strings.Contains(text, "@") {
		return p, nil
	}
	root, err := os.OpenRoot(cwd)
	if err != nil {
		return p, fmt.Errorf("open the workspace %s: %w", cwd, err)
	}
	defer root.Close()
	var files strings.Builder
	seen := map[string]bool{}
	for _, word := range includeWords(text) {
		rel, inside := workspacePath(cwd, word)
		if !inside {
			if regularFile(absUnder(cwd, word)) {
				return p, usageError{fmt.Errorf("cannot include @%s: it is outside the workspace %s; only files inside it can be included (copy it in, or run with --cwd set to a directory that holds it)", word, cwd)}
			}
			continue
		}
		if seen[rel] {
			continue
		}
		fi, err := root.Stat(rel)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			if regularFile(absUnder(cwd, word)) { // reachable only through a link out of the workspace
				return p, usageError{fmt.Errorf("cannot include @%s: it leads outside the workspace %s; only files inside it can be included", word, cwd)}
			}
			continue
		case !fi.Mode().IsRegular():
			continue // a directory, a device: text
		}
		seen[rel] = true
		data, mime, err := readInclude(root, rel)
		if err != nil {
			return p, usageError{fmt.Errorf("cannot include @%s: %w", word, err)}
		}
		name := filepath.ToSlash(rel)
		if mime != "" {
			p.images = append(p.images, llm.Image(base64.StdEncoding.EncodeToString(data), mime))
			fmt.Fprintf(&files, "\n\n<file path=%q type=%q>attached as an image</file>", name, mime)
			continue
		}
		fmt.Fprintf(&files, "\n\n<file path=%q>\n%s\n</file>", name, strings.TrimRight(string(data), "\n"))
	}
	p.text += files.String()
	return p, nil
}

// includeWords returns the names of the @ words of text, in order, with
// trailing punctuation taken off.
func includeWords(text string) []string {
	var out []string
	for i := 0; i < len(text); i++ {
		if text[i] != '@' {
			continue
		}
		if i > 0 {
			r, _ := utf8.DecodeLastRuneInString(text[:i])
			if !unicode.IsSpace(r) && !strings.ContainsRune("([{\"'`<", r) {
				continue // user@host, a@b
			}
		}
		end := i + 1
		for end < len(text) {
			r, n := utf8.DecodeRuneInString(text[end:])
			if unicode.IsSpace(r) {
				break
			}
			end += n
		}
		name := strings.TrimRight(text[i+1:end], ".,;:!?)]}\"'`>")
		i = end - 1
		if name != "" {
			out = append(out, name)
		}
	}
	return out
}

// workspacePath returns name relative to the workspace cwd, and whether it
// lies inside it (by its spelling; links are for os.Root to refuse).
func workspacePath(cwd, name string) (string, bool) {
	rel := name
	if filepath.IsAbs(name) {
		r, err := filepath.Rel(cwd, name)
		if err != nil {
			return "", false
		}
		rel = r
	}
	rel = filepath.Clean(rel)
	if rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return rel, true
}

// regularFile reports whether path is a file (not a directory).
func regularFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

func absUnder(cwd, name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(cwd, name)
}

// readInclude reads an included file through root and returns its bytes
// and, for an image, its media type. A file that is neither text nor an
// image is refused, as is one over the limits.
func readInclude(root *os.Root, rel string) ([]byte, string, error) {
	f, err := root.Open(rel)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxIncludeImage+1))
	if err != nil {
		return nil, "", err
	}
	switch mime := http.DetectContentType(data); mime {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		if len(data) > maxIncludeImage {
			return nil, "", fmt.Errorf("the image is over %d MiB", maxIncludeImage>>20)
		}
		return data, mime, nil
	}
	if len(data) > maxIncludeText {
		return nil, "", fmt.Errorf("the file is over %d MiB; ask the agent to read the part you need instead", maxIncludeText>>20)
	}
	if !utf8.Valid(data) || strings.ContainsRune(string(data), 0) {
		return nil, "", errors.New("it is neither text nor an image (png, jpeg, gif, webp)")
	}
	return data, "", nil
}

// imageWarning is the warning for images included for a model that does
// not take them ("" when there is nothing to say).
func imageWarning(p userPrompt, info llm.ModelInfo) string {
	if len(p.images) == 0 || info.AcceptsImages() || len(info.Input) == 0 {
		return ""
	}
	return fmt.Sprintf("model %s/%s does not take images: the %d image(s) of the prompt's @ includes are left out (describe the model's \"input\" in models.json if it does)", info.Provider, info.ID, len(p.images))
}
