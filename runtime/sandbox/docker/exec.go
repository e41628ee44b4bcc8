package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/nagent/nagent/runtime/sandbox"
)

// supervisor runs each execution in /scratch: it empties /tmp (a tmpfs
// that lives as long as the container), runs the code, then kills
// every process of the sandbox user but init (kill is a shell builtin, so
// the shell itself survives to report the status), so nothing the code
// started outlives the call. Waiting on a background job keeps the shell
// from printing "Killed" into stderr.
const supervisor = `rm -rf /tmp/* /tmp/.[!.]* /tmp/..?* 2>/dev/null
python3 ` + sandbox.CodeFileName + ` </dev/null &
wait $!
rc=$?
kill -9 -1 2>/dev/null
exit $rc`

// Signals as exit statuses (128+n) of the supervised program.
const (
	statusSIGKILL = 128 + 9
	statusSIGXCPU = 128 + 24
	statusSIGXFSZ = 128 + 25
)

// cleanupTimeout bounds the engine calls that clean up after an execution,
// which run even when the caller's context is done.
const cleanupTimeout = 20 * time.Second

// Exec runs req.Code in the session's container (creating it on the first
// call) and returns its output and exit reason. See the package
// documentation for how processes are ended.
func (e *Env) Exec(ctx context.Context, req sandbox.ExecRequest) (sandbox.ExecResult, error) {
	start := time.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return sandbox.ExecResult{}, ErrClosed
	}
	m, err := e.prepareHostDirs(req)
	if err != nil {
		return sandbox.ExecResult{}, err
	}
	// Stop on Close as well as on the caller's cancellation.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(e.closeCtx, cancel)
	defer stop()

	if err := e.ensureContainer(ctx, m); err != nil {
		if ctx.Err() != nil {
			return e.killedResult(start), nil
		}
		return sandbox.ExecResult{}, err
	}
	if err := stageIn(m.scratch, req.Scratch, req.Code); err != nil {
		_ = stageOut(m.scratch, req.Scratch)
		return sandbox.ExecResult{}, err
	}
	e.relay.startCall(req.SocketDir)
	res, err := e.run(ctx, req, start)
	e.relay.endCall()
	// Every process of the call is dead now (run made sure, or removed the
	// container), so nothing writes to the live scratch dir any more.
	if serr := stageOut(m.scratch, req.Scratch); serr != nil && err == nil {
		e.b.log.Warn("docker sandbox: moving the call's files to its scratch dir failed", "session_id", e.spec.SessionID, "err", serr)
	}
	res.Duration = time.Since(start)
	return res, err
}

