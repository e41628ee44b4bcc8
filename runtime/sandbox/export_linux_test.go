//go:build linux

package sandbox

import "context"

// LocalLaunchMode reports whether b starts bwrap without a shell (the
// ptrace launch of startConfined); b must have passed Available.
func LocalLaunchMode(b *LocalBackend) (shellLess bool) { return b.ptraceOK }

// WithShellWrapper makes b launch through the /bin/sh wrapper, the
// fallback where ptrace is unavailable, after probing it.
func WithShellWrapper(ctx context.Context, b *LocalBackend) error {
	if err := b.Available(ctx); err != nil {
		return err
	}
	b.ptraceOK = false
	return nil
}
