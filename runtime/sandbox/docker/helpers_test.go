package docker_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/sandbox"
	"github.com/nagent/nagent/runtime/sandbox/docker"
)

// testBackend returns a docker backend on the engine named by
// NAGENT_TEST_DOCKER_HOST (see testdata/start-dockerd.sh), skipping without
// one unless CI is set. .ci/run sets NAGENT_TEST_DOCKER_SKIP, with the
// reason, when dockerd cannot start on the CI machine.
func testBackend(tb testing.TB) *docker.Backend {
	tb.Helper()
	host := os.Getenv("NAGENT_TEST_DOCKER_HOST")
	if host == "" {
		if why := os.Getenv("NAGENT_TEST_DOCKER_SKIP"); why != "" {
			tb.Skipf("DOCKER SANDBOX TESTS SKIPPED: %s", why)
		}
		if os.Getenv("CI") != "" {
			tb.Fatal("NAGENT_TEST_DOCKER_HOST is not set; .ci/run starts dockerd and sets it (or sets NAGENT_TEST_DOCKER_SKIP with the reason)")
		}
		tb.Skip("docker sandbox tests need an engine: run runtime/sandbox/docker/testdata/start-dockerd.sh and build-image.sh, then set NAGENT_TEST_DOCKER_HOST=unix:///tmp/nagent-dockerd/docker.sock")
	}
	b := docker.New(docker.Config{Host: host, Image: os.Getenv("NAGENT_TEST_DOCKER_IMAGE")}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.Available(ctx); err != nil {
		tb.Fatal(err)
	}
	return b
}

// session lays out directories the way the Manager does: a workspace, a
// per-session calls dir with one fresh scratch dir per call, the module dir
// and a per-call socket dir with a callback server.
type session struct {
	tb        testing.TB
	dir       string
	workspace string
	module    string
	seq       int
	env       sandbox.Env
}

func openSession(tb testing.TB, b *docker.Backend, limits sandbox.Limits) *session {
	tb.Helper()
	dir := tb.TempDir()
	s := &session{tb: tb, dir: dir, workspace: filepath.Join(dir, "workspace"), module: filepath.Join(dir, ".module")}
	for _, d := range []string{s.workspace, s.module, filepath.Join(dir, "calls")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(s.module, "nagent_tools.py"), sandbox.ModuleSource(), 0o644); err != nil {
		tb.Fatal(err)
	}
	env, err := b.Open(context.Background(), sandbox.EnvSpec{SessionID: "test-" + filepath.Base(dir), Workspace: s.workspace, Limits: limits})
	if err != nil {
		tb.Fatal(err)
	}
	s.env = env
	tb.Cleanup(func() {
		if err := env.Close(context.Background()); err != nil {
			tb.Error(err)
		}
	})
	return s
}

// exec runs code in a fresh scratch dir, with a callback server answering
// every tool call with its name.
func (s *session) exec(ctx context.Context, code string, timeout time.Duration) sandbox.ExecResult {
	s.tb.Helper()
	res, err := s.tryExec(ctx, code, timeout)
	if err != nil {
		s.tb.Fatal(err)
	}
	return res
}

func (s *session) tryExec(ctx context.Context, code string, timeout time.Duration) (sandbox.ExecResult, error) {
	s.seq++
	scratch := filepath.Join(s.dir, "calls", strconv.Itoa(s.seq))
	if err := os.MkdirAll(scratch, 0o777); err != nil {
		return sandbox.ExecResult{}, err
	}
	os.Chmod(scratch, 0o777)
	sockDir := s.tb.TempDir()
	stop := serveEcho(s.tb, filepath.Join(sockDir, sandbox.SocketName))
	defer stop()
	return s.env.Exec(ctx, sandbox.ExecRequest{
		Code: []byte(code), Scratch: scratch, SocketDir: sockDir, ModuleDir: s.module, Timeout: timeout,
		Env: map[string]string{
			"HOME":                "/scratch",
			"PYTHONPATH":          sandbox.ModuleDirPath,
			"NAGENT_TOOLS_SOCKET": sandbox.SocketDirPath + "/" + sandbox.SocketName,
		},
	})
}

// serveEcho answers each JSON line {"id","tool",...} with {"ok":true,"content":tool}.
func serveEcho(tb testing.TB, path string) (stop func()) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		tb.Fatal(err)
	}
	os.Chmod(path, 0o666)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadBytes('\n')
					if err != nil {
						return
					}
					var req struct {
						ID   int    `json:"id"`
						Tool string `json:"tool"`
					}
					_ = json.Unmarshal(line, &req)
					out, _ := json.Marshal(map[string]any{"id": req.ID, "ok": true, "content": "called " + req.Tool})
					c.Write(append(out, '\n'))
				}
			}()
		}
	}()
	return func() { ln.Close(); wg.Wait() }
}

func execCommand(name string, args ...string) ([]byte, error) {
	return exec.Command(name, args...).Output()
}