// run is one exec in a started container. e.mu is held.
func (e *Env) run(ctx context.Context, req sandbox.ExecRequest, start time.Time) (sandbox.ExecResult, error) {
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = sandbox.DefaultTimeout
	}
	id := e.containerID
	created, err := e.cli.ExecCreate(ctx, id, client.ExecCreateOptions{
		User:         e.b.cfg.User,
		AttachStdout: true,
		AttachStderr: true,
		Env:          execEnv(req.Env),
		WorkingDir:   sandbox.ScratchPath,
		Cmd:          []string{"/bin/sh", "-c", supervisor},
	})
	if err != nil {
		if ctx.Err() != nil {
			return e.killedResult(time.Now()), nil
		}
		// The container may have died (killed from outside, or a fork
		// bomb filling its pids): start a fresh one next time.
		e.broken = true
		return sandbox.ExecResult{}, fmt.Errorf("docker sandbox: exec in container %s: %w", shortID(id), err)
	}
	attach, err := e.cli.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		if ctx.Err() != nil {
			e.sweep(ctx)
			return e.killedResult(time.Now()), nil
		}
		e.broken = true
		return sandbox.ExecResult{}, fmt.Errorf("docker sandbox: start exec in container %s: %w", shortID(id), err)
	}
	defer attach.Close()

	stdout := &sandbox.OutputBuffer{Limit: e.spec.Limits.OutputBytes}
	stderr := &sandbox.OutputBuffer{Limit: e.spec.Limits.OutputBytes}
	copied := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(stdout, stderr, attach.Reader)
		copied <- err
	}()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var reason sandbox.ExitReason
	select {
	case <-copied:
	case <-timer.C:
		reason = sandbox.ExitTimeout
	case <-ctx.Done():
		reason = sandbox.ExitKilled
	}
	res := sandbox.ExecResult{ExitCode: -1}
	if reason != "" {
		// Docker cannot kill an exec: kill every process of the sandbox
		// user, or the container if even that fails.
		e.sweep(ctx)
		attach.Close()
		<-copied
		res.Reason = reason
		res.Stdout, res.Stderr = stdout.Bytes(), stderr.Bytes()
		return res, nil
	}

	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	code, err := e.exitCode(cctx, created.ID)
	if err != nil {
		e.broken = true
		return sandbox.ExecResult{}, err
	}
	// The supervisor normally killed everything; make sure, since the code
	// could have killed (or traced) the supervisor first.
	if !e.settled(cctx) {
		e.sweep(ctx)
	}
	res.Stdout, res.Stderr = stdout.Bytes(), stderr.Bytes()
	if code == 126 && bytes.Contains(res.Stdout, []byte("OCI runtime exec failed")) {
		// runc could not start the exec: the container has stopped.
		e.broken = true
		return sandbox.ExecResult{}, fmt.Errorf("docker sandbox: exec in container %s failed: %s", shortID(id), bytes.TrimSpace(res.Stdout))
	}
	res.ExitCode, res.Reason = code, exitReason(code, res.Stderr)
	if code > 128 && code < 128+65 {
		res.ExitCode = -1 // killed by signal code-128
	}
	if code == statusSIGKILL && e.oomKilledSince(cctx, start) {
		res.Reason = sandbox.ExitOOM
	}
	return res, nil
}

// exitReason maps the supervised program's exit status to a reason. A
// SIGKILL is the CPU hard limit unless the engine saw an OOM kill, which the
// caller checks.
func exitReason(code int, stderr []byte) sandbox.ExitReason {
	switch {
	case code == 0:
		return sandbox.ExitOK
	case code == statusSIGKILL, code == statusSIGXCPU, code == statusSIGXFSZ:
		return sandbox.ExitLimit
	case code > 128 && code < 128+65:
		return sandbox.ExitError
	}
	switch lastLine(stderr) {
	case "MemoryError":
		return sandbox.ExitOOM
	case "BlockingIOError":
		// fork failed: the pids limit
		return sandbox.ExitLimit
	}
	return sandbox.ExitError
}

// lastLine returns the exception name on the last line of a traceback.
func lastLine(stderr []byte) string {
	s := bytes.TrimSpace(stderr)
	if i := bytes.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if i := bytes.IndexByte(s, ':'); i >= 0 {
		s = s[:i]
	}
	return string(s)
}

// exitCode waits (briefly) for the engine to record the exec's exit.
func (e *Env) exitCode(ctx context.Context, execID string) (int, error) {
	for delay := time.Millisecond; ; delay = min(delay*2, 100*time.Millisecond) {
		info, err := e.cli.ExecInspect(ctx, execID, client.ExecInspectOptions{})
		if err != nil {
			return 0, fmt.Errorf("docker sandbox: inspect exec: %w", err)
		}
		if !info.Running {
			return info.ExitCode, nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("docker sandbox: exec still running after its output ended: %w", ctx.Err())
		case <-time.After(delay):
		}
	}
}

// keeperProcesses is the number of processes of an idle container: docker's
// init and the idle process it waits on.
const keeperProcesses = 2

