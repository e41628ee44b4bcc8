package wasm_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/wasm"
)

func statusOf(tb testing.TB, h *wasm.Host, name string) wasm.Status {
	tb.Helper()
	for _, st := range h.Statuses() {
		if st.Name == name {
			return st
		}
	}
	tb.Fatalf("no status for %s in %+v", name, h.Statuses())
	return wasm.Status{}
}

func load(tb testing.TB, h *wasm.Host) {
	tb.Helper()
	if _, err := h.Load(context.Background()); err != nil {
		tb.Fatal(err)
	}
}

// TestCheck: an unusable plugin's tools are not exposed, and the reason is
// in its status.
func TestCheck(t *testing.T) {
	t.Run("Export", func(t *testing.T) {
		e := newEnv(t, wasm.Options{})
		if _, err := wasm.Install(context.Background(), fixture(t, "unusable", ""), e.dir, nil); err != nil {
			t.Fatal(err)
		}
		load(t, e.host)
		st := statusOf(t, e.host, "unusable")
		if st.State != wasm.StateUnusable || st.Error != "needs the CUDA driver" {
			t.Errorf("status = %+v", st)
		}
		if _, ok := e.ts.Lookup("unusable"); ok {
			t.Error("an unusable plugin's tool is exposed")
		}
	})
	t.Run("Request", func(t *testing.T) {
		for _, usable := range []bool{true, false} {
			e := newEnv(t, wasm.Options{Settings: map[string]wasm.Settings{"probe": {Config: map[string]any{"usable": usable}}}})
			src := probe(t, "check: true\nconfig: {type: object, properties: {usable: {type: boolean}}}\n", "echo")
			if _, err := wasm.Install(context.Background(), src, e.dir, nil); err != nil {
				t.Fatal(err)
			}
			load(t, e.host)
			st := statusOf(t, e.host, "probe")
			_, exposed := e.ts.Lookup("echo")
			switch {
			case usable && (st.State != wasm.StateReady || !exposed):
				t.Errorf("usable: status %+v, exposed %v", st, exposed)
			case !usable && (st.State != wasm.StateUnusable || st.Error != "config says usable: false" || exposed):
				t.Errorf("unusable: status %+v, exposed %v", st, exposed)
			}
		}
	})
}

// TestLoadErrors: a broken plugin is reported and does not take the others down.
func TestLoadErrors(t *testing.T) {
	e := newEnv(t, wasm.Options{Settings: map[string]wasm.Settings{"probe": {Config: map[string]any{"units": 3}}}})
	write := func(name, manifest string, module []byte) {
		dir := filepath.Join(e.dir, name)
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "plugin.yaml"), []byte(manifest), 0o644)
		if module != nil {
			os.WriteFile(filepath.Join(dir, "m.wasm"), module, 0o644)
		}
	}
	trap, _ := os.ReadFile("testdata/trap.wasm")
	write("badyaml", "name: badyaml\ntools: [{name: x}]\n", nil)
	write("nomodule", "name: nomodule\nmodule: m.wasm\ntools: [{name: x, description: y}]\n", nil)
	write("garbled", "name: garbled\nmodule: m.wasm\ntools: [{name: x, description: y}]\n", []byte("\x00asm\x01\x00\x00\x00\xff"))
	write("clash", "name: clash\nmodule: m.wasm\ntools: [{name: get_current_time, description: y}]\n", trap)
	write("good", "name: good\nmodule: m.wasm\ntools: [{name: trap, description: y}]\n", trap)
	e.ts.Register(tools.CurrentTimeTool(nil))
	if _, err := wasm.Install(context.Background(), probe(t, "config: {type: object, properties: {units: {type: string}}}\n", "echo"), e.dir, nil); err != nil {
		t.Fatal(err)
	}
	load(t, e.host)
	for name, want := range map[string]string{
		"badyaml":  "tools[0].description: is required",
		"nomodule": "module: open",
		"garbled":  "module m.wasm",
		"clash":    "tool get_current_time is already a builtin tool",
		"probe":    "plugins.probe.config in N-Agent's config.yaml does not match",
	} {
		if st := statusOf(t, e.host, name); st.State != wasm.StateError || !strings.Contains(st.Error, want) {
			t.Errorf("%s: status %+v, want error with %q", name, st, want)
		}
	}
	if st := statusOf(t, e.host, "good"); st.State != wasm.StateReady {
		t.Errorf("good: %+v", st)
	}
	if _, ok := e.ts.Lookup("trap"); !ok {
		t.Error("the good plugin's tool is missing")
	}
}

// TestImportsChecked: a module importing what the host lacks is refused at load.
func TestImportsChecked(t *testing.T) {
	e := newEnv(t, wasm.Options{})
	// (module (import "env" "abort" (func)) (func (export "_start")))
	bin := []byte("\x00asm\x01\x00\x00\x00\x01\x04\x01\x60\x00\x00\x02\x0d\x01\x03env\x05abort\x00\x00\x03\x02\x01\x00\x07\x0a\x01\x06_start\x00\x01\x0a\x04\x01\x02\x00\x0b")
	src := writeDir(t, "name: imports\nmodule: m.wasm\ntools: [{name: x, description: y}]\n", bin)
	if _, err := wasm.Install(context.Background(), src, e.dir, nil); err != nil {
		t.Fatal(err)
	}
	load(t, e.host)
	if st := statusOf(t, e.host, "imports"); st.State != wasm.StateError || !strings.Contains(st.Error, "imports env.abort, which the host does not provide") {
		t.Errorf("status = %+v", st)
	}
}

