//go:build !unix

package session

import (
	"errors"
	"os"
)

// flockExclusive is not implemented off Unix yet: sessions need flock.
func flockExclusive(*os.File) (bool, error) {
	return false, errors.New("session locks need flock, which this platform lacks")
}