// processCount is the number of tasks in the container's pids cgroup, read
// by the engine (so the code cannot forge it); keeperProcesses means that
// nothing of the sandbox user is left.
func (e *Env) processCount(ctx context.Context) (uint64, error) {
	st, err := e.cli.ContainerStats(ctx, e.containerID, client.ContainerStatsOptions{})
	if err != nil {
		return 0, fmt.Errorf("docker sandbox: container stats: %w", err)
	}
	defer st.Body.Close()
	var s container.StatsResponse
	if err := json.NewDecoder(st.Body).Decode(&s); err != nil {
		return 0, fmt.Errorf("docker sandbox: decode container stats: %w", err)
	}
	return s.PidsStats.Current, nil
}

// settled reports whether only the keeper processes are left, allowing
// killed processes a moment to be reaped by init.
func (e *Env) settled(ctx context.Context) bool {
	for _, delay := range []time.Duration{0, 10 * time.Millisecond, 50 * time.Millisecond} {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(delay):
		}
		if n, err := e.processCount(ctx); err == nil && n <= keeperProcesses {
			return true
		}
	}
	return false
}

// sweep kills every process in the container but init, with a second exec
// running `kill -9 -1` as the sandbox user. When that cannot run or leaves
// processes behind, it kills the container, which the next Exec replaces.
// e.mu is held.
func (e *Env) sweep(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if e.closed || e.closeCtx.Err() != nil {
		// Close removes the container right after.
		e.broken = true
		return
	}
	if err := e.killAllExec(ctx); err == nil && e.settled(ctx) {
		return
	}
	e.b.log.Warn("docker sandbox: processes survived the kill exec; killing the container", "session_id", e.spec.SessionID, "container", shortID(e.containerID))
	_ = e.removeContainer(ctx)
	e.broken = true
}

func (e *Env) killAllExec(ctx context.Context) error {
	created, err := e.cli.ExecCreate(ctx, e.containerID, client.ExecCreateOptions{
		User: e.b.cfg.User,
		Cmd:  []string{"/bin/sh", "-c", "kill -9 -1"},
	})
	if err != nil {
		return err
	}
	attach, err := e.cli.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		return err
	}
	defer attach.Close()
	_, _ = stdcopy.StdCopy(discard{}, discard{}, attach.Reader)
	_, err = e.exitCode(ctx, created.ID)
	return err
}

// oomKilledSince reports whether the engine saw the container's memory
// cgroup run out of memory since start.
func (e *Env) oomKilledSince(ctx context.Context, start time.Time) bool {
	ev := e.cli.Events(ctx, client.EventsListOptions{
		Since: eventTime(start),
		// The engine may log the OOM a moment after the exec ends: the
		// query waits for events up to a second from now.
		Until:   eventTime(time.Now().Add(time.Second)),
		Filters: make(client.Filters).Add("container", e.containerID).Add("event", "oom"),
	})
	for {
		select {
		case _, ok := <-ev.Messages:
			return ok
		case err := <-ev.Err:
			_ = err // io.EOF at Until, or a failure: no oom seen either way
			return false
		}
	}
}

// eventTime formats t as the events API's seconds.nanoseconds.
func eventTime(t time.Time) string {
	return fmt.Sprintf("%d.%09d", t.Unix(), t.Nanosecond())
}

// killedResult is the result of an execution ended by cancellation or Close.
func (e *Env) killedResult(start time.Time) sandbox.ExecResult {
	return sandbox.ExecResult{ExitCode: -1, Reason: sandbox.ExitKilled, Duration: time.Since(start)}
}

// execEnv is the program's environment: exactly req.Env, plus the paths the
// image needs when the Manager did not set them.
func execEnv(env map[string]string) []string {
	defaults := map[string]string{
		"PATH":                    "/usr/local/bin:/usr/bin:/bin",
		"HOME":                    "/tmp",
		"LANG":                    "C.UTF-8",
		"PYTHONPATH":              sandbox.ModuleDirPath,
		"PYTHONDONTWRITEBYTECODE": "1",
	}
	out := make([]string, 0, len(env)+len(defaults))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	for k, v := range defaults {
		if _, ok := env[k]; !ok {
			out = append(out, k+"="+v)
		}
	}
	sort.Strings(out)
	return out
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
