// Package testbin builds the nagent binary once per test process, so
// end-to-end tests can drive the real program as a user would.
package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	once sync.Once
	path string
	err  error
	out  []byte
)

// Nagent returns the path of a freshly built nagent binary.
func Nagent(tb testing.TB) string {
	tb.Helper()
	once.Do(func() {
		dir, mkErr := os.MkdirTemp("", "nagent-bin-")
		if mkErr != nil {
			err = mkErr
			return
		}
		path = filepath.Join(dir, "nagent")
		cmd := exec.Command("go", "build", "-o", path, ".")
		cmd.Dir = moduleRoot()
		out, err = cmd.CombinedOutput()
	})
	if err != nil {
		tb.Fatalf("go build nagent: %v\n%s", err, out)
	}
	return path
}

// moduleRoot is the repository root, two levels above this file.
func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}
