package docker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/nagent/nagent/runtime/sandbox"
)

// DefaultImage is the image used when Config.Image is empty; build it with
// testdata/build-image.sh.
const DefaultImage = "nagent-sandbox:debian"

// Labels put on every sandbox container, so they can be found and removed.
const (
	LabelSandbox = "org.nagent.sandbox"
	LabelSession = "org.nagent.sandbox.session"
	// LabelOwner is host:pid of the process that created the container.
	LabelOwner = "org.nagent.sandbox.owner"
)

// Config configures the docker backend. The zero Config uses DOCKER_HOST
// (or the engine's default socket), DefaultImage and one CPU.
type Config struct {
	// Host is the engine address, e.g. unix:///var/run/docker.sock; empty
	// means DOCKER_HOST, then the default socket.
	Host string `json:"host" yaml:"host"`
	// Image is the sandbox image; it must hold python3, busybox sh and the
	// /scratch link (see testdata/build-image.sh). Empty means DefaultImage.
	Image string `json:"image" yaml:"image"`
	// User is the uid:gid the code runs as. Empty means the server's own
	// uid:gid, or 65534:65534 when the server runs as root. Root is refused.
	User string `json:"user" yaml:"user"`
	// CPUs caps the container's CPU (e.g. 0.5, 2); zero means 1.
	CPUs float64 `json:"cpus" yaml:"cpus"`
	// TmpfsBytes is the size of the /tmp tmpfs; zero means 64 MiB.
	TmpfsBytes int64 `json:"tmpfs_bytes" yaml:"tmpfs_bytes"`
}

// Backend is the docker sandbox backend. Create it with New; it connects to
// the engine on first use.
type Backend struct {
	cfg Config
	log *slog.Logger

	mu  sync.Mutex
	cli *client.Client

	staleOnce sync.Once
}

var _ sandbox.Backend = (*Backend)(nil)

// New returns a docker backend for cfg. It does not contact the engine;
// Available does.
func New(cfg Config, log *slog.Logger) *Backend {
	if cfg.Image == "" {
		cfg.Image = DefaultImage
	}
	if cfg.CPUs <= 0 {
		cfg.CPUs = 1
	}
	if cfg.TmpfsBytes <= 0 {
		cfg.TmpfsBytes = 64 << 20
	}
	if cfg.User == "" {
		cfg.User = defaultUser()
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Backend{cfg: cfg, log: log}
}

func defaultUser() string {
	if uid := os.Geteuid(); uid != 0 {
		return fmt.Sprintf("%d:%d", uid, os.Getegid())
	}
	return "65534:65534"
}

// Name is "docker".
func (b *Backend) Name() string { return "docker" }

// Client returns the engine client, creating it on first use.
func (b *Backend) Client() (*client.Client, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cli != nil {
		return b.cli, nil
	}
	opts := []client.Opt{client.FromEnv}
	if b.cfg.Host != "" {
		opts = append(opts, client.WithHost(b.cfg.Host))
	}
	cli, err := client.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("docker sandbox: engine client for %q: %w (set sandbox.docker.host or DOCKER_HOST)", b.hostName(), err)
	}
	b.cli = cli
	return cli, nil
}

func (b *Backend) hostName() string {
	if b.cfg.Host != "" {
		return b.cfg.Host
	}
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		return h
	}
	return client.DefaultDockerHost
}

// Available checks that the engine answers, that the image exists and that
// the configured user is not root.
func (b *Backend) Available(ctx context.Context) error {
	if uid, _, ok := numericUser(b.cfg.User); ok && uid == 0 {
		return errors.New("docker sandbox: sandbox.docker.user is root; use a non-root uid:gid such as 65534:65534")
	}
	cli, err := b.Client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return fmt.Errorf("docker sandbox: engine at %s does not answer: %w (start dockerd, or set sandbox.docker.host; see the README's \"Docker sandbox backend\")", b.hostName(), err)
	}
	if _, err := cli.ImageInspect(ctx, b.cfg.Image); err != nil {
		if cerrdefs.IsNotFound(err) {
			return fmt.Errorf("docker sandbox: image %q not found on %s: build it with runtime/sandbox/docker/testdata/build-image.sh (no registry needed)", b.cfg.Image, b.hostName())
		}
		return fmt.Errorf("docker sandbox: inspect image %q: %w", b.cfg.Image, err)
	}
	b.staleOnce.Do(func() {
		if _, err := b.RemoveStale(ctx); err != nil {
			b.log.Warn("docker sandbox: removing stale containers failed", "err", err)
		}
	})
	return nil
}

