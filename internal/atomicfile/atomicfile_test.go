package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// Write replaces the file whole, mode 0600, and leaves no temporary file.
func TestWriteReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "f")
	for _, sync := range []bool{true, false} {
		for _, data := range []string{"first\n", "second, longer\n", ""} {
			if err := Write(p, []byte(data), sync); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(p)
			if err != nil || string(b) != data {
				t.Fatalf("read %q, %v; want %q", b, err, data)
			}
		}
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v", fi.Mode(), err)
	}
	ents, _ := os.ReadDir(filepath.Dir(p))
	if len(ents) != 1 {
		t.Fatalf("the directory holds %v, want the file alone", ents)
	}
}
