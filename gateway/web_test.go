package gateway

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentloop/agentloop/llm/faux"
	"github.com/agentloop/agentloop/tool"
)

// chromiumPath finds Debian's chromium (installed by .ci/run). Without it
// the browser test is skipped, except in CI, where it fails.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium binary on PATH: .ci/run installs Debian's chromium package")
	}
	t.Skip("no chromium binary on PATH (apt-get install chromium); the web chat's browser test needs one")
	return ""
}

// browserProcs lists the processes whose command line names a user data
// directory under dir: this test's browser and its children.
func browserProcs(dir string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for arg := range bytes.SplitSeq(b, []byte{0}) {
			if strings.HasPrefix(string(arg), "--user-data-dir="+dir) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// The web chat in a real browser (headless chromium), with a token: pick
// up the token, create a session, send a prompt, watch the reply stream and
// the tool call, approve the call, then abort a second run mid-stream.
func TestWebChatInBrowser(t *testing.T) {
	chrome := chromiumPath(t)
	slow := strings.Repeat("still talking ", 400)
	tsv := newTestServer(t, []faux.Step{
		faux.Call("Let me echo that.", "echo", map[string]any{"text": "hello from the tool"}),
		faux.Say("All done: the tool said hello."),
		faux.Say(slow).WithDelay(20 * time.Millisecond),
	}, func(cfg *Config, tsv *testServer) {
		cfg.Tokens = TokenSet{"web-token": ScopeAll}
		tsv.token = "web-token"
		tsv.policy = tool.ApproveAsk
	})

	// The page without a token gets nothing from the API.
	if resp := tsv.request("GET", "/", nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /: %d", resp.StatusCode)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !bytes.Contains(b, []byte(`src="/assets/app.js"`)) {
			t.Fatalf("GET / is not the chat page: %.200s", b)
		}
	}

	bctx, ctx := startBrowser(t, chrome)
	fail := func(what string, err error) {
		t.Helper()
		log, _ := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("#log")))
		errText, _ := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("#error")))
		jsErrs, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`JSON.stringify([window.__errors || [], state.lastSeq, document.getElementById("conn").textContent])`))
		var ring []string
		tsv.s.mu.Lock()
		for _, ss := range tsv.s.sessions {
			ss.emu.Lock()
			for _, f := range ss.ring[ss.ringHead:] {
				ring = append(ring, f.typ)
			}
			ss.emu.Unlock()
		}
		tsv.s.mu.Unlock()
		t.Fatalf("%s: %v\nlog: %s\nerror line: %s\nscript errors: %s\nserver events: %v", what, err, log, errText, jsErrs, ring)
	}
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			fail(what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			fail("text of "+sel, err)
		}
		return v
	}
	eval := func(expr string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		if err != nil {
			fail(expr, err)
		}
		return v
	}
	// until waits for a JavaScript condition on the page.
	until := func(expr string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Poll[bool](expr)(ctx, tg)
			return err
		})
	}
	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }

	do("open the page", chromedp.Navigate(tsv.ts.URL+"/"), chromedp.WaitVisible(css("#token")))
	// Script errors are collected, to be shown if a step fails.
	eval(`window.__errors = []; addEventListener("error", e => __errors.push(e.message)); addEventListener("unhandledrejection", e => __errors.push(String(e.reason && e.reason.stack || e.reason))); "ok"`)
	do("no token: refused", chromedp.WaitVisible(css(`#conn[data-state="error"]`)))
	if conn := text("#conn"); conn != "token refused" {
		t.Fatalf("without a token the page says %q", conn)
	}
	do("use the token",
		chromedp.SendKeys(css("#token"), "web-token"),
		chromedp.Click(css(`#token-form button[type="submit"]`)),
		chromedp.WaitVisible(css(`#conn[data-state="live"]`)))
	if stored := eval(`sessionStorage.getItem("agentloop.token")`); stored != "web-token" {
		t.Fatalf("sessionStorage token %q", stored)
	}

	do("create a session",
		chromedp.SendKeys(css("#new-cwd"), tsv.cwd),
		chromedp.Click(css("#create")),
		chromedp.WaitVisible(css(`#sessions li.current`)),
		chromedp.WaitEnabled(css("#prompt")))

	do("send a prompt and see the approval",
		chromedp.SendKeys(css("#prompt"), "please echo hello"),
		chromedp.Click(css("#send")),
		chromedp.WaitVisible(css(`.msg.user`)),
		chromedp.WaitVisible(css(`.approval button[data-decision="allow_once"]`)))
	if status := text("#session-status"); status != "requires_action" {
		t.Fatalf("status while the approval is pending: %q", status)
	}
	if st := eval(`document.querySelector('.tool[data-tool-name="echo"]').dataset.state`); st == "done" {
		t.Fatalf("the tool ran before it was approved")
	}
	do("approve the call and see the streamed reply",
		chromedp.Click(css(`.approval button[data-decision="allow_once"]`)),
		chromedp.WaitVisible(css(`.approval[data-resolved]`)),
		chromedp.WaitVisible(css(`.tool[data-tool-name="echo"][data-state="done"]`)),
		until(`[...document.querySelectorAll(".msg.assistant")].some(e => e.textContent.includes("All done: the tool said hello."))`),
		until(`document.getElementById("session-status").textContent === "idle"`))
	if out := text(`.tool[data-tool-name="echo"] .out`); out != "echo: hello from the tool" {
		t.Fatalf("tool output %q", out)
	}
	if first := text(`.msg.assistant`); first != "Let me echo that." {
		t.Fatalf("first assistant text %q", first)
	}

	do("start a long reply, abort it mid-stream",
		chromedp.SendKeys(css("#prompt"), "talk for a while"),
		chromedp.Click(css("#send")),
		until(`[...document.querySelectorAll(".msg.assistant.streaming")].some(e => e.textContent.includes("still talking still talking"))`),
		chromedp.WaitEnabled(css("#abort")),
		chromedp.Click(css("#abort")),
		until(`[...document.querySelectorAll(".msg.note")].some(e => e.textContent.includes("run ended: aborted"))`),
		until(`document.getElementById("abort").disabled`))
	if streamed := eval(`[...document.querySelectorAll(".msg.assistant")].pop().textContent`); len(streamed) == 0 || len(streamed) >= len(slow) {
		t.Fatalf("the aborted reply has %d of %d characters", len(streamed), len(slow))
	}

	// A fresh page shows the session's history, read a page at a time
	// (two entries a request here, so it takes several).
	do("reload and reopen the session",
		chromedp.Navigate(tsv.ts.URL+"/"),
		chromedp.WaitVisible(css(`#conn[data-state="live"]`)),
		chromedp.WaitVisible(css(`#sessions li`)))
	eval(`window.agentloopPageSize = 2; "ok"`)
	do("the history, every page of it",
		chromedp.Click(css(`#sessions li`)),
		until(`[...document.querySelectorAll(".msg.user")].map(e => e.textContent).join("|") === "please echo hello|talk for a while"`),
		chromedp.WaitVisible(css(`.tool[data-tool-name="echo"][data-state="done"]`)),
		until(`[...document.querySelectorAll(".msg.assistant")].some(e => e.textContent.includes("All done: the tool said hello."))`))

	// What the page showed is what the server did.
	var sessions SessionList
	tsv.do("GET", "/v1/sessions", nil, &sessions)
	if len(sessions.Sessions) != 1 {
		t.Fatalf("sessions: %+v", sessions)
	}
	var page MessagePage
	tsv.do("GET", "/v1/sessions/"+sessions.Sessions[0].ID+"/messages", nil, &page)
	var roles []string
	for _, e := range page.Entries {
		if e.Message != nil {
			roles = append(roles, string(e.Message.Role))
		}
	}
	if got := strings.Join(roles, " "); !strings.HasPrefix(got, "user assistant toolResult assistant user assistant") {
		t.Fatalf("transcript roles: %s", got)
	}
}

