package runner

import (
	"fmt"

	"github.com/agentloop/agentloop/llm"
)

// LearnedWindows remembers, per provider and model, a context window a
// server was seen to enforce: servers often run a model with a smaller
// window than it is declared with (llama.cpp, vLLM or LM Studio started
// with a short context, a proxy's limit), and their overflow errors state
// it ("maximum context length is 15360 tokens"). A run that learns one
// works to it from then on, and later runs start with it. *auth.Store
// implements it on the state file all processes share.
type LearnedWindows interface {
	// LearnedWindow returns the window remembered for the model, 0 for
	// none.
	LearnedWindow(provider, model string) (int, error)
	// LearnWindow remembers one; declared is the model's own window.
	LearnWindow(provider, model string, tokens, declared int) error
}

// windowSetter is a Compactor that can be told the window to work to.
type windowSetter interface{ SetWindow(window, reply int) }

// startWindow is the window a run starts with: the model's declared one
// (llm.DefaultContextWindow when it has none), or a smaller one learned
// for it before. A learned window is below what the model is declared
// with, so a later, larger declaration is not hidden by it.
func (s *run) startWindow() int {
	window := s.p.Info.ContextWindow
	if window == 0 {
		window = llm.DefaultContextWindow
	}
	if s.p.Windows == nil {
		return window
	}
	n, err := s.p.Windows.LearnedWindow(s.p.Info.Provider, s.p.Info.ID)
	if err != nil || n <= 0 || n >= window {
		return window
	}
	return n
}

// setWindow tells the compactor the window to work to, with the most a
// reply may take.
func (s *run) setWindow(comp Compactor, window int) {
	ws, ok := comp.(windowSetter)
	if !ok {
		return
	}
	reply := s.p.Options.MaxTokens
	if reply <= 0 {
		reply = s.p.Info.MaxTokens
	}
	ws.SetWindow(window, reply)
}

// learnWindow reads the window an overflow error states. When it is
// smaller than the one the run works to, the run adopts it (compaction and
// truncation then aim under it), remembers it for later runs and says so
// once; learnWindow returns it. It returns 0 when the error names no
// smaller window.
func (s *run) learnWindow(comp Compactor, msg string) int {
	n, ok := llm.OverflowLimit(msg)
	if !ok || n >= s.window {
		return 0
	}
	declared := s.p.Info.ContextWindow
	s.window = n
	s.setWindow(comp, n)
	info := s.p.Info
	where := info.Provider + "/" + info.ID
	if s.p.Windows != nil {
		if err := s.p.Windows.LearnWindow(info.Provider, info.ID, n, declared); err != nil {
			s.warn(fmt.Sprintf("could not remember the context window of %s: %v", where, err))
		}
	}
	s.notice(EventWindowLearned, Notice{Window: n, Reason: string(llm.ReasonContextOverflow),
		Message: fmt.Sprintf("the server runs %s with a context window of %d tokens (declared: %d): working to %d from now on", where, n, declared, n)})
	return n
}
