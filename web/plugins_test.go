package web_test

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nagent/nagent/web"
)

// buildTextstats compiles examples/plugins/textstats to WASI.
func buildTextstats(tb testing.TB) (manifest, module []byte) {
	tb.Helper()
	dir := filepath.Join("..", "examples", "plugins", "textstats")
	out := filepath.Join(tb.TempDir(), "textstats.wasm")
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("building textstats: %v\n%s", err, b)
	}
	manifest, err := os.ReadFile(filepath.Join(dir, "plugin.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	module, err = os.ReadFile(out)
	if err != nil {
		tb.Fatal(err)
	}
	return manifest, module
}

func multipartBody(tb testing.TB, parts map[string][]byte) (string, []byte) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for name, data := range parts {
		w, err := mw.CreateFormFile(name, name+".bin")
		if err != nil {
			tb.Fatal(err)
		}
		w.Write(data)
	}
	mw.Close()
	return mw.FormDataContentType(), buf.Bytes()
}

func TestPlugins(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a WASM plugin")
	}
	manifest, module := buildTextstats(t)
	e := newEnv(t, envOptions{keys: []string{"k"}})
	e.login("k")

	upload := func(parts map[string][]byte) response {
		ct, body := multipartBody(t, parts)
		return e.do("POST", "/api/plugins", body, "Content-Type", ct)
	}
	t.Run("MissingModule", func(t *testing.T) {
		if r := upload(map[string][]byte{"manifest": manifest}); r.status != 400 || r.errField() != "module" {
			t.Fatalf("upload without module = %d %s", r.status, r.raw)
		}
	})
	t.Run("BadManifest", func(t *testing.T) {
		if r := upload(map[string][]byte{"manifest": []byte("name: [oops"), "module": module}); r.status != 400 || r.errField() != "manifest" {
			t.Fatalf("bad manifest = %d %s", r.status, r.raw)
		}
	})
	t.Run("GarbageModule", func(t *testing.T) {
		if r := upload(map[string][]byte{"manifest": manifest, "module": []byte("not wasm")}); r.status != 400 {
			t.Fatalf("garbage module = %d %s", r.status, r.raw)
		}
	})
	t.Run("UploadCallRemove", func(t *testing.T) {
		r := upload(map[string][]byte{"manifest": manifest, "module": module})
		if r.status != 201 || !strings.Contains(r.raw, `"state":"ready"`) {
			t.Fatalf("upload = %d %s", r.status, r.raw)
		}
		list := e.do("GET", "/api/plugins", nil)
		if !strings.Contains(list.raw, `"textstats"`) {
			t.Fatalf("list = %s", list.raw)
		}
		call := e.do("POST", "/api/plugins/textstats/call", map[string]any{"tool": "word_count", "arguments": map[string]any{"text": "hello big world"}})
		if call.status != 200 || call.body["status"] != "success" || !strings.Contains(call.body["content"].(string), "3") {
			t.Fatalf("call = %d %s", call.status, call.raw)
		}
		if r := e.do("POST", "/api/plugins/textstats/call", map[string]any{"tool": "nope"}); r.status != 404 {
			t.Fatalf("unknown tool = %d %s", r.status, r.raw)
		}
		if r := e.do("DELETE", "/api/plugins/textstats", nil); r.status != 200 {
			t.Fatalf("delete = %d %s", r.status, r.raw)
		}
		if strings.Contains(e.do("GET", "/api/plugins", nil).raw, `"textstats"`) {
			t.Fatal("plugin still listed after delete")
		}
	})
	t.Run("NeedsCSRF", func(t *testing.T) {
		ct, body := multipartBody(t, map[string][]byte{"manifest": manifest, "module": module})
		if r := e.do("POST", "/api/plugins", body, "Content-Type", ct, web.CSRFHeader, ""); r.status != 403 {
			t.Fatalf("upload without CSRF = %d", r.status)
		}
	})
	_ = http.StatusOK
}
