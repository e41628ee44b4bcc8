package wasm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
)

// TestInstrumentFixtures: every hand-written fixture still validates after
// the rewrite, and gains exactly the tick import.
func TestInstrumentFixtures(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.wasm")
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	for _, f := range files {
		bin, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out, err := instrument(bin)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		cm, err := rt.CompileModule(ctx, out)
		if err != nil {
			t.Errorf("%s: the rewritten module does not compile: %v", f, err)
			continue
		}
		var ticks int
		for _, fn := range cm.ImportedFunctions() {
			if mod, name, _ := fn.Import(); mod == hostModuleName && name == tickFunction {
				ticks++
			}
		}
		if ticks != 1 {
			t.Errorf("%s: %d tick imports", f, ticks)
		}
		before, _ := rt.CompileModule(ctx, bin)
		for name := range before.ExportedFunctions() {
			if _, ok := cm.ExportedFunctions()[name]; !ok {
				t.Errorf("%s: export %s lost", f, name)
			}
		}
	}
}

// TestInstrumentRefuses: unknown encodings and a module that refers to the
// global the rewrite adds are refused, so the host falls back.
func TestInstrumentRefuses(t *testing.T) {
	module := func(code ...byte) []byte {
		body := append([]byte{0x00}, code...) // no locals
		body = append(body, 0x0b)
		b := []byte("\x00asm\x01\x00\x00\x00")
		b = append(b, 0x01, 0x04, 0x01, 0x60, 0x00, 0x00) // type () -> ()
		b = append(b, 0x03, 0x02, 0x01, 0x00)             // one function of type 0
		code10 := appendU32([]byte{0x01}, uint32(len(body)))
		code10 = append(code10, body...)
		b = append(b, 0x0a)
		b = appendU32(b, uint32(len(code10)))
		return append(b, code10...)
	}
	for name, bin := range map[string][]byte{
		"GCPrefix":      module(0xfb, 0x00),
		"NewGlobalUsed": module(0x23, 0x00, 0x1a), // global.get 0 (the global the rewrite adds), drop
	} {
		if _, err := instrument(bin); !errors.Is(err, errUnsupported) {
			t.Errorf("%s: err = %v, want errUnsupported", name, err)
		}
	}
	if _, err := instrument(module(0x01)); err != nil { // nop
		t.Errorf("a valid module: %v", err)
	}
}
