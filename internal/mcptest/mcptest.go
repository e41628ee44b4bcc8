// Package mcptest runs the MCP reference server
// (@modelcontextprotocol/server-everything, installed under
// runtime/mcp/testdata/node) for tests, over stdio or streamable HTTP.
package mcptest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Everything returns the path of the installed mcp-server-everything
// script. When it is missing the test is skipped, or fails when CI is set.
func Everything(tb testing.TB) string {
	tb.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "runtime", "mcp", "testdata", "node")
	bin := filepath.Join(dir, "node_modules", ".bin", "mcp-server-everything")
	_, err := os.Stat(bin)
	if _, lerr := exec.LookPath("node"); err == nil && lerr != nil {
		err = lerr
	}
	if err != nil {
		msg := fmt.Sprintf("MCP reference server not installed (%v); run: npm ci --prefix runtime/mcp/testdata/node", err)
		if os.Getenv("CI") != "" {
			tb.Fatal(msg + " (CI is set, so this test may not be skipped)")
		}
		tb.Skip(msg)
	}
	return bin
}

// FreePort returns a TCP port that was free a moment ago.
func FreePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// HTTPServer is the reference server over streamable HTTP.
type HTTPServer struct {
	bin  string
	Port int
	cmd  *exec.Cmd
}

// URL is the server's MCP endpoint.
func (s *HTTPServer) URL() string { return fmt.Sprintf("http://127.0.0.1:%d/mcp", s.Port) }

// StartHTTP starts the reference server with streamableHttp on port (0
// picks one) and waits until it answers. It is killed when the test ends.
func StartHTTP(tb testing.TB, port int) *HTTPServer {
	tb.Helper()
	if port == 0 {
		port = FreePort(tb)
	}
	s := &HTTPServer{bin: Everything(tb), Port: port}
	s.Start(tb)
	tb.Cleanup(s.Kill)
	return s
}

// Start (re)starts the server process and waits until its port answers.
func (s *HTTPServer) Start(tb testing.TB) {
	tb.Helper()
	cmd := exec.Command(s.bin, "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", s.Port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	s.cmd = cmd
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", s.Port), nil)
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.Kill()
	tb.Fatalf("MCP reference server did not listen on port %d: %s", s.Port, stderr.String())
}

// Kill stops the server process (its whole process group) and waits for it.
func (s *HTTPServer) Kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	s.cmd.Wait()
	s.cmd = nil
}
