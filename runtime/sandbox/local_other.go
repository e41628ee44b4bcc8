//go:build !linux

package sandbox

import (
	"context"
	"errors"
)

// DefaultPython is the interpreter the sandboxes run.
const DefaultPython = "/usr/bin/python3"

// LocalBackend needs Linux namespaces; elsewhere it is never available.
type LocalBackend struct {
	Bwrap, Python, PidsCgroup string
}

// Name is "local".
func (b *LocalBackend) Name() string { return "local" }

// Available always fails off Linux.
func (b *LocalBackend) Available(context.Context) error {
	return errors.New("sandbox local: Linux namespaces are not available on this system; use sandbox.backend docker")
}

// Open always fails off Linux.
func (b *LocalBackend) Open(ctx context.Context, _ EnvSpec) (Env, error) {
	return nil, b.Available(ctx)
}
