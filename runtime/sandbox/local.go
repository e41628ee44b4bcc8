//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DefaultPython is the interpreter the sandboxes run. It is an absolute
// path: a pyenv shim on PATH costs about 450 ms per start.
const DefaultPython = "/usr/bin/python3"

// DefaultCPUs is the CPU-time share of one local sandbox when
// LocalBackend.CPUs is zero: one core.
const DefaultCPUs = 1.0

// sandboxUID is the user (and group) id code runs as inside the namespace.
const sandboxUID = "1000"

// LocalBackend isolates each execution with Linux namespaces through
// bubblewrap: new user, PID, mount, IPC, UTS, cgroup and network namespaces
// (only a down loopback, so no network), a read-only root holding /usr only,
// a tmpfs /tmp, the workspace read-only, the scratch dir writable, uid 1000
// inside, rlimits on CPU time, address space, file size and open files, and
// a process cap from a cgroup v1 pids group per session (RLIMIT_NPROC does
// nothing for a real uid 0), and, where the controllers are writable, a
// memory group capping the whole tree and a cpu group capping its CPU
// share. The groups are children of this process's own groups. The
// program starts from an empty environment.
// bwrap is started stopped at exec under ptrace, put in the groups and under
// the rlimits, then released (startConfined); where ptrace is unavailable a
// /bin/sh wrapper does the same before it execs bwrap, one exec slower.
// A wall-clock timeout kills the whole tree: the pids group is swept with
// SIGKILL until it is empty, so nothing outlives an execution.
//
// When the process is not root and no pids cgroup is writable, the process
// cap falls back to RLIMIT_NPROC set to the user's running processes plus
// Limits.Processes (the limit counts every process of the user): best
// effort, and untested in CI, which runs as root.
type LocalBackend struct {
	// Bwrap is the bubblewrap binary; "" means "bwrap" on PATH.
	Bwrap string
	// Python is the interpreter inside; "" means DefaultPython.
	Python string
	// CgroupRoot is where the cgroup v1 controllers are mounted; "" means
	// /sys/fs/cgroup.
	CgroupRoot string
	// CPUs is the CPU-time share of one sandbox in cores; 0 means
	// DefaultCPUs, a negative value no cap.
	CPUs float64

	once     sync.Once
	probeErr error
	bwrap    string
	cgroupOK bool
	// ptraceOK: bwrap can be started stopped at exec (see startConfined);
	// otherwise a /bin/sh wrapper joins the cgroups and sets the rlimits.
	ptraceOK bool
}

var _ Backend = (*LocalBackend)(nil)

// Name is "local".
func (b *LocalBackend) Name() string { return "local" }

// Available checks that bwrap and the interpreter exist and that a
// namespace sandbox actually starts here (it runs `true` inside one). The
// probe runs once per backend value.
func (b *LocalBackend) Available(ctx context.Context) error {
	b.once.Do(func() { b.probeErr = b.probe(ctx) })
	return b.probeErr
}

func (b *LocalBackend) python() string {
	if b.Python != "" {
		return b.Python
	}
	return DefaultPython
}

func (b *LocalBackend) cgroupRoot() string {
	if b.CgroupRoot != "" {
		return b.CgroupRoot
	}
	return cgroupRoot
}

func (b *LocalBackend) cpus() float64 {
	if b.CPUs == 0 {
		return DefaultCPUs
	}
	return b.CPUs
}

