package web_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nagent/nagent/internal/testbin"
	"github.com/nagent/nagent/runtime/llm/scripted"
)

// browserSuiteDir holds the playwright-core suite that drives the dashboard.
const browserSuiteDir = "testdata/browser"

// browserKey is the API key the served binary accepts, and the one the
// suite logs in with.
const browserKey = "sk-dashboard-browser"

// browserConfig is the config.yaml of the served binary: no model retries,
// so that a missing scripted reply fails at once, a short grace so that a
// restart is quick, and a sandbox for execute_code: bubblewrap where it is
// installed, else a plain subprocess (what runs the code is not under test
// here, only the dashboard's view of the sandbox).
func browserConfig() string {
	sandbox := "  backend: unisolated\n  allow_unisolated: true\n"
	if _, err := exec.LookPath("bwrap"); err == nil {
		sandbox = "  backend: local\n"
	}
	return "llm:\n  max_attempts: 1\n  retry_base_delay: 1ms\n" +
		"server:\n  shutdown_grace: 2s\n" +
		"sandbox:\n" + sandbox
}

// TestDashboardBrowser drives the embedded dashboard in real headless
// Chromium: it runs the real `nagent serve` binary against a scripted model
// and runs testdata/browser/test.mjs (playwright-core), which logs in, chats,
// edits policies, restarts the server through a control endpoint of this
// test and forces a sandbox release. Each case of the suite becomes a
// subtest here. Screenshots go to $NAGENT_ARTIFACTS, or to a temporary
// directory whose path is logged; never into the repository.
func TestDashboardBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("the browser suite takes about a minute; skipped with -short")
	}
	dir, err := filepath.Abs(browserSuiteDir)
	if err != nil {
		t.Fatal(err)
	}
	node, chromium := requireBrowserSuite(t, dir)
	bin := testbin.Nagent(t)

	manifest, module := buildTextstatsPlugin(t)

	model := scripted.Start()
	t.Cleanup(model.Close)
	srv := &dashboardProcess{tb: t, bin: bin, home: t.TempDir(), addr: testbin.FreeAddr(t), model: model}
	if err := os.WriteFile(filepath.Join(srv.home, "config.yaml"), []byte(browserConfig()), 0o600); err != nil {
		t.Fatal(err)
	}
	// A schedule delivering to the dashboard inbox, added with the real CLI
	// as a user would; the suite runs it from the Schedules page.
	add := exec.Command(bin, "schedule", "add", "morning-digest", "--every", "24h",
		"--prompt", "Summarise the night's tickets.", "--deliver", "inbox")
	add.Env = append(testbin.EnvironWithout("NAGENT_", "OPENAI_"), "NAGENT_HOME="+srv.home)
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("nagent schedule add: %v\n%s", err, out)
	}
	srv.start()
	t.Cleanup(srv.stop)

	control := httptest.NewServer(srv.controlHandler())
	t.Cleanup(control.Close)

	artifacts := os.Getenv("NAGENT_ARTIFACTS")
	if artifacts == "" {
		artifacts, err = os.MkdirTemp("", "nagent-browser-artifacts-")
	} else {
		// Each run replaces the previous run's screenshots.
		artifacts = filepath.Join(artifacts, "browser")
		if err = os.RemoveAll(artifacts); err == nil {
			err = os.MkdirAll(artifacts, 0o755)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots and the browser console log go to %s", artifacts)

	results := runBrowserSuite(t, node, dir,
		"DASHBOARD_URL="+srv.baseURL(),
		"DASHBOARD_KEY="+browserKey,
		"SCRIPTED_URL="+model.RootURL(),
		"CONTROL_URL="+control.URL,
		"ARTIFACTS_DIR="+artifacts,
		"CHROMIUM="+chromium,
		"KB_DIR="+writeKBDocs(t),
		"PLUGIN_MANIFEST="+manifest,
		"PLUGIN_MODULE="+module,
	)
	for _, r := range results {
		t.Run(r.name, func(t *testing.T) {
			switch {
			case r.skipped:
				t.Skip(r.detail)
			case !r.ok:
				t.Error(r.detail)
			}
		})
	}
}

// requireBrowserSuite returns the node and chromium binaries, or skips the
// test when either, or the suite's npm packages, are missing. With CI set a
// missing piece fails the test instead: .ci/run installs all three.
func requireBrowserSuite(tb testing.TB, dir string) (node, chromium string) {
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
		missing("node is not on PATH; install Node 20 or later, then run `npm ci --prefix web/testdata/browser`")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "playwright-core", "package.json")); err != nil {
		missing("playwright-core is not installed: run `npm ci --prefix web/testdata/browser`")
	}
	chromium = os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		missing("Debian's chromium is not installed at %s: run `apt-get install -y chromium` (or set CHROMIUM)", chromium)
	}
	return node, chromium
}

// buildTextstatsPlugin builds the example plugin examples/plugins/textstats
// for the upload case, returning its manifest and module paths.
func buildTextstatsPlugin(tb testing.TB) (manifest, module string) {
	tb.Helper()
	src, err := filepath.Abs(filepath.Join("..", "examples", "plugins", "textstats"))
	if err != nil {
		tb.Fatal(err)
	}
	module = filepath.Join(tb.TempDir(), "textstats.wasm")
	cmd := exec.Command("go", "build", "-o", module, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("build the textstats example plugin: %v\n%s", err, out)
	}
	return filepath.Join(src, "plugin.yaml"), module
}

