package wasm_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nagent/nagent/internal/plugintest"
	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/store"
	"github.com/nagent/nagent/wasm"
)

// cacheDir is a compilation cache shared by the package's tests, so each
// module compiles once per run.
var cacheDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "nagent-wasm-cache-")
	if err != nil {
		panic(err)
	}
	cacheDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// MustOpenDB opens a fresh database in a temp directory.
func MustOpenDB(tb testing.TB) *store.DB {
	tb.Helper()
	db, err := store.Open(context.Background(), filepath.Join(tb.TempDir(), "nagent.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// env is a host publishing into a ToolService, over a temp plugins directory.
type env struct {
	host *wasm.Host
	ts   *tools.ToolService
	db   *store.DB
	dir  string
}

// newEnv builds a host; opts.Dir, Store and Slot default to fresh ones.
func newEnv(tb testing.TB, opts wasm.Options) *env {
	tb.Helper()
	e := &env{ts: tools.NewToolService(nil, tools.Options{DefaultTimeout: time.Minute})}
	if opts.Dir == "" {
		opts.Dir = filepath.Join(tb.TempDir(), "plugins")
	}
	if opts.Store == nil {
		e.db = MustOpenDB(tb)
		opts.Store = e.db
	}
	if opts.Slot == nil {
		opts.Slot = e.ts
	}
	if opts.CacheDir == "" {
		opts.CacheDir = cacheDir
	}
	e.dir = opts.Dir
	h, err := wasm.NewHost(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { h.Close(context.Background()) })
	e.host = h
	return e
}

// install installs src and reloads, failing unless the plugin is ready.
func (e *env) install(tb testing.TB, src string) {
	tb.Helper()
	m, err := wasm.Install(context.Background(), src, e.dir, nil)
	if err != nil {
		tb.Fatal(err)
	}
	statuses, err := e.host.Load(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	for _, st := range statuses {
		if st.Name == m.Name && st.State != wasm.StateReady {
			tb.Fatalf("plugin %s is %s: %s", st.Name, st.State, st.Error)
		}
	}
}

// call runs one call through the ToolService, as the agent loop does.
func (e *env) call(tb testing.TB, tool, args string) tools.ToolResult {
	tb.Helper()
	return e.ts.Execute(context.Background(), tools.ToolCallRequest{ID: "call_1", Name: tool, Arguments: args},
		tools.ExecutionContext{SessionID: "s1", Source: "test", AgentContext: tools.AgentPrimary})
}

func fixture(tb testing.TB, name, extra string) string {
	tb.Helper()
	return plugintest.Fixture(tb, name, extra)
}

func probe(tb testing.TB, extra string, toolNames ...string) string {
	tb.Helper()
	return plugintest.Probe(tb, extra, toolNames...)
}

func wantError(tb testing.TB, res tools.ToolResult, substrings ...string) {
	tb.Helper()
	if res.Status != tools.StatusError {
		tb.Fatalf("status = %s, want error; content %q", res.Status, res.Content)
	}
	for _, s := range substrings {
		if !strings.Contains(res.Content, s) {
			tb.Errorf("content %q does not contain %q", res.Content, s)
		}
	}
}

func wantSuccess(tb testing.TB, res tools.ToolResult, content string) {
	tb.Helper()
	if res.Status != tools.StatusSuccess || res.Content != content {
		tb.Fatalf("result = %s %q, want success %q", res.Status, res.Content, content)
	}
}

func call(name, args string) tools.ToolCallRequest {
	return tools.ToolCallRequest{ID: "call_1", Name: name, Arguments: args}
}

func execCtx(session string, meta map[string]any) tools.ExecutionContext {
	return tools.ExecutionContext{SessionID: session, Source: "test", AgentContext: tools.AgentPrimary, TrustedMetadata: meta}
}
