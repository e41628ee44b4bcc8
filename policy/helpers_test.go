package policy_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/nagent/nagent/policy"
)

// quiet is a logger for tests whose failures are checked, not read.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// MustNewEngine builds an engine, closed when the test ends. A nil Log
// means quiet.
func MustNewEngine(tb testing.TB, opts policy.Options) *policy.Engine {
	tb.Helper()
	if opts.Log == nil {
		opts.Log = quiet
	}
	e, err := policy.New(context.Background(), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.Close() })
	return e
}

// writeFile writes body to dir/name, creating directories as needed.
func writeFile(tb testing.TB, dir, name, body string) {
	tb.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		tb.Fatal(err)
	}
}