func writeDir(tb testing.TB, manifest string, module []byte) string {
	dir := tb.TempDir()
	os.WriteFile(filepath.Join(dir, "plugin.yaml"), []byte(manifest), 0o644)
	os.WriteFile(filepath.Join(dir, "m.wasm"), module, 0o644)
	return dir
}

// TestKVAndLogAudited: the key-value store persists across calls (fresh
// instances), is per plugin, and every host call is audited.
func TestKVAndLogAudited(t *testing.T) {
	e := newEnv(t, wasm.Options{})
	e.install(t, probe(t, "", "kv", "log"))
	wantSuccess(t, e.call(t, "kv", `{"op":"get","key":"greeting"}`), "null")
	wantSuccess(t, e.call(t, "kv", `{"op":"set","key":"greeting","value":"hello, world"}`), "set")
	// A 4-byte buffer is too small: the probe fetches the rest with last_result.
	wantSuccess(t, e.call(t, "kv", `{"op":"get","key":"greeting"}`), "hello, world")
	if v, ok, _ := e.db.PluginKVGet(context.Background(), "other", "greeting"); ok {
		t.Errorf("another plugin sees %q", v)
	}
	wantSuccess(t, e.call(t, "kv", `{"op":"delete","key":"greeting"}`), "deleted")
	wantSuccess(t, e.call(t, "kv", `{"op":"get","key":"greeting"}`), "null")
	wantSuccess(t, e.call(t, "log", `{"message":"working on it"}`), "logged")

	e.host.SyncAudit(context.Background())
	calls, err := e.db.ListPluginHostCalls(context.Background(), "probe", 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range calls {
		got = append(got, c.Function+" "+c.Detail+" "+c.Outcome+" "+c.SessionID+" "+c.Tool)
	}
	want := []string{
		"kv_get greeting (absent) ok s1 kv",
		"kv_set greeting (12 bytes) ok s1 kv",
		"kv_get greeting ok s1 kv",
		"kv_delete greeting ok s1 kv",
		"kv_get greeting (absent) ok s1 kv",
		"log INFO: working on it ok s1 log",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestInstallUpdateRemoveWithWatch: with Watch running, installing,
// updating and removing a plugin changes the published tools, without a
// call to Load.
func TestInstallUpdateRemoveWithWatch(t *testing.T) {
	e := newEnv(t, wasm.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.host.Watch(ctx, 20*time.Millisecond) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	time.Sleep(50 * time.Millisecond) // let the watch start

	eventually := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting until %s; statuses %+v", what, e.host.Statuses())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	has := func(name string) bool { _, ok := e.ts.Lookup(name); return ok }

	if _, err := wasm.Install(ctx, fixture(t, "trap", ""), e.dir, nil); err != nil {
		t.Fatal(err)
	}
	eventually("trap is published", func() bool { return has("trap") })
	wantError(t, e.call(t, "trap", `{}`), "integer divide by zero")

	// Update: the same plugin name now ships a different tool.
	garbage, _ := os.ReadFile("testdata/garbage.wasm")
	if _, err := wasm.Install(ctx, writeDir(t, "name: trap\nmodule: m.wasm\ntools: [{name: garbage, description: y}]\n", garbage), e.dir, nil); err != nil {
		t.Fatal(err)
	}
	eventually("the update is published", func() bool { return has("garbage") && !has("trap") })

	if err := wasm.Remove(e.dir, "trap"); err != nil {
		t.Fatal(err)
	}
	eventually("the plugin is gone", func() bool { return !has("garbage") })
	if entries, _ := os.ReadDir(e.dir); len(entries) != 0 {
		t.Errorf("plugins dir keeps %v", entries)
	}
	if err := wasm.Remove(e.dir, "trap"); err == nil || !strings.Contains(err.Error(), "not installed") {
		t.Errorf("second remove: %v", err)
	}
}

// TestConcurrentCallsDuringReloads: calls from several goroutines run while
// the plugin is replaced again and again; every call ends in a result from
// one version or the other, or says the tool just went away, and nothing
// races (run with -race).
func TestConcurrentCallsDuringReloads(t *testing.T) {
	e := newEnv(t, wasm.Options{})
	trap := fixture(t, "trap", "")
	garbage, _ := os.ReadFile("testdata/garbage.wasm")
	other := writeDir(t, "name: trap\nmodule: m.wasm\ntools: [{name: trap, description: now garbage}]\n", garbage)
	e.install(t, trap)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make(chan string, 100)
	done := make(chan struct{})
	for range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for ctx.Err() == nil {
				res := e.call(t, "trap", `{}`)
				if res.Status != tools.StatusError || !(strings.Contains(res.Content, "integer divide by zero") ||
					strings.Contains(res.Content, "wrote invalid output") || strings.Contains(res.Content, "does not exist") ||
					strings.Contains(res.Content, "just been removed")) {
					errs <- res.Content
					return
				}
			}
		}()
	}
	for i := range 10 {
		src := trap
		if i%2 == 0 {
			src = other
		}
		if _, err := wasm.Install(ctx, src, e.dir, nil); err != nil {
			t.Fatal(err)
		}
		load(t, e.host)
	}
	cancel()
	for range 8 {
		<-done
	}
	close(errs)
	for msg := range errs {
		t.Errorf("unexpected result during reloads: %s", msg)
	}
}
