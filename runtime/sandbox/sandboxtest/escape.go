// Package sandboxtest holds the conformance and escape suite every sandbox
// backend must pass. A backend's test calls RunEscapeSuite with a
// constructor; the suite drives the backend through a real sandbox.Manager,
// a real SQLite store and a real ToolService, and after each attempt
// asserts that the host is untouched and the manager still healthy.
package sandboxtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/sandbox"
	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/store"
)

// Secrets planted by the suite. None may appear in any sandbox output.
const (
	SecretEnvValue  = "sk-nagent-escape-suite-env-secret"
	SecretFileValue = "nagent-escape-suite-planted-file-secret"
	// ForbiddenTool is registered (and allowed by the policy) but is not on
	// the sandbox allowlist.
	ForbiddenTool = "forbidden_tool"
)

// Harness is a Manager over a backend, with its store, a tool service, and
// the traps the suite plants.
type Harness struct {
	Manager *sandbox.Manager
	DB      *store.DB
	Tools   *tools.ToolService
	// Home stands for $NAGENT_HOME; the manager's dir is Home/sandboxes.
	Home string
	// SecretFile is a file under Home that code must not read.
	SecretFile string
	// Listener is a TCP listener on the host loopback; Accepted counts
	// connections that reached it.
	Listener net.Listener
	Accepted atomic.Int64
	// ForbiddenCalls counts calls that reached ForbiddenTool's executor.
	ForbiddenCalls atomic.Int64
	// TimeCalls counts calls that reached get_current_time's executor.
	TimeCalls atomic.Int64
}

// Limits are the limits the suite runs with: small, so that bombs end fast.
var Limits = sandbox.Limits{
	CPUSeconds:    20,
	MemoryBytes:   256 << 20,
	FileSizeBytes: 8 << 20,
	OpenFiles:     64,
	Processes:     32,
	OutputBytes:   16 << 10,
}

// NewHarness builds a Harness over b. It plants the secret environment
// variables with t.Setenv, so tests using it cannot run in parallel.
func NewHarness(t *testing.T, b sandbox.Backend, opts sandbox.Options) *Harness {
	t.Helper()
	ctx := context.Background()
	if err := b.Available(ctx); err != nil {
		t.Fatalf("backend %s is not available: %v", b.Name(), err)
	}
	h := &Harness{Home: t.TempDir()}
	for _, k := range []string{"NAGENT_LLM_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "NAGENT_ESCAPE_SECRET"} {
		t.Setenv(k, SecretEnvValue)
	}
	h.SecretFile = filepath.Join(h.Home, "secret.txt")
	if err := os.WriteFile(h.SecretFile, []byte(SecretFileValue), 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(ctx, filepath.Join(h.Home, "nagent.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	h.DB = db

	ts := tools.NewToolService(nil, tools.Options{})
	def, exec := tools.CurrentTimeTool(nil)
	if err := ts.Register(def, tools.ExecutorFunc(func(ctx context.Context, c tools.ToolCallRequest, ec tools.ExecutionContext) (string, error) {
		h.TimeCalls.Add(1)
		return exec.Execute(ctx, c, ec)
	})); err != nil {
		t.Fatal(err)
	}
	if err := ts.Register(tools.ToolDefinition{Name: ForbiddenTool, Description: "must never run from a sandbox", RiskLevel: tools.RiskSafe},
		tools.ExecutorFunc(func(context.Context, tools.ToolCallRequest, tools.ExecutionContext) (string, error) {
			h.ForbiddenCalls.Add(1)
			return `"secret"`, nil
		})); err != nil {
		t.Fatal(err)
	}
	h.Tools = ts

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.Listener = ln
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			h.Accepted.Add(1)
			c.Write([]byte("host-listener-reached\n"))
			c.Close()
		}
	}()

	opts.Backend = b
	opts.Tools = ts
	opts.Store = db
	opts.Dir = filepath.Join(h.Home, "sandboxes")
	if opts.Limits == (sandbox.Limits{}) {
		opts.Limits = Limits
	}
	if opts.Timeout == 0 {
		opts.Timeout = 60 * time.Second
	}
	if opts.AllowedTools == nil {
		opts.AllowedTools = []string{tools.CurrentTimeToolName}
	}
	m, err := sandbox.NewManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	h.Manager = m
	return h
}

// Exec runs code in session and fails the test if the manager errs.
func (h *Harness) Exec(t *testing.T, session, code string, timeout time.Duration, maxCalls int) sandbox.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout+60*time.Second)
	defer cancel()
	res, err := h.Manager.Execute(ctx, sandbox.ExecuteRequest{
		SessionID: session, Code: code, Timeout: timeout, MaxToolCalls: maxCalls,
		Exec: tools.ExecutionContext{SessionID: session, Source: "test", AgentContext: tools.AgentPrimary, ToolExposurePolicy: tools.ExposureDefault},
	})
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	return res
}