// startBrowser starts headless chromium for one test; it is stopped, and
// checked to leave no process behind, at the test's end. The second
// context bounds the test's steps.
func startBrowser(t *testing.T, chrome string) (browser, steps context.Context) {
	t.Helper()
	// chromedp makes the browser's user data directory under TMPDIR: a
	// directory of this test's own, so the leftover check below sees only
	// this browser.
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
	t.Cleanup(func() {
		cancel()
		cancelBrowser()
		cancelAlloc()
		deadline := time.Now().Add(5 * time.Second)
		for len(browserProcs(tmp)) > 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if left := browserProcs(tmp); len(left) > 0 {
			t.Errorf("browser processes left running: %v", left)
		}
	})
	return bctx, ctx
}

// A run that happens between the page reading a new session (headSeq 0)
// and its event stream opening is not lost: the stream starts after what
// the page showed, not at the live edge.
func TestWebChatCatchesUp(t *testing.T) {
	chrome := chromiumPath(t)
	tsv := newTestServer(t, []faux.Step{faux.Say("Answered while the page was still connecting.")})
	sess := tsv.newSession()
	// The first request for the session's events waits until a run has
	// come and gone.
	var once sync.Once
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/events") {
			once.Do(func() {
				info, st := tsv.startRun(sess.ID, "quick question", "between", "")
				if st != http.StatusAccepted {
					t.Errorf("start: %d", st)
					return
				}
				tsv.waitRunEnd(info.RunID)
			})
		}
		tsv.s.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close) // after the browser's cleanup, which ends the page's stream
	_, ctx := startBrowser(t, chrome)
	err := chromedp.Do(ctx,
		chromedp.Navigate(front.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#sessions li`)),
		chromedp.Click(chromedp.CSS(`#sessions li`)),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Poll[bool](`[...document.querySelectorAll(".msg.assistant")].some(e => e.textContent.includes("Answered while the page was still connecting."))`)(ctx, tg)
			return err
		}))
	if err != nil {
		log, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#log")))
		t.Fatalf("the run between history and stream: %v\nlog: %s", err, log)
	}
}
