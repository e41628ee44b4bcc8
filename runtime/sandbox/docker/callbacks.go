package docker

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"

	"github.com/nagent/nagent/runtime/sandbox"
)

// callbackRelay gives a long-lived container a fixed callback socket. The
// Manager opens a new callback socket, in a new directory, for every call,
// but a container's mounts are fixed when it starts. So the relay listens
// on tools.sock in a directory of its own, mounted at /run/nagent for the
// container's life, and joins each connection to the current call's socket.
// Between calls it refuses connections, and at the end of a call it closes
// the ones still open.
type callbackRelay struct {
	root string // private parent (0700), removed by close
	dir  string // mounted at sandbox.SocketDirPath
	ln   net.Listener

	mu     sync.Mutex
	target string // the current call's socket; "" between calls
	conns  map[net.Conn]struct{}
	done   chan struct{}
}

func newCallbackRelay() (*callbackRelay, error) {
	root, err := os.MkdirTemp("", "nagent-docker-")
	if err != nil {
		return nil, fmt.Errorf("docker sandbox: callback socket dir: %w", err)
	}
	dir := filepath.Join(root, "s")
	if err := os.Mkdir(dir, 0o755); err != nil {
		os.RemoveAll(root)
		return nil, fmt.Errorf("docker sandbox: callback socket dir: %w", err)
	}
	path := filepath.Join(dir, sandbox.SocketName)
	ln, err := net.Listen("unix", path)
	if err != nil {
		os.RemoveAll(root)
		return nil, fmt.Errorf("docker sandbox: callback socket: %w", err)
	}
	// The sandbox user differs from the server's; the 0700 parent keeps
	// other host users out.
	if err := os.Chmod(path, 0o666); err != nil {
		ln.Close()
		os.RemoveAll(root)
		return nil, fmt.Errorf("docker sandbox: callback socket: %w", err)
	}
	r := &callbackRelay{root: root, dir: dir, ln: ln, conns: map[net.Conn]struct{}{}, done: make(chan struct{})}
	go r.serve()
	return r, nil
}

func (r *callbackRelay) serve() {
	defer close(r.done)
	for {
		c, err := r.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		r.mu.Lock()
		target := r.target
		if target == "" {
			r.mu.Unlock()
			c.Close()
			continue
		}
		r.conns[c] = struct{}{}
		r.mu.Unlock()
		go r.join(c, target)
	}
}

// join copies between the sandbox's connection c and the call's socket.
func (r *callbackRelay) join(c net.Conn, target string) {
	defer func() {
		r.mu.Lock()
		delete(r.conns, c)
		r.mu.Unlock()
		c.Close()
	}()
	up, err := net.Dial("unix", target)
	if err != nil {
		return
	}
	r.mu.Lock()
	if r.target != target { // the call ended while dialling
		r.mu.Unlock()
		up.Close()
		return
	}
	r.conns[up] = struct{}{}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.conns, up)
		r.mu.Unlock()
		up.Close()
	}()
	go func() {
		_, _ = io.Copy(up, c)
		if uc, ok := up.(*net.UnixConn); ok {
			_ = uc.CloseWrite()
		}
	}()
	_, _ = io.Copy(c, up)
}

// startCall points the relay at the call's socket dir.
func (r *callbackRelay) startCall(socketDir string) {
	r.mu.Lock()
	r.target = filepath.Join(socketDir, sandbox.SocketName)
	r.mu.Unlock()
}

// endCall refuses new connections and closes open ones.
func (r *callbackRelay) endCall() {
	r.mu.Lock()
	r.target = ""
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
}

func (r *callbackRelay) close() {
	r.endCall()
	r.ln.Close()
	<-r.done
	os.RemoveAll(r.root)
}
