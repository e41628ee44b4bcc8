package memory

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// tempPrefix marks the temporary files of WriteFileAtomic.
const tempPrefix = ".nagent-tmp-"

// WriteFileAtomic replaces the file at path with data so that a crash at any
// moment leaves either the old file or the new one, never a mix: it writes a
// temporary file in the same directory, flushes it to disk, renames it over
// path, and flushes the directory. The directory is created if needed.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return writeFile(path, data, perm, true)
}

// ReplaceFileAtomic is WriteFileAtomic without the flushes to disk: a
// process crash still leaves the old file or the new one, never a mix, but
// a power loss may lose the latest replacement. It is for files rewritten on
// every turn, such as observations.md, where a flush would cost the turn
// milliseconds.
func ReplaceFileAtomic(path string, data []byte, perm os.FileMode) error {
	return writeFile(path, data, perm, false)
}

func writeFile(path string, data []byte, perm os.FileMode, durable bool) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, tempPrefix+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if durable {
		if err = f.Sync(); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if !durable {
		return nil
	}
	if d, derr := os.Open(dir); derr == nil { // make the rename durable; best effort
		d.Sync()
		d.Close()
	}
	return nil
}

// RemoveStaleTemps deletes temporary files that WriteFileAtomic left in dir
// when a process died between creating and renaming them, if they are older
// than age (so that a write in flight in another process is left alone).
func RemoveStaleTemps(dir string, age time.Duration) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), tempPrefix) {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > age {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