// CheckHost asserts that the host is untouched and the manager healthy:
// nothing reached the loopback listener or the forbidden tool, the planted
// file is intact, no output leaked a secret, the host can still start a
// process, and a fresh execution in the same session still prints.
func (h *Harness) CheckHost(t *testing.T, session string, outputs ...sandbox.Result) {
	t.Helper()
	if n := h.Accepted.Load(); n != 0 {
		t.Errorf("the host loopback listener accepted %d connections from the sandbox", n)
	}
	if n := h.ForbiddenCalls.Load(); n != 0 {
		t.Errorf("%s ran %d times from the sandbox", ForbiddenTool, n)
	}
	if data, err := os.ReadFile(h.SecretFile); err != nil || string(data) != SecretFileValue {
		t.Errorf("planted file changed: %q, %v", data, err)
	}
	for _, r := range outputs {
		for _, s := range []string{SecretEnvValue, SecretFileValue, "host-listener-reached"} {
			if strings.Contains(r.Stdout+r.Stderr, s) {
				t.Errorf("sandbox output leaked %q:\nstdout: %s\nstderr: %s", s, r.Stdout, r.Stderr)
			}
		}
	}
	if err := exec.Command("/bin/true").Run(); err != nil {
		t.Errorf("the host cannot start a process any more: %v", err)
	}
	res := h.Exec(t, session, "print('still-alive')", 60*time.Second, 0)
	if res.ExitReason != sandbox.ExitOK || strings.TrimSpace(res.Stdout) != "still-alive" {
		t.Errorf("after the attempt the sandbox is not healthy: %+v", res)
	}
}

// scratchDir is where the manager staged call seq of session.
func (h *Harness) scratchDir(session string, seq int) string {
	return filepath.Join(h.Home, "sandboxes", session, "calls", strconv.Itoa(seq))
}