// writeKBDocs writes a small Markdown directory for the knowledge-base case.
func writeKBDocs(tb testing.TB) string {
	tb.Helper()
	dir := tb.TempDir()
	docs := map[string]string{
		"leave.md":  "# Annual leave\n\nEvery employee has 25 days of annual leave a year; unused days carry over until March.\n",
		"travel.md": "# Travel\n\nBook trains for trips under 600 km; flights need a manager's approval.\n",
	}
	for name, body := range docs {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

// browserCase is one case reported by test.mjs.
type browserCase struct {
	name    string
	ok      bool
	skipped bool
	detail  string
}

// browserCaseLine matches the suite's result lines: "ok - name",
// "not ok - name: why" and "skip - name: why".
var browserCaseLine = regexp.MustCompile(`^(ok|not ok|skip) - ([^:]+)(?:: (.*))?$`)

// runBrowserSuite runs test.mjs, streaming its output into the test log, and
// returns the cases it reported. A suite that crashes fails the test.
func runBrowserSuite(tb testing.TB, node, dir string, env ...string) []browserCase {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "test.mjs")
	cmd.Dir = dir
	cmd.Env = append(testbin.EnvironWithout("NAGENT_", "OPENAI_", "NODE_OPTIONS", "DASHBOARD_", "PLAYWRIGHT_"), env...)
	cmd.Env = append(cmd.Env, "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1")
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.WaitDelay = 10 * time.Second

	var cases []browserCase
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			line := sc.Text()
			tb.Log(line)
			if m := browserCaseLine.FindStringSubmatch(line); m != nil {
				cases = append(cases, browserCase{name: strings.TrimSpace(m[2]), ok: m[1] == "ok", skipped: m[1] == "skip", detail: m[3]})
			}
		}
		io.Copy(io.Discard, pr)
	}()
	err := cmd.Run()
	pw.Close()
	<-done
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		tb.Fatalf("the browser suite did not finish within 8 minutes")
	}
	if len(cases) == 0 {
		tb.Fatalf("the browser suite reported no case (exit: %v); its output is above", err)
	}
	if err != nil {
		var failed bool
		for _, c := range cases {
			failed = failed || (!c.ok && !c.skipped)
		}
		if !failed {
			tb.Errorf("the browser suite exited with %v although every case passed; its output is above", err)
		}
	}
	return cases
}

// dashboardProcess is one `nagent serve`, which the suite may restart on the
// same address and data directory.
type dashboardProcess struct {
	tb    testing.TB
	bin   string
	home  string
	addr  string
	model *scripted.Server

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan error
	logs   browserSyncBuffer
}

func (p *dashboardProcess) baseURL() string { return "http://" + p.addr }

// start runs the server and waits until /readyz answers 200.
func (p *dashboardProcess) start() {
	p.tb.Helper()
	if err := p.tryStart(); err != nil {
		p.tb.Fatal(err)
	}
}

func (p *dashboardProcess) tryStart() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	cmd := exec.Command(p.bin, "serve", "--addr", p.addr)
	cmd.Env = append(testbin.EnvironWithout("NAGENT_", "OPENAI_"),
		"NAGENT_HOME="+p.home,
		"NAGENT_LLM_BASE_URL="+p.model.URL(),
		"NAGENT_LLM_MODEL=nagent-test",
		"NAGENT_LLM_API_KEY=x",
		"NAGENT_API_KEYS="+browserKey,
	)
	cmd.Stdout, cmd.Stderr = &p.logs, &p.logs
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start nagent serve: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	p.cmd, p.exited = cmd, exited

	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(p.baseURL() + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("/readyz answered %s", resp.Status)
		}
		select {
		case werr := <-exited:
			exited <- werr
			return fmt.Errorf("nagent serve exited before it was ready: %v\n%s", werr, p.logs.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nagent serve not ready after 60s: %v\n%s", err, p.logs.String())
		}
	}
}

// stop interrupts the server for a graceful shutdown, killing it after 15 s.
func (p *dashboardProcess) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return
	}
	cmd, exited := p.cmd, p.exited
	p.cmd = nil
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		cmd.Process.Kill()
	}
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		p.tb.Logf("nagent serve still running 15s after the interrupt; killing it")
		cmd.Process.Kill()
		<-exited
	}
	if p.tb.Failed() {
		p.tb.Logf("nagent serve log:\n%s", p.logs.String())
	}
}

// controlHandler serves the suite's control endpoint:
//
//	POST /restart  stop the server, then start it again on the same address
//	POST /stop     stop it (a later /start brings it back)
//	POST /start    start it
//	GET  /log      the server's log so far
func (p *dashboardProcess) controlHandler() http.Handler {
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, err error) {
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		io.WriteString(w, "ok\n")
	}
	mux.HandleFunc("POST /restart", func(w http.ResponseWriter, r *http.Request) {
		p.stop()
		reply(w, p.tryStart())
	})
	mux.HandleFunc("POST /stop", func(w http.ResponseWriter, r *http.Request) {
		p.stop()
		reply(w, nil)
	})
	mux.HandleFunc("POST /start", func(w http.ResponseWriter, r *http.Request) {
		reply(w, p.tryStart())
	})
	mux.HandleFunc("GET /log", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, p.logs.String())
	})
	return mux
}

// browserSyncBuffer is a bytes.Buffer safe for a process's concurrent writers.
type browserSyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *browserSyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *browserSyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
