package builtin

import "testing"

func TestIsReadOnlyCommand(t *testing.T) {
	tests := []struct {
		cmd  string
		want bool
	}{
		// Plain read-only commands and pipelines of them.
		{"ls -la", true},
		{"cat README.md", true},
		{"head -n 20 main.go | tail -5", true},
		{"grep -rn 'func main' . | wc -l", true},
		{"rg TODO --glob '*.go'", true},
		{"find . -name '*.go' -type f", true},
		{"git status", true},
		{"git log --oneline -5", true},
		{"git diff HEAD~1 -- tool/", true},
		{"git show HEAD:go.mod", true},
		{"git -C sub status", true},
		{"git --no-pager log", true},
		{"echo hello && pwd", true},
		{"sleep 1; echo done", true},
		{"ls || echo missing", true},
		{"ls\npwd", true},
		{"cd sub && ls", true},
		{"grep x file 2>/dev/null", true},
		{"grep x file 2>&1 | head", true},
		{"ls >/dev/null", true},
		{"ls &>/dev/null", true},
		{"echo oops >/dev/stderr", true},
		{"wc -l < go.mod", true},
		{"grep -c x <<< \"$HOME\"", true},
		{"echo $HOME", true},
		{"echo \"$HOME/x\"", true},
		{"echo '$(rm x)'", true},
		{"echo '`rm x`'", true},
		{"ls # a comment > file", true},
		{"LC_ALL=C sort file", true},
		{"sed -n '1,20p' main.go", true},
		{"sed -n -e '/^func/p' main.go", true},
		{"sed 's/foo/bar/g' file", true},
		{"sed -n '/start/,/end/p' file", true},
		{"ls *.go", true},
		{"uniq file", true},
		{"sort -r file | uniq -c", true},
		{"date +%s", true},

		// Writes, executes, or too clever to follow.
		{"", false},
		{"   ", false},
		{"rm -rf /", false},
		{"find . -delete", false},
		{"find . -name x -exec rm {} \\;", false},
		{"find . -execdir ls \\;", false},
		{"find . -fprint out", false},
		{"cat x > y", false},
		{"cat x >> y", false},
		{"echo hi >y", false},
		{"ls 2>err.log", false},
		{"ls &> out", false},
		{"echo x > /dev/sda", false},
		{"ls > \"$OUT\"", false},
		{"ls >&3x", false},
		{"cat <> file", false},
		{"echo $(rm x)", false},
		{"echo \"$(rm x)\"", false},
		{"echo `rm x`", false},
		{"echo \"`rm x`\"", false},
		{"diff <(ls a) <(ls b)", false},
		{"echo hi; rm x", false},
		{"ls && rm x", false},
		{"ls | xargs rm", false},
		{"ls | tee out", false},
		{"tee out < in", false},
		{"sed -i 's/a/b/' file", false},
		{"sed -ni 's/a/b/p' file", false},
		{"sed --in-place 's/a/b/' file", false},
		{"sed 's/a/b/w out' file", false},
		{"sed 's/a/b/e' file", false},
		{"sed '1w out' file", false},
		{"sed -f script.sed file", false},
		{"sort -o out file", false},
		{"sort --output=out file", false},
		{"uniq in out", false},
		{"date -s '2020-01-01'", false},
		{"rg --pre ./evil x", false},
		{"git commit -m x", false},
		{"git push", false},
		{"git -c core.pager=evil log", false},
		{"git diff --output=patch", false},
		{"git diff --ext-diff", false},
		{"git", false},
		{"PATH=/tmp/evil ls", false},
		{"LD_PRELOAD=x.so cat f", false},
		{"PATH=/tmp/evil; ls", false},
		{"FOO=bar ls", false},
		{"cat <<EOF\nhello\nEOF", false},
		{"cat <<'EOF' > out\nhello\nEOF", false},
		{"(ls)", false},
		{"{ ls; }", false},
		{"f() { rm x; }; f", false},
		{"./ls", false},
		{"/bin/ls", false},
		{"$CMD arg", false},
		{"l* -la", false},
		{"echo 'unterminated", false},
		{"echo \"unterminated", false},
		{"| ls", false},
		{"ls >", false},
		{"awk '{print > \"out\"}' f", false},
		{"python3 -c 'print(1)'", false},
		{"npm test", false},
		{"eval ls", false},
		{"exec ls", false},
		{"env -i rm x", false},
		{"sleep 5 & rm x", false},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			if got := IsReadOnlyCommand(tt.cmd); got != tt.want {
				t.Errorf("IsReadOnlyCommand(%q) = %v, want %v", tt.cmd, got, tt.want)
			}
		})
	}
}

func FuzzIsReadOnlyCommand(f *testing.F) {
	for _, s := range []string{"ls -la | wc -l", "cat x > y", "echo $(rm x)", "sed -n '1p' f", "git log 2>&1", "a\\\nb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		_ = IsReadOnlyCommand(cmd) // must not panic
	})
}

func BenchmarkIsReadOnlyCommand(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		IsReadOnlyCommand(`grep -rn "func main" . 2>/dev/null | sort | head -20`)
	}
}