// RunEscapeSuite runs the escape list of the sandbox issue against the
// backend newBackend returns (a new one per subtest), and the callback and
// reuse conformance checks. It fails, never skips: a caller that wants to
// skip when the backend is missing checks Available first.
func RunEscapeSuite(t *testing.T, newBackend func(t *testing.T) sandbox.Backend) {
	setup := func(t *testing.T) *Harness {
		return NewHarness(t, newBackend(t), sandbox.Options{})
	}

	t.Run("Conformance", func(t *testing.T) {
		h := setup(t)
		first := h.Exec(t, "conf", "print(6*7)", 60*time.Second, 0)
		if first.ExitReason != sandbox.ExitOK || strings.TrimSpace(first.Stdout) != "42" || first.Reused {
			t.Fatalf("first call = %+v", first)
		}
		second := h.Exec(t, "conf", `
import os, json, nagent_tools
print(json.dumps({"uid": os.getuid(), "cwd": os.getcwd(), "now": nagent_tools.get_current_time()["now"]}))
open("/scratch/out.txt", "w").write("x")
open("/tmp/t.txt", "w").write("x")
import sys; print("err-line", file=sys.stderr); sys.exit(3)`, 60*time.Second, 0)
		if !second.Reused || second.ExitReason != sandbox.ExitError || second.ExitCode != 3 || !strings.Contains(second.Stderr, "err-line") {
			t.Fatalf("second call = %+v", second)
		}
		var got struct {
			UID int    `json:"uid"`
			Cwd string `json:"cwd"`
			Now string `json:"now"`
		}
		if err := json.Unmarshal([]byte(strings.TrimSpace(second.Stdout)), &got); err != nil {
			t.Fatalf("stdout %q: %v", second.Stdout, err)
		}
		if got.UID == 0 || got.Cwd != sandbox.ScratchPath || got.Now == "" {
			t.Errorf("inside: %+v; want a non-root uid, cwd %s and a time from the callback", got, sandbox.ScratchPath)
		}
		if h.TimeCalls.Load() != 1 {
			t.Errorf("get_current_time ran %d times, want 1", h.TimeCalls.Load())
		}
		if _, err := os.Stat(filepath.Join(h.scratchDir("conf", second.Seq), "out.txt")); err != nil {
			t.Errorf("file written to /scratch is not in the call's scratch dir: %v", err)
		}
		big := h.Exec(t, "conf", "import sys\nsys.stdout.write('a'*200000 + 'END')", 60*time.Second, 0)
		if len(big.Stdout) > Limits.OutputBytes+100 || !strings.HasSuffix(big.Stdout, "END") || !strings.HasPrefix(big.Stdout, "aaa") {
			t.Errorf("stdout of 200 kB kept %d bytes; want at most %d, head and tail", len(big.Stdout), Limits.OutputBytes)
		}
		hist, err := h.Manager.History(context.Background(), "conf", 10)
		if err != nil || len(hist) != 3 {
			t.Fatalf("history = %d rows, %v; want 3", len(hist), err)
		}
		if hist[1].ExitReason != "error" || !strings.Contains(string(hist[1].CalledTools), tools.CurrentTimeToolName) || hist[1].CodeSHA256 == "" {
			t.Errorf("history row = %+v", hist[1])
		}
		h.CheckHost(t, "conf", first, second)
	})

	t.Run("NetworkToHostLoopback", func(t *testing.T) {
		h := setup(t)
		port := h.Listener.Addr().(*net.TCPAddr).Port
		res := h.Exec(t, "net", fmt.Sprintf(`
import socket
for host in ("127.0.0.1", "localhost", "10.0.2.2", "1.1.1.1"):
    try:
        s = socket.create_connection((host, %d), timeout=2)
        print("CONNECTED", host, s.recv(100))
    except Exception as e:
        print("blocked", host, type(e).__name__)
`, port), 60*time.Second, 0)
		if strings.Contains(res.Stdout, "CONNECTED") {
			t.Errorf("the sandbox reached the network:\n%s", res.Stdout)
		}
		h.CheckHost(t, "net", res)
	})

	t.Run("ReadHiddenFile", func(t *testing.T) {
		h := setup(t)
		res := h.Exec(t, "read", fmt.Sprintf(`
import os
paths = [%q, "/proc/1/root" + %q, "/etc/shadow", "/root/.nagent/nagent.db"]
for p in paths:
    try:
        print("READ", p, open(p).read()[:200])
    except Exception as e:
        print("blocked", p, type(e).__name__)
for root in ("/", "/workspace", "/scratch", "/tmp"):
    for dirpath, dirs, files in os.walk(root):
        if dirpath.startswith(("/proc", "/sys", "/usr", "/dev")):
            dirs[:] = []
            continue
        for f in files:
            try:
                data = open(os.path.join(dirpath, f), "rb").read(1 << 20)
                if (b"planted-file-" + b"secret") in data:
                    print("FOUND", os.path.join(dirpath, f))
            except Exception:
                pass
`, h.SecretFile, h.SecretFile), 60*time.Second, 0)
		if strings.Contains(res.Stdout, "READ "+h.SecretFile) || strings.Contains(res.Stdout, "FOUND") {
			t.Errorf("the sandbox read the planted file:\n%s", res.Stdout)
		}
		h.CheckHost(t, "read", res)
	})

	t.Run("WriteWorkspace", func(t *testing.T) {
		h := setup(t)
		info, err := h.Manager.GetOrCreate(context.Background(), "ws")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(info.Workspace, "data.txt"), []byte("original"), 0o644); err != nil {
			t.Fatal(err)
		}
		res := h.Exec(t, "ws", `
import os
print("sees", open("/workspace/data.txt").read())
for p in ("/workspace/data.txt", "/workspace/new.txt", "/usr/pwned", "/pwned", "/opt/nagent/nagent_tools.py"):
    try:
        open(p, "w").write("pwned")
        print("WROTE", p)
    except Exception as e:
        print("blocked", p, type(e).__name__)
for p in ("/workspace/data.txt",):
    try:
        os.remove(p); print("REMOVED", p)
    except Exception as e:
        print("blocked rm", p, type(e).__name__)
`, 60*time.Second, 0)
		if !strings.Contains(res.Stdout, "sees original") {
			t.Errorf("the workspace is not readable inside:\n%s%s", res.Stdout, res.Stderr)
		}
		if strings.Contains(res.Stdout, "WROTE") || strings.Contains(res.Stdout, "REMOVED") {
			t.Errorf("the sandbox wrote outside /scratch and /tmp:\n%s", res.Stdout)
		}
		if data, _ := os.ReadFile(filepath.Join(info.Workspace, "data.txt")); string(data) != "original" {
			t.Errorf("workspace file on the host = %q", data)
		}
		if _, err := os.Stat(filepath.Join(info.Workspace, "new.txt")); err == nil {
			t.Error("a file appeared in the host workspace")
		}
		h.CheckHost(t, "ws", res)
	})

	t.Run("ForkBomb", func(t *testing.T) {
		h := setup(t)
		start := time.Now()
		res := h.Exec(t, "fork", `
import os, time
n = 0
end = time.time() + 4
while time.time() < end:
    try:
        if os.fork() == 0:
            while True:
                try:
                    os.fork()
                except OSError:
                    time.sleep(0.01)
        n += 1
    except OSError:
        time.sleep(0.01)
`, 8*time.Second, 0)
		if res.ExitReason == sandbox.ExitOK {
			t.Logf("fork bomb ended ok after %s (parent loop finished)", time.Since(start))
		}
		if d := time.Since(start); d > 40*time.Second {
			t.Errorf("fork bomb took %s to contain", d)
		}
		t.Logf("fork bomb: reason %s, exit %d, %d ms", res.ExitReason, res.ExitCode, res.DurationMS)
		h.CheckHost(t, "fork", res)
	})

	t.Run("MemoryBomb", func(t *testing.T) {
		h := setup(t)
		res := h.Exec(t, "mem", `
chunks = []
while True:
    chunks.append(bytearray(16 << 20))
`, 60*time.Second, 0)
		if res.ExitReason != sandbox.ExitOOM && res.ExitReason != sandbox.ExitLimit {
			t.Errorf("memory bomb: reason %s (exit %d), want oom or limit\nstderr: %s", res.ExitReason, res.ExitCode, res.Stderr)
		}
		h.CheckHost(t, "mem", res)
	})

	t.Run("InfiniteLoop", func(t *testing.T) {
		h := setup(t)
		start := time.Now()
		res := h.Exec(t, "loop", "while True:\n    pass\n", 2*time.Second, 0)
		if res.ExitReason != sandbox.ExitTimeout {
			t.Errorf("infinite loop: reason %s, want timeout", res.ExitReason)
		}
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("a 2s timeout took %s", d)
		}
		h.CheckHost(t, "loop", res)
	})

	t.Run("BackgroundProcessDies", func(t *testing.T) {
		h := setup(t)
		res := h.Exec(t, "bg", `
import os, subprocess, time
subprocess.Popen(["/bin/sh", "-c", "while true; do echo tick >> /scratch/alive; sleep 0.05; done"],
                 start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if os.fork() == 0:
    os.setsid()
    while True:
        open("/scratch/alive2", "a").write("tick\n")
        time.sleep(0.05)
time.sleep(0.5)
print("parent exits")
`, 60*time.Second, 0)
		if !strings.Contains(res.Stdout, "parent exits") {
			t.Fatalf("result = %+v", res)
		}
		dir := h.scratchDir("bg", res.Seq)
		size := func() int64 {
			var n int64
			for _, f := range []string{"alive", "alive2"} {
				if fi, err := os.Stat(filepath.Join(dir, f)); err == nil {
					n += fi.Size()
				}
			}
			return n
		}
		before := size()
		if before == 0 {
			t.Fatalf("the background processes never ran (nothing in %s)", dir)
		}
		time.Sleep(1500 * time.Millisecond)
		if after := size(); after != before {
			t.Errorf("a background process outlived the execution: its file grew from %d to %d bytes", before, after)
		}
		h.CheckHost(t, "bg", res)
	})

	t.Run("SecretsNotVisible", func(t *testing.T) {
		h := setup(t)
		res := h.Exec(t, "env", `
import os, glob
print(dict(os.environ))
for p in glob.glob("/proc/*/environ"):
    try:
        print(p, open(p, "rb").read())
    except Exception as e:
        print("blocked", p, type(e).__name__)
`, 60*time.Second, 0)
		if res.ExitReason != sandbox.ExitOK {
			t.Errorf("result = %+v", res)
		}
		h.CheckHost(t, "env", res)
	})

	t.Run("CallbackNotAllowlisted", func(t *testing.T) {
		h := setup(t)
		res := h.Exec(t, "deny", fmt.Sprintf(`
import nagent_tools, socket, json
try:
    nagent_tools.call(%q)
    print("CALLED")
except nagent_tools.ToolError as e:
    print("refused:", e)
# A raw request on the socket, bypassing the module, is refused the same way.
s = socket.socket(socket.AF_UNIX); s.connect("/run/nagent/tools.sock")
s.sendall(json.dumps({"id": 9, "tool": %q, "arguments": {}}).encode() + b"\n")
print("raw:", s.makefile().readline())
`, ForbiddenTool, ForbiddenTool), 60*time.Second, 0)
		if strings.Contains(res.Stdout, "CALLED") || !strings.Contains(res.Stdout, "refused:") || !strings.Contains(res.Stdout, `"ok":false`) {
			t.Errorf("non-allowlisted callback: %+v", res)
		}
		if len(res.CalledTools) != 2 || res.CalledTools[0].Status != "refused" {
			t.Errorf("called tools = %+v, want 2 refused", res.CalledTools)
		}
		h.CheckHost(t, "deny", res)
	})

	t.Run("CallbackMaxToolCalls", func(t *testing.T) {
		h := setup(t)
		res := h.Exec(t, "max", `
import nagent_tools
for i in range(3):
    try:
        nagent_tools.get_current_time(timezone="UTC")
        print("ok", i)
    except nagent_tools.ToolError as e:
        print("refused", i, e)
`, 60*time.Second, 2)
		if !strings.Contains(res.Stdout, "ok 1") || !strings.Contains(res.Stdout, "refused 2") {
			t.Errorf("max_tool_calls 2: %+v", res)
		}
		if n := h.TimeCalls.Load(); n != 2 {
			t.Errorf("get_current_time ran %d times, want 2", n)
		}
		h.CheckHost(t, "max", res)
	})
}