func (b *LocalBackend) probe(ctx context.Context) error {
	name := b.Bwrap
	if name == "" {
		name = "bwrap"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return fmt.Errorf("sandbox local: bubblewrap not found (%v); install it (Debian: apt-get install bubblewrap) or set sandbox.backend", err)
	}
	b.bwrap = path
	if _, err := os.Stat(b.python()); err != nil {
		return fmt.Errorf("sandbox local: interpreter %s: %w; install python3", b.python(), err)
	}
	b.cgroupOK = b.cgroupWritable()
	if !b.cgroupOK && os.Geteuid() == 0 {
		return fmt.Errorf("sandbox local: running as root, and no cgroup v1 pids group can be made under %s; RLIMIT_NPROC cannot cap processes for uid 0, so the local sandbox refuses to run (mount the cgroup v1 pids controller, or run nagent as an unprivileged user)", b.cgroupRoot())
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	args := append(b.namespaceArgs(), b.rootArgs()...)
	args = append(args, "--remount-ro", "/", "--", "/usr/bin/true")
	// Prefer the shell-less launch (startConfined) when it works here.
	cmd := exec.CommandContext(pctx, path, args...)
	cmd.Env = []string{}
	if err := startConfined(cmd, nil, nil); err == nil && cmd.Wait() == nil {
		b.ptraceOK = true
		return nil
	}
	var stderr bytes.Buffer
	cmd = exec.CommandContext(pctx, path, args...)
	cmd.Env = []string{}
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("sandbox local: bubblewrap cannot create namespaces here (%v: %s); enable user namespaces (sysctl user.max_user_namespaces, kernel.unprivileged_userns_clone) or use sandbox.backend docker", err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// cgroupWritable reports whether a child pids group can be made.
func (b *LocalBackend) cgroupWritable() bool {
	dir, err := makeGroup(b.cgroupRoot(), "pids", "probe", [][2]string{{"pids.max", "1"}})
	if err != nil || dir == "" {
		return false
	}
	os.Remove(dir)
	return true
}

// namespaceArgs are the bwrap flags every sandbox shares.
func (b *LocalBackend) namespaceArgs() []string {
	return []string{
		"--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
		"--uid", sandboxUID, "--gid", sandboxUID, "--hostname", "sandbox",
		"--clearenv",
	}
}

// rootArgs build the read-only root: /usr and the top-level links or
// directories into it (bin, sbin, lib…), nothing else of the host.
func (b *LocalBackend) rootArgs() []string {
	args := []string{"--ro-bind", "/usr", "/usr"}
	for _, l := range []string{"bin", "sbin", "lib", "lib32", "lib64", "libx32"} {
		host := "/" + l
		if target, err := os.Readlink(host); err == nil {
			args = append(args, "--symlink", target, host)
		} else if fi, err := os.Stat(host); err == nil && fi.IsDir() {
			args = append(args, "--ro-bind", host, host)
		}
	}
	return args
}

// Open makes the session's pids group (when cgroups are usable). Each
// execution is a fresh namespace set; the session's state across calls is
// the workspace and the pids group.
func (b *LocalBackend) Open(ctx context.Context, spec EnvSpec) (Env, error) {
	if err := b.Available(ctx); err != nil {
		return nil, err
	}
	env := &localEnv{b: b, spec: spec, limits: spec.Limits.WithDefaults()}
	env.baseArgs = env.staticArgs()
	if b.cgroupOK {
		cg, err := newCgroups(b.cgroupRoot(), spec.SessionID, env.limits, b.cpus())
		if err != nil {
			return nil, err
		}
		if cg.pids == "" {
			cg.remove(func() {})
			return nil, errors.New("sandbox local: the pids cgroup stopped being writable")
		}
		env.cg = cg
	}
	return env, nil
}

// localEnv is one session's local sandbox.
type localEnv struct {
	b      *LocalBackend
	spec   EnvSpec
	limits Limits
	cg     *cgroups // nil without cgroups
	// baseArgs are the bwrap flags that do not change between calls,
	// built once in Open.
	baseArgs []string

	mu      sync.Mutex
	closed  bool
	running *exec.Cmd
	cancel  context.CancelCauseFunc
}

// Exec runs req.Code with python inside a fresh namespace set.
func (e *localEnv) Exec(ctx context.Context, req ExecRequest) (ExecResult, error) {
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if err := os.WriteFile(filepath.Join(req.Scratch, CodeFileName), req.Code, 0o644); err != nil {
		return ExecResult{}, fmt.Errorf("sandbox local: write code: %w", err)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	tctx, tcancel := context.WithTimeoutCause(ctx, timeout, errTimeout)
	defer tcancel()

	var cmd *exec.Cmd
	if e.b.ptraceOK {
		cmd = exec.Command(e.b.bwrap, e.bwrapArgs(req)...)
	} else {
		cmd = exec.Command("/bin/sh", append([]string{"-c", localWrapper, "sh", strings.Join(e.procsFiles(), " ")}, e.ulimitArgs()...)...)
		cmd.Args = append(cmd.Args, e.b.bwrap)
		cmd.Args = append(cmd.Args, e.bwrapArgs(req)...)
	}
	cmd.Env = []string{} // bwrap (and the wrapper) get nothing from the server either
	stdout := &OutputBuffer{Limit: e.limits.OutputBytes}
	stderr := &OutputBuffer{Limit: e.limits.OutputBytes}
	// Own pipes rather than exec's copying: Wait must not wait for a
	// descendant that keeps stdout open; the sweep kills it first.
	outR, outW, err := os.Pipe()
	if err != nil {
		return ExecResult{}, fmt.Errorf("sandbox local: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return ExecResult{}, fmt.Errorf("sandbox local: %w", err)
	}
	defer outR.Close()
	defer errR.Close()
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}

	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		outW.Close()
		errW.Close()
		return ExecResult{}, errEnvClosed
	}
	events, memFails := counter(e.pidsDir(), "pids.events"), counter(e.memDir(), "memory.failcnt")
	start := time.Now()
	if e.b.ptraceOK {
		err = startConfined(cmd, e.procsFiles(), e.rlimits())
	} else {
		err = cmd.Start()
	}
	outW.Close()
	errW.Close()
	if err != nil {
		e.mu.Unlock()
		return ExecResult{}, fmt.Errorf("sandbox local: start: %w", err)
	}
	e.running, e.cancel = cmd, cancel
	e.mu.Unlock()

	var copies sync.WaitGroup
	copies.Add(2)
	go func() { defer copies.Done(); io.Copy(stdout, outR) }()
	go func() { defer copies.Done(); io.Copy(stderr, errR) }()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var waitErr error
	select {
	case waitErr = <-done:
	case <-tctx.Done():
		e.kill(cmd)
		waitErr = <-done
	}
	dur := time.Since(start)
	// The pid namespace dies with its init, but asynchronously: sweep until
	// nothing of this execution is left, then drain the pipes.
	e.sweep()
	copied := make(chan struct{})
	go func() { copies.Wait(); close(copied) }()
	select {
	case <-copied:
	case <-time.After(2 * time.Second):
		outR.Close()
		errR.Close()
		<-copied
	}

	e.mu.Lock()
	e.running, e.cancel = nil, nil
	e.mu.Unlock()

	res := ExecResult{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), Duration: dur}
	res.ExitCode, res.Reason = exitOf(cmd, waitErr)
	switch {
	case context.Cause(tctx) == errTimeout:
		res.Reason = ExitTimeout
	case tctx.Err() != nil:
		res.Reason = ExitKilled
	case res.Reason != ExitOK && counter(e.memDir(), "memory.failcnt") > memFails:
		res.Reason = ExitOOM
	case res.Reason != ExitOK && counter(e.pidsDir(), "pids.events") > events:
		res.Reason = ExitLimit
	case res.Reason == ExitError && looksLikeMemoryError(res.Stderr):
		res.Reason = ExitOOM
	}
	if res.Reason == ExitTimeout && counter(e.pidsDir(), "pids.events") > events {
		res.Reason = ExitLimit
	}
	return res, nil
}

// localWrapper joins the pids group and sets the rlimits, then execs bwrap:
// the cap holds from the first instruction of the sandbox on. It is the
// fallback where startConfined (ptrace) is unavailable.
// $1 lists the cgroup.procs files to join, space separated ("" for none);
// then ulimit flag/value pairs
// up to "--"; then the bwrap command line.
const localWrapper = `for p in $1; do echo $$ > "$p" || exit 125; done
shift
while [ "$1" != "--" ]; do ulimit "$1" "$2" || exit 125; shift 2; done
shift
exec "$@"`

func (e *localEnv) procsFiles() []string {
	if e.cg == nil {
		return nil
	}
	return e.cg.procsFiles()
}

func (e *localEnv) pidsDir() string {
	if e.cg == nil {
		return ""
	}
	return e.cg.pids
}

func (e *localEnv) memDir() string {
	if e.cg == nil {
		return ""
	}
	return e.cg.memory
}

// rlimits are the limits of every process of an execution: CPU time,
// address space, file size, open files, and, without cgroups, the process
// count (best effort for a non-root server: RLIMIT_NPROC counts every
// process of the user, so those already running are allowed for).
func (e *localEnv) rlimits() []rlimit {
	l := e.limits
	out := []rlimit{
		{syscall.RLIMIT_CPU, uint64(l.CPUSeconds)},
		{syscall.RLIMIT_AS, uint64(max(l.MemoryBytes/1024, 1)) * 1024},
		{syscall.RLIMIT_FSIZE, uint64(max(l.FileSizeBytes/512, 1)) * 512},
		{syscall.RLIMIT_NOFILE, uint64(l.OpenFiles)},
	}
	if e.cg == nil {
		out = append(out, rlimit{rlimitNproc, uint64(userProcesses() + l.Processes)})
	}
	return out
}

// rlimitNproc is RLIMIT_NPROC (not in package syscall).
const rlimitNproc = 6

// ulimitArgs are rlimits as ulimit flag/value pairs for localWrapper,
// ending in "--". /bin/sh (dash) counts -v in KiB and -f in blocks of 512
// bytes.
func (e *localEnv) ulimitArgs() []string {
	var out []string
	for _, l := range e.rlimits() {
		flag, v := "", l.value
		switch l.resource {
		case syscall.RLIMIT_CPU:
			flag = "-t"
		case syscall.RLIMIT_AS:
			flag, v = "-v", v/1024
		case syscall.RLIMIT_FSIZE:
			flag, v = "-f", v/512
		case syscall.RLIMIT_NOFILE:
			flag = "-n"
		case rlimitNproc:
			flag = "-p"
		}
		out = append(out, flag, strconv.FormatUint(v, 10))
	}
	return append(out, "--")
}

// staticArgs are the bwrap flags shared by every call of this sandbox.
func (e *localEnv) staticArgs() []string {
	args := append(e.b.namespaceArgs(), e.b.rootArgs()...)
	args = append(args,
		"--proc", "/proc",
		"--dev", "/dev",
		"--tmpfs", "/tmp",
		"--dir", "/etc",
		"--ro-bind", e.spec.Workspace, WorkspacePath,
	)
	for _, f := range []string{"/etc/localtime", "/etc/ld.so.cache"} {
		if _, err := os.Stat(f); err == nil {
			args = append(args, "--ro-bind", f, f)
		}
	}
	return args
}

func (e *localEnv) bwrapArgs(req ExecRequest) []string {
	args := append(slices.Clip(e.baseArgs),
		"--bind", req.Scratch, ScratchPath,
		"--ro-bind", req.ModuleDir, ModuleDirPath,
		"--bind", req.SocketDir, SocketDirPath,
		"--chdir", ScratchPath, "--remount-ro", "/",
	)
	keys := make([]string, 0, len(req.Env))
	for k := range req.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "--setenv", k, req.Env[k])
	}
	return append(args, "--", e.b.python(), "-B", ScratchPath+"/"+CodeFileName)
}

