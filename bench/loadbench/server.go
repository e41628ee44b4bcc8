package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// serverProc is a running `nagent serve`.
type serverProc struct {
	cmd     *exec.Cmd
	pid     int
	url     string
	logPath string
	exited  chan struct{}
	once    sync.Once
	stopErr error
}

func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("loadbench: %w", err)
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			first, _, _ := strings.Cut(string(data), "\n")
			if strings.TrimSpace(strings.TrimPrefix(first, "module")) == modulePath {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("loadbench: no go.mod of %s above the working directory; pass --root", modulePath)
		}
		dir = parent
	}
}

func buildNagent(ctx context.Context, root, dir string) (string, error) {
	bin := filepath.Join(dir, "nagent")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("loadbench: go build in %s: %w\n%s", root, err, out)
	}
	return bin, nil
}

// startServer starts `nagent serve` on a free loopback port with a fresh
// NAGENT_HOME under dir and waits until /readyz answers 200.
func startServer(ctx context.Context, bin, dir, modelURL string, maxTurns int) (*serverProc, error) {
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, fmt.Errorf("loadbench: %w", err)
	}
	cfg := fmt.Sprintf("server:\n  max_concurrent_turns: %d\n", maxTurns)
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		return nil, fmt.Errorf("loadbench: %w", err)
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "server.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("loadbench: %w", err)
	}
	defer logFile.Close() // the child keeps its own descriptor

	cmd := exec.Command(bin, "serve", "--addr", addr)
	cmd.Env = append(cleanEnv(),
		"NAGENT_HOME="+home, "NAGENT_LLM_BASE_URL="+modelURL, "NAGENT_LLM_MODEL=bench",
		"NAGENT_LLM_API_KEY=x", "NAGENT_LOG_LEVEL=warn")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("loadbench: start %s serve: %w", bin, err)
	}
	s := &serverProc{cmd: cmd, pid: cmd.Process.Pid, url: "http://" + addr, logPath: logPath, exited: make(chan struct{})}
	go func() { cmd.Wait(); close(s.exited) }()
	if err := s.waitReady(ctx, 30*time.Second); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

func (s *serverProc) waitReady(ctx context.Context, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/readyz", nil)
		if resp, err := client.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.exited:
			return fmt.Errorf("loadbench: nagent serve exited before it was ready (%v):\n%s", s.cmd.ProcessState, s.logTail(20))
		case <-ctx.Done():
			return fmt.Errorf("loadbench: nagent serve not ready within %s:\n%s", limit, s.logTail(20))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop asks the server to shut down gracefully and kills it if it has not
// exited within its grace period plus a margin.
func (s *serverProc) stop() error {
	s.once.Do(func() {
		select {
		case <-s.exited:
			return
		default:
		}
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(15 * time.Second):
			s.cmd.Process.Kill()
			<-s.exited
			s.stopErr = errors.New("nagent serve ignored SIGTERM for 15s; killed it")
		}
	})
	return s.stopErr
}

// logLines counts the server's log lines and returns the last n.
func (s *serverProc) logLines(n int) (int, string) {
	data, _ := os.ReadFile(s.logPath)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return 0, ""
	}
	return len(lines), strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func (s *serverProc) logTail(n int) string {
	if _, tail := s.logLines(n); tail != "" {
		return tail
	}
	return "(the server logged nothing)"
}

// cleanEnv is the environment without N-Agent or OpenAI settings, so the
// caller's own configuration cannot leak into the server under test.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "NAGENT_") && !strings.HasPrefix(kv, "OPENAI_") {
			env = append(env, kv)
		}
	}
	return env
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("loadbench: find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// procMemory reads VmRSS and VmHWM of pid from /proc, in bytes; zero where
// /proc is not available.
func procMemory(pid int) (rss, hwm int64) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok || key != "VmRSS" && key != "VmHWM" {
			continue
		}
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		if key == "VmRSS" {
			rss = kb << 10
		} else {
			hwm = kb << 10
		}
	}
	return rss, hwm
}

// procCPU reads the user plus system CPU time of a process ("self" or a
// pid) from /proc/<pid>/stat; zero where /proc is not available.
func procCPU(pid string) time.Duration {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses: state is
	// field 3, utime 14 and stime 15, in clock ticks of 1/100 s.
	_, rest, _ := bytes.Cut(data, []byte(") "))
	f := strings.Fields(string(rest))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
