package docker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nagent/nagent/runtime/sandbox"
)

// The container's mounts are fixed, but every call has a fresh scratch
// dir. So one live directory (LiveScratchName, beside the call dirs, on the
// same file system) is mounted at /scratch for the container's life: before
// a call, stageIn empties it and moves the call dir's entries (and the code)
// into it; after the call, once every process is dead, stageOut moves
// everything back. Moves are renames, which never follow symlinks the code
// may have made, so the call dir ends up exactly as if it had been mounted
// itself.

// stageIn empties live and fills it with the entries of scratch and the code.
func stageIn(live, scratch string, code []byte) error {
	if err := os.MkdirAll(live, 0o777); err != nil {
		return fmt.Errorf("docker sandbox: live scratch dir: %w", err)
	}
	// The sandbox user differs from the server's; the parents keep others
	// out (the Manager does the same for each call dir).
	if err := os.Chmod(live, 0o777); err != nil {
		return fmt.Errorf("docker sandbox: live scratch dir: %w", err)
	}
	if err := emptyDir(live); err != nil {
		return err
	}
	if err := moveEntries(scratch, live); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(live, sandbox.CodeFileName), code, 0o644); err != nil {
		return fmt.Errorf("docker sandbox: write code: %w", err)
	}
	return nil
}

// stageOut moves what the call left in live to its scratch dir.
func stageOut(live, scratch string) error {
	return moveEntries(live, scratch)
}

func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("docker sandbox: empty live scratch dir: %w", err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("docker sandbox: empty live scratch dir: %w", err)
		}
	}
	return nil
}

func moveEntries(from, to string) error {
	entries, err := os.ReadDir(from)
	if err != nil {
		return fmt.Errorf("docker sandbox: move scratch files: %w", err)
	}
	var errs []error
	for _, e := range entries {
		dst := filepath.Join(to, e.Name())
		if _, err := os.Lstat(dst); err == nil {
			if err := os.RemoveAll(dst); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if err := os.Rename(filepath.Join(from, e.Name()), dst); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("docker sandbox: move scratch files: %w", err)
	}
	return nil
}
