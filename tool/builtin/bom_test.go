package builtin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentloop/agentloop/tool"
)

// Issue 17, item 8: files that start with a byte-order mark are text.
// read shows UTF-8 ones without the mark and decodes UTF-16 ones; edit
// changes both and writes them back with their mark and encoding.
func TestByteOrderMarkFiles(t *testing.T) {
	utf16le := []byte{0xFF, 0xFE, 'h', 0, 'e', 0, 'l', 0, 'l', 0, 'o', 0, '\r', 0, '\n', 0, 'w', 0, 0xE9, 0, '\r', 0, '\n', 0}
	utf16be := []byte{0xFE, 0xFF, 0, 'h', 0, 'e', 0, 'l', 0, 'l', 0, 'o', 0, '\n', 0, 'w', 0, 0xE9, 0, '\n'}
	tests := []struct {
		name    string
		content []byte
		read    string
		edited  []byte // after replacing "hello" with "bye"
	}{
		{"utf-8", []byte("\ufeffhello\nworld\n"), "hello\nworld", []byte("\ufeffbye\nworld\n")},
		{"utf-8, CRLF", []byte("\ufeffhello\r\nworld\r\n"), "hello\nworld", []byte("\ufeffbye\r\nworld\r\n")},
		{"utf-16le", utf16le, "hello\nwé",
			[]byte{0xFF, 0xFE, 'b', 0, 'y', 0, 'e', 0, '\r', 0, '\n', 0, 'w', 0, 0xE9, 0, '\r', 0, '\n', 0}},
		{"utf-16be", utf16be, "hello\nwé", []byte{0xFE, 0xFF, 0, 'b', 0, 'y', 0, 'e', 0, '\n', 0, 'w', 0, 0xE9, 0, '\n'}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "f.txt")
			if err := os.WriteFile(p, tt.content, 0o644); err != nil {
				t.Fatal(err)
			}
			ws, err := NewWorkspace(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			args, _ := json.Marshal(map[string]any{"path": "f.txt"})
			res, err := NewRead(ws).Execute(context.Background(), tool.Call{Name: "read", Args: args}, nil)
			if err != nil || res.Text() != tt.read {
				t.Errorf("read: %q, %v; want %q", res.Text(), err, tt.read)
			}
			args, _ = json.Marshal(map[string]any{"path": "f.txt", "edits": []map[string]string{{"oldText": "hello", "newText": "bye"}}})
			if res, err := NewEdit(ws).Execute(context.Background(), tool.Call{Name: "edit", Args: args}, nil); err != nil || res.IsError {
				t.Fatalf("edit: %q, %v", res.Text(), err)
			}
			if got, _ := os.ReadFile(p); string(got) != string(tt.edited) {
				t.Errorf("after edit: %q, want %q", got, tt.edited)
			}
		})
	}
}
