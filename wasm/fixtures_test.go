package wasm_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestFixturesMatchSources: each hand-written module in testdata is what
// wat2wasm makes of its .wat source. wat2wasm comes from npm (wabt):
// npm ci --prefix wasm/testdata/wat.
func TestFixturesMatchSources(t *testing.T) {
	wat2wasm := filepath.Join("testdata", "wat", "node_modules", ".bin", "wat2wasm")
	if _, err := os.Stat(wat2wasm); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("wat2wasm missing: run npm ci --prefix wasm/testdata/wat")
		}
		t.Skip("wat2wasm missing: run npm ci --prefix wasm/testdata/wat")
	}
	sources, _ := filepath.Glob("testdata/*.wat")
	for _, src := range sources {
		out := filepath.Join(t.TempDir(), "out.wasm")
		if b, err := exec.Command(wat2wasm, "--debug-names", src, "-o", out).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", src, err, b)
		}
		built, _ := os.ReadFile(out)
		committed, err := os.ReadFile(src[:len(src)-len(".wat")] + ".wasm")
		if err != nil || !bytes.Equal(built, committed) {
			t.Errorf("%s: the committed .wasm does not match; run wat2wasm --debug-names %s -o %s", src, src, filepath.Base(src[:len(src)-4])+".wasm")
		}
	}
}
