package auth

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The state file is replaced through internal/atomicfile, the one copy of
// the atomic-write code (which also syncs the directory after the
// rename): no file of the package makes temporary files or renames them
// itself.
func TestStateWriteUsesAtomicfile(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "os" && (sel.Sel.Name == "CreateTemp" || sel.Sel.Name == "Rename") {
				t.Errorf("%s: os.%s: replace files with internal/atomicfile.Write, not a copy of it", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
}

// A write leaves the state file whole, private (0600), and no temporary
// file beside it.
func TestStateWriteLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	s := &Store{path: filepath.Join(dir, "auth-state.json")}
	for range 2 {
		if err := s.write(newState()); err != nil {
			t.Fatal(err)
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != "auth-state.json" {
		t.Fatalf("the directory holds %v, want only auth-state.json", ents)
	}
	fi, err := os.Stat(s.path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file mode %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	st, err := s.read()
	if err != nil || st.Version != stateVersion {
		t.Fatalf("read back: %+v, %v", st, err)
	}
}
