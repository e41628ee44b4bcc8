package openai_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nagent/nagent/internal/testbin"
	"github.com/nagent/nagent/runtime/llm/scripted"
)

// nodeClientDir holds the Node suite that drives the server with the
// official openai npm package.
const nodeClientDir = "testdata/node"

// e2eKey is the API key the served binary accepts.
const e2eKey = "sk-e2e"

// e2eConfig is the config.yaml of the served binary: an alias the suite asks
// for, and no retries so that provider errors answer at once.
const e2eConfig = `llm:
  aliases: [gpt-4o-mini]
  max_attempts: 1
  retry_base_delay: 1ms
server:
  shutdown_grace: 2s
`

// TestOpenAINodeClient proves the API from a client's point of view: it runs
// the real `nagent serve` binary against an in-process scripted model, then
// runs the Node test suite in testdata/node, which uses the official openai
// npm client (v6) and scripts the model over SCRIPTED_URL/_scripted/.
func TestOpenAINodeClient(t *testing.T) {
	dir, err := filepath.Abs(nodeClientDir)
	if err != nil {
		t.Fatal(err)
	}
	node := requireNodeClient(t, dir)
	bin := testbin.Nagent(t)

	model := scripted.Start()
	t.Cleanup(model.Close)
	base := startNagentServe(t, bin, model)
	runNodeSuite(t, node, dir,
		"OPENAI_BASE_URL="+base+"/v1",
		"OPENAI_API_KEY="+e2eKey,
		"SCRIPTED_URL="+model.RootURL(),
	)
}

// requireNodeClient returns the node binary, or skips the test when the
// suite's packages are not installed. CI must never skip it, so with CI set
// a missing install fails the test.
func requireNodeClient(tb testing.TB, dir string) string {
	tb.Helper()
	missing := func(format string, args ...any) {
		tb.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv("CI") != "" {
			tb.Fatal(msg + " (CI is set, so this test may not be skipped)")
		}
		tb.Skip(msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not on PATH; install Node 20 or later, then run `npm ci --prefix adapters/openai/testdata/node`")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai", "package.json")); err != nil {
		missing("the openai npm client is not installed: run `npm ci --prefix adapters/openai/testdata/node`")
	}
	return node
}

// startNagentServe runs `nagent serve` on a free loopback port, backed by
// model, and returns its base URL once /readyz answers 200. The server is
// stopped when the test ends, and its log is dumped if the test failed.
func startNagentServe(tb testing.TB, bin string, model *scripted.Server) string {
	tb.Helper()
	home := tb.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(e2eConfig), 0o600); err != nil {
		tb.Fatal(err)
	}
	addr := testbin.FreeAddr(tb)
	cmd := exec.Command(bin, "serve", "--addr", addr)
	cmd.Env = append(testbin.EnvironWithout("NAGENT_", "OPENAI_"),
		"NAGENT_HOME="+home,
		"NAGENT_LLM_BASE_URL="+model.URL(),
		"NAGENT_LLM_MODEL=nagent-test",
		"NAGENT_LLM_API_KEY=x",
		"NAGENT_API_KEYS="+e2eKey,
	)
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start nagent serve: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tb.Cleanup(func() {
		stopProcess(tb, cmd, exited)
		if tb.Failed() {
			tb.Logf("nagent serve log:\n%s", logs)
		}
	})

	base := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
			err = fmt.Errorf("/readyz answered %s", resp.Status)
		}
		select {
		case werr := <-exited:
			exited <- werr // for the cleanup
			tb.Fatalf("nagent serve exited before it was ready: %v\n%s", werr, logs)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			tb.Fatalf("nagent serve not ready after 30s: %v\n%s", err, logs)
		}
	}
}

// stopProcess interrupts cmd for a graceful shutdown and kills it if it has
// not exited within 10 seconds.
func stopProcess(tb testing.TB, cmd *exec.Cmd, exited chan error) {
	tb.Helper()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		cmd.Process.Kill()
	}
	select {
	case err := <-exited:
		if err != nil && !tb.Failed() {
			tb.Errorf("nagent serve did not shut down cleanly: %v", err)
		}
	case <-time.After(10 * time.Second):
		tb.Errorf("nagent serve still running 10s after the interrupt; killing it")
		cmd.Process.Kill()
		<-exited
	}
}

// runNodeSuite runs every *.test.mjs in dir with node's test runner, one file
// at a time, streaming its report into the test log.
func runNodeSuite(tb testing.TB, node, dir string, env ...string) {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.test.mjs"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no *.test.mjs in %s (err %v)", dir, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args := append([]string{"--test", "--test-concurrency=1", "--test-reporter=spec"}, files...)
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = dir
	cmd.Env = append(testbin.EnvironWithout("OPENAI_", "NODE_OPTIONS"), env...)
	out := &lineLogger{tb: tb}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 10 * time.Second
	err = cmd.Run()
	out.flush()
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			tb.Fatalf("node --test did not finish within 5 minutes")
		}
		tb.Fatalf("node --test failed: %v (its report is above)", err)
	}
}

// lineLogger writes each complete line to the test log as it arrives.
type lineLogger struct {
	tb  testing.TB
	mu  sync.Mutex
	buf []byte
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		l.tb.Log(string(l.buf[:i]))
		l.buf = l.buf[i+1:]
	}
}

func (l *lineLogger) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.tb.Log(string(l.buf))
		l.buf = nil
	}
}

// syncBuffer is a bytes.Buffer safe for a process's concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
