package auth

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// LearnedWindow is a context window a server was seen to enforce for a
// model: smaller than the one the model is declared with (a llama.cpp,
// vLLM or LM Studio server started with a short context, a proxy's
// limit). Its overflow error stated the number.
type LearnedWindow struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// Tokens is the window the server stated.
	Tokens int `json:"tokens"`
	// Declared is the window the model was declared with then.
	Declared  int       `json:"declared,omitempty"`
	LearnedAt time.Time `json:"learnedAt,omitzero"`
}

func windowKey(provider, model string) string { return provider + "/" + model }

// LearnWindow remembers that provider serves model with a window of
// tokens (declared is what the model was declared with). A smaller
// window replaces a remembered one; a larger one does not (the server's
// statement of the moment is not a promise that it grew).
func (s *Store) LearnWindow(provider, model string, tokens, declared int) error {
	if tokens <= 0 {
		return nil
	}
	return s.update(func(st *stateFile) (bool, error) {
		k := windowKey(provider, model)
		if w := st.Windows[k]; w != nil && w.Tokens <= tokens {
			return false, nil
		}
		if st.Windows == nil {
			st.Windows = map[string]*LearnedWindow{}
		}
		st.Windows[k] = &LearnedWindow{Provider: provider, Model: model, Tokens: tokens, Declared: declared, LearnedAt: s.now().UTC().Truncate(time.Second)}
		return true, nil
	})
}

// LearnedWindow returns the window remembered for provider's model, 0 when
// there is none.
func (s *Store) LearnedWindow(provider, model string) (int, error) {
	if s.mem == nil {
		if _, err := os.Stat(s.path); err != nil {
			return 0, nil // nothing remembered yet: leave the home alone
		}
	}
	n := 0
	err := s.update(func(st *stateFile) (bool, error) {
		if w := st.Windows[windowKey(provider, model)]; w != nil {
			n = w.Tokens
		}
		return false, nil
	})
	return n, err
}

// LearnedWindows lists every remembered window, sorted by provider and
// model.
func (s *Store) LearnedWindows() ([]LearnedWindow, error) {
	var out []LearnedWindow
	err := s.update(func(st *stateFile) (bool, error) {
		for _, w := range st.Windows {
			out = append(out, *w)
		}
		return false, nil
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].Provider != out[j].Provider {
			return out[i].Provider < out[j].Provider
		}
		return out[i].Model < out[j].Model
	})
	return out, err
}

// ForgetWindows forgets the windows learned for provider's models, or for
// one model when model is not "". It reports how many it forgot.
func (s *Store) ForgetWindows(provider, model string) (int, error) {
	n := 0
	err := s.update(func(st *stateFile) (bool, error) {
		for k, w := range st.Windows {
			if w.Provider == provider && (model == "" || w.Model == model) {
				delete(st.Windows, k)
				n++
			}
		}
		return n > 0, nil
	})
	return n, err
}

// WriteWindows prints the learned windows as a table.
func WriteWindows(w io.Writer, windows []LearnedWindow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROVIDER\tMODEL\tLEARNED WINDOW\tDECLARED\tSINCE")
	for _, lw := range windows {
		declared := "-"
		if lw.Declared > 0 {
			declared = fmt.Sprint(lw.Declared)
		}
		since := "-"
		if !lw.LearnedAt.IsZero() {
			since = lw.LearnedAt.Local().Format("2006-01-02 15:04:05")
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", lw.Provider, strings.TrimSpace(lw.Model), lw.Tokens, declared, since)
	}
	return tw.Flush()
}
