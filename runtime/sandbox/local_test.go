//go:build linux

package sandbox_test

import (
	"context"
	"os"
	"testing"

	"github.com/nagent/nagent/runtime/sandbox"
	"github.com/nagent/nagent/runtime/sandbox/sandboxtest"
)

// requireLocal skips when bubblewrap cannot run here, except under CI,
// which installs it and must never skip.
func requireLocal(tb testing.TB) *sandbox.LocalBackend {
	tb.Helper()
	b := &sandbox.LocalBackend{}
	if err := b.Available(context.Background()); err != nil {
		msg := "local sandbox unavailable: " + err.Error()
		if os.Getenv("CI") != "" {
			tb.Fatal(msg + " (CI is set, so this test may not be skipped)")
		}
		tb.Skip(msg)
	}
	return b
}

func TestLocalEscape(t *testing.T) {
	requireLocal(t)
	sandboxtest.RunEscapeSuite(t, func(t *testing.T) sandbox.Backend { return requireLocal(t) })
}
