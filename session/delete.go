package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Delete removes session id (its exact id, not a prefix) under its lock:
// its transcript and the directory of long command output beside it
// (<id>.spill). A session another process is writing is refused with the
// lock's error.
func (s *JSONLStore) Delete(ctx context.Context, id string) error {
	path, err := s.Resolve(id)
	if err != nil {
		return err
	}
	if idFromPath(path) != id {
		return fmt.Errorf("delete session %s: %w", id, ErrNotFound)
	}
	lock, err := AcquireLock(ctx, path, id, nil)
	if err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	defer lock.Release()
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	s.paths.CompareAndDelete(id, path)
	if err := os.RemoveAll(strings.TrimSuffix(path, ".jsonl") + ".spill"); err != nil {
		return fmt.Errorf("delete session %s: its command output: %w", id, err)
	}
	return nil
}
