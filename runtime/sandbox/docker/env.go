package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/nagent/nagent/runtime/sandbox"
)

// LiveScratchName is the directory, beside the Manager's per-call scratch
// dirs, that is mounted at /scratch for the container's life; see the
// package documentation.
const LiveScratchName = ".docker-scratch"

// ErrClosed is returned by Exec after Close.
var ErrClosed = errors.New("docker sandbox: environment is closed")

// mounts are the host directories, named by the calls, that a container
// was created with.
type mounts struct {
	scratch, module string
}

// Env is the docker environment of one session: one long-lived container.
type Env struct {
	b     *Backend
	cli   *client.Client
	spec  sandbox.EnvSpec
	relay *callbackRelay

	// closeCtx is cancelled by Close, which ends a running Exec.
	closeCtx   context.Context
	closeStart context.CancelFunc

	mu          sync.Mutex // held by Exec and by Close's removal
	containerID string
	mounted     mounts
	broken      bool // the container was killed; replace it on next Exec
	closed      bool
}

var _ sandbox.Env = (*Env)(nil)

// ContainerID is the id of the session's container, or "" before the first
// Exec and after Close.
func (e *Env) ContainerID() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.containerID
}

// Close kills and removes the container. It makes a running Exec return at
// once (with reason killed) and is safe to call more than once.
func (e *Env) Close(ctx context.Context) error {
	e.closeStart()
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.closed {
		e.closed = true
		defer e.relay.close()
	}
	if err := e.removeContainer(ctx); err != nil {
		return err
	}
	if e.mounted.scratch != "" {
		os.RemoveAll(e.mounted.scratch)
	}
	return nil
}

// removeContainer kills and removes the current container, if any. e.mu is
// held.
func (e *Env) removeContainer(ctx context.Context) error {
	if e.containerID == "" {
		return nil
	}
	id := e.containerID
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	_, err := e.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("docker sandbox: remove container %s of session %s: %w", shortID(id), e.spec.SessionID, err)
	}
	e.containerID = ""
	e.broken = false
	return nil
}

// ensureContainer starts the session's container with the mounts m,
// replacing one that has other mounts or was killed. e.mu is held.
func (e *Env) ensureContainer(ctx context.Context, m mounts) error {
	if e.containerID != "" && !e.broken && e.mounted == m {
		return nil
	}
	if e.containerID != "" {
		if err := e.removeContainer(ctx); err != nil {
			return err
		}
	}
	cfg, host := e.containerConfig(m)
	name := containerName(e.spec.SessionID)
	created, err := e.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: name, Config: cfg, HostConfig: host,
	})
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return fmt.Errorf("docker sandbox: image %q not found: build it with runtime/sandbox/docker/testdata/build-image.sh: %w", e.b.cfg.Image, err)
		}
		return fmt.Errorf("docker sandbox: create container for session %s: %w", e.spec.SessionID, err)
	}
	e.containerID = created.ID
	if _, err := e.cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		_ = e.removeContainer(ctx)
		return fmt.Errorf("docker sandbox: start container for session %s: %w", e.spec.SessionID, err)
	}
	e.mounted = m
	e.b.log.Debug("docker sandbox container started", "session_id", e.spec.SessionID, "container", shortID(created.ID))
	return nil
}

// containerConfig is the whole isolation policy of a sandbox container.
func (e *Env) containerConfig(m mounts) (*container.Config, *container.HostConfig) {
	l := e.spec.Limits
	init := true
	// Docker's init, the idle process and the supervisor shell are not the
	// code's processes.
	pids := int64(l.Processes) + keeperProcesses + 1
	cfg := &container.Config{
		Image: e.b.cfg.Image,
		// Docker's init (PID 1) and the idle process it waits on run as
		// another non-root user than the code, so that the supervisor's
		// `kill -9 -1` (which only reaches the sandbox user's processes)
		// leaves the container running. Every execution is an exec beside
		// them, as Config.User.
		User:            keeperUser(e.b.cfg.User),
		Cmd:             []string{"sleep", "2147483647"},
		Env:             []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"},
		WorkingDir:      "/tmp",
		NetworkDisabled: true,
		Labels: map[string]string{
			LabelSandbox: "1",
			LabelSession: e.spec.SessionID,
			LabelOwner:   owner(),
		},
	}
	binds := []string{
		m.scratch + ":" + sandbox.ScratchPath + ":rw",
		e.relay.dir + ":" + sandbox.SocketDirPath + ":ro",
		m.module + ":" + sandbox.ModuleDirPath + ":ro",
	}
	if e.spec.Workspace != "" {
		binds = append(binds, e.spec.Workspace+":"+sandbox.WorkspacePath+":ro")
	}
	host := &container.HostConfig{
		Binds:          binds,
		NetworkMode:    "none",
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
		IpcMode:        "private",
		Init:           &init,
		Tmpfs: map[string]string{
			"/tmp": "rw,nosuid,nodev,size=" + strconv.FormatInt(e.b.cfg.TmpfsBytes, 10) + ",mode=1777",
		},
		Resources: container.Resources{
			Memory:     l.MemoryBytes,
			MemorySwap: l.MemoryBytes, // no swap
			NanoCPUs:   int64(e.b.cfg.CPUs * 1e9),
			PidsLimit:  &pids,
			Ulimits: []*container.Ulimit{
				// SIGXCPU at the soft limit, SIGKILL one second later.
				{Name: "cpu", Soft: int64(l.CPUSeconds), Hard: int64(l.CPUSeconds) + 1},
				{Name: "fsize", Soft: l.FileSizeBytes, Hard: l.FileSizeBytes},
				{Name: "nofile", Soft: int64(l.OpenFiles), Hard: int64(l.OpenFiles)},
			},
		},
	}
	return cfg, host
}

var unsafeName = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// containerName is nagent-sandbox-<session>-<random>: readable in
// `docker ps`, and unique even when a session's container is replaced.
func containerName(session string) string {
	s := unsafeName.ReplaceAllString(session, "-")
	if len(s) > 40 {
		s = s[:40]
	}
	var r [4]byte
	_, _ = rand.Read(r[:])
	return "nagent-sandbox-" + s + "-" + hex.EncodeToString(r[:])
}

// prepareHostDirs checks the request's directories and names the mounts
// they need.
func (e *Env) prepareHostDirs(req sandbox.ExecRequest) (m mounts, err error) {
	abs := func(what, p string) (string, error) {
		if p == "" {
			return "", fmt.Errorf("docker sandbox: exec: empty %s dir", what)
		}
		a, err := filepath.Abs(p)
		if err != nil {
			return "", fmt.Errorf("docker sandbox: exec: %s dir %q: %w", what, p, err)
		}
		if fi, err := os.Stat(a); err != nil || !fi.IsDir() {
			return "", fmt.Errorf("docker sandbox: exec: %s dir %q is not a directory", what, p)
		}
		return a, nil
	}
	scratch, err := abs("scratch", req.Scratch)
	if err != nil {
		return m, err
	}
	if _, err := abs("socket", req.SocketDir); err != nil {
		return m, err
	}
	if m.module, err = abs("module", req.ModuleDir); err != nil {
		return m, err
	}
	m.scratch = filepath.Join(filepath.Dir(scratch), LiveScratchName)
	return m, nil
}

// keeperUser is the uid:gid of the container's init and idle process: a
// non-root user other than the sandbox user.
func keeperUser(sandboxUser string) string {
	keeper := 65533
	if uid, _, ok := numericUser(sandboxUser); ok && uid == keeper {
		keeper = 65532
	}
	return fmt.Sprintf("%d:%d", keeper, keeper)
}
