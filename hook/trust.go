package hook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentloop/agentloop/llm"
)

// TrustFile is the name of the file under the agentloop home that records
// trusted workspaces.
const TrustFile = "trusted.json"

// trustList is the trust file: {"version":1,"trusted":[{"path":...,"since":...}]}.
type trustList struct {
	Version int          `json:"version"`
	Trusted []trustEntry `json:"trusted"`
}

type trustEntry struct {
	Path  string    `json:"path"`
	Since time.Time `json:"since"`
}

// Home returns the agentloop home: $AGENTLOOP_HOME, else ~/.agentloop
// (llm.Home).
func Home() (string, error) {
	h, err := llm.Home(nil)
	if err != nil {
		return "", fmt.Errorf("find the agentloop home: %w", err)
	}
	return h, nil
}

func homeOr(home string) (string, error) {
	if home != "" {
		return home, nil
	}
	return Home()
}

// realDir resolves dir to an absolute path without symlinks, so that one
// workspace reached by two paths is trusted (or not) once.
func realDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", dir, err)
	}
	return real, nil
}

func readTrust(home string) (trustList, error) {
	path := filepath.Join(home, TrustFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return trustList{Version: 1}, nil
	}
	if err != nil {
		return trustList{}, fmt.Errorf("read trusted workspaces: %w", err)
	}
	var l trustList
	if err := json.Unmarshal(b, &l); err != nil {
		return trustList{}, fmt.Errorf("read trusted workspaces from %s: %w; fix the JSON or delete the file and trust your workspaces again", path, err)
	}
	return l, nil
}

func writeTrust(home string, l trustList) error {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return fmt.Errorf("record trust: %w", err)
	}
	l.Version = 1
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return fmt.Errorf("record trust: %w", err)
	}
	f, err := os.CreateTemp(home, ".trusted-*.json")
	if err != nil {
		return fmt.Errorf("record trust: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(home, TrustFile))
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("record trust: %w", err)
	}
	return nil
}

// Trust records dir, resolved to its real path, as trusted under home
// ("" means Home()). Trusting a directory trusts every directory below it.
// It returns the path recorded; trusting a directory twice is not an error.
func Trust(home, dir string) (string, error) {
	home, err := homeOr(home)
	if err != nil {
		return "", err
	}
	real, err := realDir(dir)
	if err != nil {
		return "", fmt.Errorf("trust %s: %w", dir, err)
	}
	l, err := readTrust(home)
	if err != nil {
		return "", err
	}
	if slices.ContainsFunc(l.Trusted, func(e trustEntry) bool { return e.Path == real }) {
		return real, nil
	}
	l.Trusted = append(l.Trusted, trustEntry{Path: real, Since: time.Now().UTC().Truncate(time.Second)})
	return real, writeTrust(home, l)
}

// Untrust removes dir's own record. A directory still trusted through a
// recorded parent stays trusted.
func Untrust(home, dir string) error {
	home, err := homeOr(home)
	if err != nil {
		return err
	}
	real, err := realDir(dir)
	if err != nil {
		return fmt.Errorf("untrust %s: %w", dir, err)
	}
	l, err := readTrust(home)
	if err != nil {
		return err
	}
	n := len(l.Trusted)
	l.Trusted = slices.DeleteFunc(l.Trusted, func(e trustEntry) bool { return e.Path == real })
	if len(l.Trusted) == n {
		return nil
	}
	return writeTrust(home, l)
}

// Trusted reports whether dir is trusted under home ("" means Home()): its
// real path, or one of its parents, is recorded.
func Trusted(home, dir string) (bool, error) {
	home, err := homeOr(home)
	if err != nil {
		return false, err
	}
	real, err := realDir(dir)
	if err != nil {
		return false, err
	}
	l, err := readTrust(home)
	if err != nil {
		return false, err
	}
	for _, e := range l.Trusted {
		if within(real, e.Path) {
			return true, nil
		}
	}
	return false, nil
}

// TrustedDirs lists the recorded directories.
func TrustedDirs(home string) ([]string, error) {
	home, err := homeOr(home)
	if err != nil {
		return nil, err
	}
	l, err := readTrust(home)
	if err != nil {
		return nil, err
	}
	dirs := make([]string, len(l.Trusted))
	for i, e := range l.Trusted {
		dirs[i] = e.Path
	}
	return dirs, nil
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	if path == dir {
		return true
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