// kill ends one execution at once: the wrapper's process group, then
// everything in the pids group.
func (e *localEnv) kill(cmd *exec.Cmd) {
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Process.Kill()
	}
	e.sweep()
}

// sweep SIGKILLs every process of the pids group until it is empty (or a
// few seconds pass; a process in uninterruptible sleep can take a moment).
func (e *localEnv) sweep() {
	if e.cg == nil {
		return
	}
	deadline := time.Now().Add(5 * time.Second)
	// Usually empty at once: bwrap's pid 1 outlives every other process of
	// its namespace. Otherwise the stragglers are dying already, so start
	// polling fast and back off.
	pause := 100 * time.Microsecond
	for {
		pids := readPids(filepath.Join(e.cg.pids, "cgroup.procs"))
		if len(pids) == 0 || time.Now().After(deadline) {
			return
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(pause)
		pause = min(2*pause, 2*time.Millisecond)
	}
}

func readPids(file string) []int {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		if n, err := strconv.Atoi(f); err == nil && n > 0 {
			pids = append(pids, n)
		}
	}
	return pids
}

// Close kills a running execution and removes the pids group.
func (e *localEnv) Close(context.Context) error {
	e.mu.Lock()
	e.closed = true
	cmd, cancel := e.running, e.cancel
	e.mu.Unlock()
	if cancel != nil {
		cancel(errEnvClosed)
	}
	if cmd != nil {
		e.kill(cmd)
	}
	e.sweep()
	if e.cg != nil {
		return e.cg.remove(e.sweep)
	}
	return nil
}

// exitOf maps the wrapper's wait status to an exit code and reason. bwrap
// reports a program killed by signal N as status 128+N.
func exitOf(cmd *exec.Cmd, err error) (int, ExitReason) {
	st := cmd.ProcessState
	if st == nil {
		return -1, ExitKilled
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, signalReason(ws.Signal())
	}
	code := st.ExitCode()
	switch {
	case code == 0 && err == nil:
		return 0, ExitOK
	case code > 128 && code < 160:
		return code, signalReason(syscall.Signal(code - 128))
	default:
		return code, ExitError
	}
}

// userProcesses counts the processes of this process's real uid.
func userProcesses() int {
	uid := strconv.Itoa(os.Getuid())
	entries, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
				if f[1] == uid {
					n++
				}
				break
			}
		}
	}
	return n
}
