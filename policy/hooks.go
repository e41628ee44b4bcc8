package policy

import "io/fs"

// OnReload registers f to be called after every reload attempt, by the file
// watcher or by Reload, with the active revision and the attempt's error
// (nil when it succeeded). f runs on the reloading goroutine while loads
// are serialised, so it must return quickly and must not call Reload. A
// later call replaces f; nil removes it.
func (e *Engine) OnReload(f func(revision string, err *LoadError)) {
	if f == nil {
		e.onReload.Store(nil)
		return
	}
	e.onReload.Store(&f)
}

func (e *Engine) notifyReload() {
	f := e.onReload.Load()
	if f == nil {
		return
	}
	rev := ""
	if set := e.set.Load(); set != nil {
		rev = set.revision
	}
	(*f)(rev, e.err.Load())
}

// BuiltinFiles returns the embedded default policies (the *.rego files of
// policy/rego), read-only, named as the engine names them without
// BuiltinPrefix.
func BuiltinFiles() fs.FS {
	sub, err := fs.Sub(embedded, "rego")
	if err != nil {
		panic(err) // the embed pattern guarantees the directory
	}
	return sub
}
