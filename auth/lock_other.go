//go:build !unix

package auth

import "os"

// On systems without flock the state file is guarded within the process
// only (Store's mutex); two processes may then race on it, and the last
// write wins. Cooldowns are advisory, so this loses at worst a cooldown.
func lockFile(*os.File) error   { return nil }
func unlockFile(*os.File) error { return nil }
