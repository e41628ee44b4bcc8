//go:build unix

package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Available checks that the interpreter exists.
func (b *UnisolatedBackend) Available(context.Context) error {
	if _, err := os.Stat(b.python()); err != nil {
		return fmt.Errorf("sandbox unisolated: interpreter %s: %w; install python3", b.python(), err)
	}
	return nil
}

func (b *UnisolatedBackend) python() string {
	if b.Python != "" {
		return b.Python
	}
	return DefaultPython
}

// Open returns an environment that runs code in the scratch dir.
func (b *UnisolatedBackend) Open(ctx context.Context, spec EnvSpec) (Env, error) {
	if err := b.Available(ctx); err != nil {
		return nil, err
	}
	return &unisolatedEnv{b: b, spec: spec, limits: spec.Limits.WithDefaults()}, nil
}

type unisolatedEnv struct {
	b      *UnisolatedBackend
	spec   EnvSpec
	limits Limits

	mu      sync.Mutex
	closed  bool
	running *exec.Cmd
	cancel  context.CancelCauseFunc
}

// Exec runs the code with host paths in place of the sandbox paths.
func (e *unisolatedEnv) Exec(ctx context.Context, req ExecRequest) (ExecResult, error) {
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	code := filepath.Join(req.Scratch, CodeFileName)
	if err := os.WriteFile(code, req.Code, 0o644); err != nil {
		return ExecResult{}, fmt.Errorf("sandbox unisolated: write code: %w", err)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	tctx, tcancel := context.WithTimeoutCause(ctx, timeout, errTimeout)
	defer tcancel()
	cmd := exec.Command(e.b.python(), "-B", code)
	cmd.Dir = req.Scratch
	env := map[string]string{}
	for k, v := range req.Env {
		env[k] = v
	}
	env["HOME"] = req.Scratch
	env["PYTHONPATH"] = req.ModuleDir
	env["NAGENT_TOOLS_SOCKET"] = filepath.Join(req.SocketDir, SocketName)
	env["NAGENT_WORKSPACE"] = e.spec.Workspace
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stdout := &OutputBuffer{Limit: e.limits.OutputBytes}
	stderr := &OutputBuffer{Limit: e.limits.OutputBytes}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 2 * time.Second

	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return ExecResult{}, errEnvClosed
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		e.mu.Unlock()
		return ExecResult{}, fmt.Errorf("sandbox unisolated: start: %w", err)
	}
	e.running, e.cancel = cmd, cancel
	e.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var waitErr error
	select {
	case waitErr = <-done:
		// Background children of the code die with the execution too.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	case <-tctx.Done():
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		waitErr = <-done
	}
	e.mu.Lock()
	e.running, e.cancel = nil, nil
	e.mu.Unlock()
	res := ExecResult{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), Duration: time.Since(start)}
	res.ExitCode, res.Reason = exitOfUnix(cmd, waitErr)
	switch {
	case context.Cause(tctx) == errTimeout:
		res.Reason = ExitTimeout
	case tctx.Err() != nil:
		res.Reason = ExitKilled
	case res.Reason == ExitError && looksLikeMemoryError(res.Stderr):
		res.Reason = ExitOOM
	}
	return res, nil
}

// Close kills a running execution.
func (e *unisolatedEnv) Close(context.Context) error {
	e.mu.Lock()
	e.closed = true
	cmd, cancel := e.running, e.cancel
	e.mu.Unlock()
	if cancel != nil {
		cancel(errEnvClosed)
	}
	if cmd != nil && cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	return nil
}

func exitOfUnix(cmd *exec.Cmd, err error) (int, ExitReason) {
	st := cmd.ProcessState
	if st == nil {
		return -1, ExitKilled
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, signalReason(ws.Signal())
	}
	if st.ExitCode() == 0 && err == nil {
		return 0, ExitOK
	}
	return st.ExitCode(), ExitError
}
