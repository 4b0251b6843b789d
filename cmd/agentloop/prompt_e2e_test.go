package main

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Issue 21: the prompt as a Claude Code user types it, through the built
// binary against mockllm, read back from the request it sent.

// execCLIIn is execCLI with stdin and a working directory.
func execCLIIn(t *testing.T, stdin, dir, home string, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(builtCLI(t), args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "AGENTLOOP_HOME=" + home}, env...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin) // a pipe, as from `git diff |`
	return runProcess(t, cmd)
}

// mockArgs are the flags that point a run at mockllm.
func mockArgs(base string, args ...string) []string {
	return append([]string{"run", "--no-session", "--model", "openai/mock-model", "--base-url", base + "/v1"}, args...)
}

// userParts returns the content of the first user message of the first
// request in capture: its text parts, joined, and its image URLs.
func userParts(t *testing.T, capture string) (string, []string) {
	t.Helper()
	reqs := readLines(t, capture)
	if len(reqs) == 0 {
		t.Fatal("no request reached mockllm")
	}
	var body struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(reqs[0]), &body); err != nil {
		t.Fatal(err)
	}
	for _, m := range body.Messages {
		if m.Role != "user" {
			continue
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			return s, nil
		}
		var parts []struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			ImageURL struct {
				URL string `json:"url"`
			} `json:"image_url"`
		}
		if err := json.Unmarshal(m.Content, &parts); err != nil {
			t.Fatal(err)
		}
		var text []string
		var images []string
		for _, p := range parts {
			switch p.Type {
			case "text":
				text = append(text, p.Text)
			case "image_url":
				images = append(images, p.ImageURL.URL)
			}
		}
		return strings.Join(text, "\n"), images
	}
	t.Fatal("no user message in the request")
	return "", nil
}

func TestE2EPipedStdinJoinsPrompt(t *testing.T) {
	capture := filepath.Join(t.TempDir(), "req.jsonl")
	base := mockLLM(t, "-rounds", "0", "-capture", capture)
	home, ws := t.TempDir(), t.TempDir()
	diff := "diff --git a/x b/x\n@@ -1,2 +1,3 @@\n-old\n+new\n"
	code, _, errs := execCLIIn(t, diff, ws, home, []string{"OPENAI_API_KEY=sk-mock"}, mockArgs(base, "review this diff")...)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	got, _ := userParts(t, capture)
	if want := "review this diff\n\n" + strings.TrimRight(diff, "\n"); got != want {
		t.Errorf("prompt sent:\n%q\nwant\n%q", got, want)
	}
}

func TestE2EIncludes(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(ws, "README.md"), "README-CONTENT\n")
	writeFile(t, filepath.Join(ws, "notes.txt"), "NOTES-CONTENT\n")
	png, _ := base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
	if err := os.WriteFile(filepath.Join(ws, "pic.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "secret.txt"), "OUTSIDE-SECRET\n")
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(ws, "link.txt")); err != nil {
		t.Fatal(err)
	}
	env := []string{"OPENAI_API_KEY=sk-mock"}

	t.Run("text kept byte for byte", func(t *testing.T) {
		capture := filepath.Join(t.TempDir(), "req.jsonl")
		base := mockLLM(t, "-rounds", "0", "-capture", capture)
		prompt := "what is in @README.md, and @notes.txt?\nsee hunk @@ -1,2 +1,3 @@ and ask @nobody."
		code, _, errs := execCLIIn(t, "", ws, home, env, mockArgs(base, prompt)...)
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, errs)
		}
		got, images := userParts(t, capture)
		if !strings.HasPrefix(got, prompt+"\n\n") {
			t.Errorf("the prompt text was changed:\n%q", got)
		}
		for _, want := range []string{`<file path="README.md">` + "\nREADME-CONTENT\n</file>", `<file path="notes.txt">` + "\nNOTES-CONTENT\n</file>"} {
			if !strings.Contains(got, want) {
				t.Errorf("missing %q in\n%s", want, got)
			}
		}
		if len(images) != 0 {
			t.Errorf("images sent: %d", len(images))
		}
	})
	t.Run("image attached", func(t *testing.T) {
		capture := filepath.Join(t.TempDir(), "req.jsonl")
		base := mockLLM(t, "-rounds", "0", "-capture", capture)
		args := append(mockArgs(base, "describe @pic.png"), "--model", "openai/gpt-4o") // a model that takes images
		code, _, errs := execCLIIn(t, "", ws, home, env, args...)
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, errs)
		}
		got, images := userParts(t, capture)
		if strings.Contains(got, "PNG") {
			t.Errorf("PNG bytes in the text:\n%q", got)
		}
		if len(images) != 1 || images[0] != "data:image/png;base64,"+base64.StdEncoding.EncodeToString(png) {
			t.Errorf("images = %q", images)
		}
	})
	t.Run("image to a text-only model", func(t *testing.T) {
		capture := filepath.Join(t.TempDir(), "req.jsonl")
		base := mockLLM(t, "-rounds", "0", "-capture", capture)
		code, _, errs := execCLIIn(t, "", ws, home, env, mockArgs(base, "describe @pic.png")...)
		if code != 0 || !strings.Contains(errs, "does not take images") {
			t.Errorf("exit %d, no warning that the image is not sent:\n%s", code, errs)
		}
	})
	for _, tc := range []struct{ name, word, want string }{
		{"absolute path outside", "@" + filepath.Join(outside, "secret.txt"), "outside the workspace"},
		{"dot dot", "@../" + filepath.Base(outside) + "/secret.txt", "outside the workspace"},
		{"link out", "@link.txt", "leads outside the workspace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			capture := filepath.Join(t.TempDir(), "req.jsonl")
			base := mockLLM(t, "-rounds", "0", "-capture", capture)
			code, _, errs := execCLIIn(t, "", ws, home, env, mockArgs(base, "show "+tc.word)...)
			if code != 2 || !strings.Contains(errs, tc.want) {
				t.Errorf("exit %d (want 2), stderr %q (want %q)", code, errs, tc.want)
			}
			if _, err := os.Stat(capture); err == nil {
				t.Errorf("a request was sent: %v", readLines(t, capture))
			}
		})
	}
}

// A socket left open on stdin by a parent process (ssh runs a command
// so) is not read beside a prompt argument: the run does not wait for an
// end of input that never comes.
func TestE2EOpenSocketStdinNotRead(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0) // the child gets only its end
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "ours"), os.NewFile(uintptr(fds[1]), "theirs")
	defer ours.Close()
	defer theirs.Close()
	home := t.TempDir()
	cmd := exec.Command(builtCLI(t), "run", "--no-session", "--model", "faux/demo", "--timeout", "20s", "hi")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "AGENTLOOP_HOME=" + home}
	cmd.Dir = home
	cmd.Stdin = theirs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(15*time.Second, func() { _ = cmd.Process.Kill() }) // a run waiting on stdin, failing the test below
	defer timer.Stop()
	_ = cmd.Wait()
	if !timer.Stop() {
		t.Fatal("the run waited for stdin to end")
	}
}