// Open returns the environment of one session. Its container is created
// and started by the first Exec, once the directories to mount are known
// (see the package documentation).
func (b *Backend) Open(ctx context.Context, spec sandbox.EnvSpec) (sandbox.Env, error) {
	if uid, _, ok := numericUser(b.cfg.User); ok && uid == 0 {
		return nil, errors.New("docker sandbox: sandbox.docker.user is root; use a non-root uid:gid such as 65534:65534")
	}
	if spec.SessionID == "" {
		return nil, errors.New("docker sandbox: open: empty session id")
	}
	if spec.Workspace != "" {
		ws, err := filepath.Abs(spec.Workspace)
		if err != nil {
			return nil, fmt.Errorf("docker sandbox: workspace %q: %w", spec.Workspace, err)
		}
		if fi, err := os.Stat(ws); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("docker sandbox: workspace %q is not a directory", spec.Workspace)
		}
		spec.Workspace = ws
	}
	cli, err := b.Client()
	if err != nil {
		return nil, err
	}
	spec.Limits = spec.Limits.WithDefaults()
	relay, err := newCallbackRelay()
	if err != nil {
		return nil, err
	}
	closeCtx, closeStart := context.WithCancel(context.Background())
	return &Env{
		b:          b,
		cli:        cli,
		spec:       spec,
		relay:      relay,
		closeCtx:   closeCtx,
		closeStart: closeStart,
	}, nil
}

// RemoveStale kills and removes the sandbox containers that a process of
// this host which is no longer running left behind (after a crash or a
// kill -9), and returns how many it removed. Containers of live processes,
// and of other hosts sharing the engine, are left alone. Available runs it
// once per Backend.
func (b *Backend) RemoveStale(ctx context.Context) (int, error) {
	cli, err := b.Client()
	if err != nil {
		return 0, err
	}
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", LabelSandbox),
	})
	if err != nil {
		return 0, fmt.Errorf("docker sandbox: list stale containers: %w", err)
	}
	host, _ := os.Hostname()
	n := 0
	for _, c := range list.Items {
		h, pid, ok := parseOwner(c.Labels[LabelOwner])
		if !ok || h != host || processAlive(pid) {
			continue
		}
		if _, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
			return n, fmt.Errorf("docker sandbox: remove stale container %s: %w", shortID(c.ID), err)
		}
		b.log.Info("docker sandbox: removed a stale container", "container", shortID(c.ID), "session_id", c.Labels[LabelSession], "owner", c.Labels[LabelOwner])
		n++
	}
	return n, nil
}

// owner is the LabelOwner value of this process: host:pid.
func owner() string {
	host, _ := os.Hostname()
	return host + ":" + strconv.Itoa(os.Getpid())
}

func parseOwner(v string) (host string, pid int, ok bool) {
	i := strings.LastIndexByte(v, ':')
	if i < 0 {
		return "", 0, false
	}
	pid, err := strconv.Atoi(v[i+1:])
	return v[:i], pid, err == nil && pid > 0
}

// numericUser parses "uid[:gid]".
func numericUser(user string) (uid, gid int, ok bool) {
	u, g, hasGroup := strings.Cut(user, ":")
	uid, err := strconv.Atoi(u)
	if err != nil {
		return 0, 0, false
	}
	gid = uid
	if hasGroup {
		if gid, err = strconv.Atoi(g); err != nil {
			return 0, 0, false
		}
	}
	return uid, gid, true
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
