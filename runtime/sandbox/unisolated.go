package sandbox

// UnisolatedName is the Name of the backend that runs code as a plain
// subprocess of the server.
const UnisolatedName = "unisolated"

// UnisolatedWarning is attached to every result of the unisolated backend.
const UnisolatedWarning = "execute_code is running UNISOLATED (a plain subprocess with the server's user, files and network); sandbox.allow_unisolated is on"

// UnisolatedBackend runs code as a plain subprocess: no namespaces, the
// server's uid, files and network. Only rlimit-free process-group kill and
// the empty environment remain. It exists for machines where neither the
// local nor the docker backend works, and is used only when the
// configuration explicitly allows it (sandbox.allow_unisolated); every
// result then carries UnisolatedWarning.
type UnisolatedBackend struct {
	// Python is the interpreter; "" means DefaultPython.
	Python string
}

var _ Backend = (*UnisolatedBackend)(nil)

// Name is "unisolated".
func (b *UnisolatedBackend) Name() string { return UnisolatedName }
