package runner

import (
	"sync"
	"testing"
	"testing/synctest"

	"github.com/agentloop/agentloop/llm"
	"github.com/agentloop/agentloop/llm/faux"
)

// memWindows is LearnedWindows in memory.
type memWindows struct {
	mu sync.Mutex
	m  map[string]int
}

func (w *memWindows) LearnedWindow(provider, model string) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.m[provider+"/"+model], nil
}

func (w *memWindows) LearnWindow(provider, model string, tokens, _ int) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]int{}
	}
	w.m[provider+"/"+model] = tokens
	return nil
}

// windowCompactor records the windows it is told to work to.
type windowCompactor struct {
	fakeCompactor
	windows []int
	replies []int
}

func (w *windowCompactor) SetWindow(window, reply int) {
	w.windows = append(w.windows, window)
	w.replies = append(w.replies, reply)
}

// An overflow that states the server's window makes the run work to it,
// remembers it, says so once, and compacts; a second overflow stating the
// same window is not news.
func TestRunLearnsWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stated := "This model's maximum context length is 15360 tokens. However, your messages resulted in 17000 tokens."
		m := faux.New(faux.Refuse(llm.ReasonContextOverflow, 400, stated), faux.Refuse(llm.ReasonContextOverflow, 400, stated), faux.Say("fits"))
		fc := &windowCompactor{}
		mem := &memWindows{}
		ev := &events{}
		info := llm.ModelInfo{Provider: "local", ID: "qwen", ContextWindow: 128_000, MaxTokens: 4096}
		res, err := testRunner(nil).runParams(t.Context(), params{Prompt: "go", Model: m, Info: info, Windows: mem,
			Compaction: &CompactionSpec{Compactor: fc}, Retry: noJitter(), OnEvent: ev.add})
		if err != nil || res.Reason != "stop" {
			t.Fatalf("reason %s err %v %v", res.Reason, err, res.Err)
		}
		if n, _ := mem.LearnedWindow("local", "qwen"); n != 15360 {
			t.Errorf("remembered %d", n)
		}
		if len(fc.windows) != 1 || fc.windows[0] != 15360 || fc.replies[0] != 4096 {
			t.Errorf("compactor told %v (replies %v)", fc.windows, fc.replies)
		}
		if n := ev.notices(EventWindowLearned); len(n) != 1 || n[0].Window != 15360 {
			t.Errorf("window notices %+v", n)
		}
	})
}

// A later run starts with the learned window; one larger than the declared
// window, or none, leaves the declared one.
func TestRunStartsWithLearnedWindow(t *testing.T) {
	for _, c := range []struct {
		learned, want int
	}{{15360, 15360}, {0, 0}, {200_000, 0}} {
		synctest.Test(t, func(t *testing.T) {
			mem := &memWindows{}
			if c.learned > 0 {
				mem.LearnWindow("local", "qwen", c.learned, 0)
			}
			fc := &windowCompactor{}
			info := llm.ModelInfo{Provider: "local", ID: "qwen", ContextWindow: 128_000, MaxTokens: 4096}
			// The runner builds its own compactor; a given one is not told
			// the starting window, so look at the run's state instead.
			s := newRun(nil, params{Info: info, Windows: mem, Compaction: &CompactionSpec{Compactor: fc}}, nil)
			got := s.startWindow()
			want := c.want
			if want == 0 {
				want = 128_000
			}
			if got != want {
				t.Errorf("learned %d: start window %d, want %d", c.learned, got, want)
			}
		})
	}
}
