package wasm_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nagent/nagent/wasm"
)

// TestGoPluginFailures: a Go plugin that panics, runs out of memory, spins,
// sleeps or floods stdout ends in a precise error, and the next call works.
func TestGoPluginFailures(t *testing.T) {
	e := newEnv(t, wasm.Options{})
	e.install(t, probe(t, "limits:\n  timeout: 3s\n  memory_mib: 32\n  output_bytes: 1000\n",
		"panic", "alloc", "spin", "sleep", "print", "echo"))
	tests := []struct {
		name, tool, args string
		want             []string
	}{
		{"Panic", "panic", `{}`, []string{"plugin probe exited with code 2", "stderr: panic: probe panicked on purpose"}},
		{"OutOfMemory", "alloc", `{"mib":100}`, []string{"plugin probe ran out of memory", "over its limit of 32 MiB", "stderr: runtime: out of memory"}},
		{"Spin", "spin", `{}`, []string{"plugin probe timed out after 3s"}},
		{"Sleep", "sleep", `{"ms":60000}`, []string{"plugin probe timed out after 3s"}},
		{"FloodsStdout", "print", `{"bytes":100000}`, []string{"plugin probe wrote more than 1000 bytes to stdout", "limits.output_bytes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantError(t, e.call(t, tt.tool, tt.args), tt.want...)
			res := e.call(t, "echo", `{"n":1}`)
			if res.Status != "success" || !strings.Contains(res.Content, `"arguments":{"n":1}`) {
				t.Fatalf("after %s, echo = %+v", tt.name, res)
			}
		})
	}
}

// TestFilesystem: no filesystem at all unless allowed_paths grants one, and
// a grant is read-only unless writable, and cannot be escaped.
func TestFilesystem(t *testing.T) {
	granted := t.TempDir()
	os.WriteFile(filepath.Join(granted, "ok.txt"), []byte("granted text"), 0o644)
	secret := filepath.Join(filepath.Dir(granted), "secret.txt")
	os.WriteFile(secret, []byte("top secret"), 0o644)
	writable := t.TempDir()

	t.Run("NoGrant", func(t *testing.T) {
		e := newEnv(t, wasm.Options{})
		e.install(t, probe(t, "", "read_file", "write_file"))
		wantError(t, e.call(t, "read_file", `{"path":"/etc/passwd"}`), "open /etc/passwd")
		wantError(t, e.call(t, "read_file", `{"path":`+quote(secret)+`}`), "open "+secret)
		wantError(t, e.call(t, "write_file", `{"path":"/tmp/x","text":"a"}`), "open /tmp/x")
	})
	t.Run("Granted", func(t *testing.T) {
		e := newEnv(t, wasm.Options{})
		e.install(t, probe(t, "permissions:\n  allowed_paths:\n    - host: "+granted+"\n      guest: /data\n    - host: "+writable+"\n      guest: /out\n      writable: true\n",
			"read_file", "write_file"))
		wantSuccess(t, e.call(t, "read_file", `{"path":"/data/ok.txt"}`), `{"text":"granted text"}`)
		wantError(t, e.call(t, "read_file", `{"path":"/data/../secret.txt"}`), "open /data/../secret.txt")
		wantError(t, e.call(t, "read_file", `{"path":"/etc/passwd"}`), "open /etc/passwd")
		wantError(t, e.call(t, "write_file", `{"path":"/data/new.txt","text":"x"}`), "open /data/new.txt")
		wantSuccess(t, e.call(t, "write_file", `{"path":"/out/new.txt","text":"written by the plugin"}`), "written")
		if b, _ := os.ReadFile(filepath.Join(writable, "new.txt")); string(b) != "written by the plugin" {
			t.Errorf("writable grant: file holds %q", b)
		}
		if _, err := os.Stat(filepath.Join(granted, "new.txt")); err == nil {
			t.Error("the read-only grant was written")
		}
	})
}

// TestEnvironmentAllowlist: the plugin sees only the listed variables.
func TestEnvironmentAllowlist(t *testing.T) {
	env := map[string]string{"PLUGIN_LANG": "fr", "HOME": "/root", "NAGENT_LLM_API_KEY": "sk-secret"}
	e := newEnv(t, wasm.Options{Getenv: func(k string) string { return env[k] }})
	e.install(t, probe(t, "permissions:\n  env: [PLUGIN_LANG, UNSET_ONE]\n", "env"))
	wantSuccess(t, e.call(t, "env", `{}`), `["PLUGIN_LANG=fr"]`)
}

// TestRequestCarriesContext: the request has the tool, arguments, config,
// declared secrets, session id and metadata.
func TestRequestCarriesContext(t *testing.T) {
	e := newEnv(t, wasm.Options{
		Settings: map[string]wasm.Settings{"probe": {
			Config:  map[string]any{"units": "metric"},
			Secrets: map[string]string{"API_TOKEN": "tok-1", "UNDECLARED": "never sent"},
		}},
	})
	e.install(t, probe(t, "config:\n  type: object\n  properties:\n    units: {type: string, enum: [metric, imperial]}\nsecrets:\n  - name: API_TOKEN\n", "echo"))
	res := e.ts.Execute(context.Background(), call("echo", `{"q":"x"}`), execCtx("sess-9", map[string]any{"user": "ada"}))
	var got map[string]any
	if err := json.Unmarshal([]byte(res.Content), &got); err != nil {
		t.Fatalf("%+v: %v", res, err)
	}
	want := `{"arguments":{"q":"x"},"config":{"units":"metric"},"metadata":{"user":"ada"},"secrets":{"API_TOKEN":"tok-1"},"session_id":"sess-9","tool":"echo"}`
	if b, _ := json.Marshal(got); string(b) != want {
		t.Errorf("request = %s\nwant      %s", b, want)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
