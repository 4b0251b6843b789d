// Package atomicfile replaces small files so that a crash leaves the old
// content or the new one, whole: never a torn or empty file. The session
// store's rewrites, the gateway's seq files and auth's state file use it.
//
// It imports only the standard library.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces path with data (mode 0600): through a temporary file
// beside it, renamed over it. With sync, the data is synced before the
// rename and the directory after it, so the new content survives a power
// loss too; without, a crash may leave the old content (still whole).
func Write(path string, data []byte, sync bool) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // gone after the rename; left only by a failure
	_, err = f.Write(data)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o600)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return err
	}
	if sync {
		SyncDir(dir)
	}
	return nil
}

// SyncDir syncs a directory, so that the names made or renamed in it are
// durable; a failure is ignored (some file systems cannot).
func SyncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
