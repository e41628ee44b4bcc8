// Package plugintest builds the example WASM plugins and test fixtures from
// source, for tests in any package. A built plugin is a directory holding
// plugin.yaml and its module, ready for wasm.Install or a plugins directory.
//
// Builds are kept under the system temp directory, keyed by a hash of the
// sources and the toolchain, so a test run rebuilds only what changed. A
// missing toolchain (npm, clang) skips the test, unless CI is set, where it
// fails.
package plugintest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// Root is the repository root.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

var (
	mu     sync.Mutex
	builds = map[string]result{}
)

type result struct {
	dir  string
	err  error
	skip string
}

// Textstats builds examples/plugins/textstats (Go, GOOS=wasip1).
func Textstats(tb testing.TB) string {
	tb.Helper()
	return build(tb, "textstats", func(src, out string) (string, error) {
		return "", run(src, []string{"GOOS=wasip1", "GOARCH=wasm"}, "go", "build", "-trimpath", "-o", filepath.Join(out, "textstats.wasm"), ".")
	})
}

// Hashing builds examples/plugins/hashing (AssemblyScript), running npm ci
// first when node_modules is missing.
func Hashing(tb testing.TB) string {
	tb.Helper()
	return build(tb, "hashing", func(src, out string) (string, error) {
		if _, err := exec.LookPath("npm"); err != nil {
			return "npm not found: install Node.js 20 or later", nil
		}
		if _, err := os.Stat(filepath.Join(src, "node_modules", ".bin", "asc")); err != nil {
			if err := run(src, nil, "npm", "ci", "--no-audit", "--no-fund"); err != nil {
				return "", err
			}
		}
		return "", run(src, nil, filepath.Join("node_modules", ".bin", "asc"), "assembly/index.ts", "--target", "release",
			"-o", filepath.Join(out, "hashing.wasm"))
	})
}

// Fetch builds examples/plugins/fetch (C, Debian's clang and wasi-libc).
func Fetch(tb testing.TB) string {
	tb.Helper()
	return build(tb, "fetch", func(src, out string) (string, error) {
		if _, err := exec.LookPath("clang"); err != nil {
			return "clang not found: apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32", nil
		}
		return "", run(src, nil, "clang", "--target=wasm32-wasi", "-O2", "-o", filepath.Join(out, "fetch.wasm"), "fetch.c")
	})
}

// GoFixture builds a Go test program (GOOS=wasip1) from dir, relative to
// the repository root, into a directory of its own, as module.wasm.
func GoFixture(tb testing.TB, dir string) string {
	tb.Helper()
	key := "fixture-" + strings.ReplaceAll(dir, "/", "_")
	return buildAt(tb, key, filepath.Join(Root(), dir), false, func(src, out string) (string, error) {
		return "", run(src, []string{"GOOS=wasip1", "GOARCH=wasm"}, "go", "build", "-trimpath", "-o", filepath.Join(out, "module.wasm"), ".")
	})
}

// Dir writes a plugin directory with manifest as plugin.yaml and module
// under the name the manifest's module field gives (moduleName).
func Dir(tb testing.TB, manifest, moduleName string, module []byte) string {
	tb.Helper()
	dir := tb.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "plugin.yaml"), []byte(manifest), 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, moduleName), module, 0o644); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// build builds examples/plugins/name and copies its plugin.yaml beside the module.
func build(tb testing.TB, name string, fn func(src, out string) (string, error)) string {
	tb.Helper()
	return buildAt(tb, name, filepath.Join(Root(), "examples", "plugins", name), true, fn)
}

func buildAt(tb testing.TB, key, src string, withManifest bool, fn func(src, out string) (string, error)) string {
	tb.Helper()
	mu.Lock()
	defer mu.Unlock()
	r, ok := builds[key]
	if !ok {
		r = doBuild(key, src, withManifest, fn)
		builds[key] = r
	}
	switch {
	case r.skip != "" && os.Getenv("CI") != "":
		tb.Fatalf("build %s: %s", key, r.skip)
	case r.skip != "":
		tb.Skipf("build %s: %s", key, r.skip)
	case r.err != nil:
		tb.Fatalf("build %s: %v", key, r.err)
	}
	return r.dir
}

func doBuild(key, src string, withManifest bool, fn func(src, out string) (string, error)) result {
	sum, err := sourceHash(src)
	if err != nil {
		return result{err: err}
	}
	out := filepath.Join(os.TempDir(), "nagent-plugin-build", key+"-"+sum[:16])
	if _, err := os.Stat(filepath.Join(out, ".done")); err == nil {
		return result{dir: out}
	}
	tmp, err := os.MkdirTemp(filepath.Dir(out), key+".tmp-")
	if err != nil {
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return result{err: err}
		}
		if tmp, err = os.MkdirTemp(filepath.Dir(out), key+".tmp-"); err != nil {
			return result{err: err}
		}
	}
	defer os.RemoveAll(tmp)
	skip, err := fn(src, tmp)
	if skip != "" || err != nil {
		return result{skip: skip, err: err}
	}
	if withManifest {
		data, err := os.ReadFile(filepath.Join(src, "plugin.yaml"))
		if err != nil {
			return result{err: err}
		}
		if err := os.WriteFile(filepath.Join(tmp, "plugin.yaml"), data, 0o644); err != nil {
			return result{err: err}
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, ".done"), nil, 0o644); err != nil {
		return result{err: err}
	}
	if err := os.Rename(tmp, out); err != nil {
		if _, statErr := os.Stat(filepath.Join(out, ".done")); statErr == nil {
			return result{dir: out} // a concurrent test process won the race
		}
		return result{err: err}
	}
	return result{dir: out}
}

// sourceHash hashes the sources (not node_modules or build outputs) and
// the toolchain versions.
func sourceHash(src string) (string, error) {
	h := sha256.New()
	fmt.Fprintln(h, runtime.Version())
	for _, tool := range []string{"clang", "node"} {
		if p, err := exec.LookPath(tool); err == nil {
			out, _ := exec.Command(p, "--version").Output()
			h.Write(out)
		}
	}
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "node_modules" {
			return filepath.SkipDir
		}
		if d.IsDir() || strings.HasSuffix(path, ".wasm") {
			return nil
		}
		rel, _ := filepath.Rel(src, path)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %d\n", rel, len(data))
		h.Write(data)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil)), err
}

func run(dir string, env []string, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// Fixture is a plugin directory for the hand-written test module
// wasm/testdata/<name>.wasm, whose one tool is also called name; extra is
// appended to the manifest (limits:, permissions:, ...).
func Fixture(tb testing.TB, name, extra string) string {
	tb.Helper()
	bin, err := os.ReadFile(filepath.Join(Root(), "wasm", "testdata", name+".wasm"))
	if err != nil {
		tb.Fatal(err)
	}
	manifest := "name: " + name + "\nmodule: " + name + ".wasm\ntools:\n  - name: " + name +
		"\n    description: test fixture " + name + "\n" + extra
	return Dir(tb, manifest, name+".wasm", bin)
}

// Probe is a plugin directory named probe for the Go test program
// wasm/testdata/probe, exposing the given tools of it; extra is appended to
// the manifest.
func Probe(tb testing.TB, extra string, tools ...string) string {
	tb.Helper()
	bin, err := os.ReadFile(filepath.Join(GoFixture(tb, "wasm/testdata/probe"), "module.wasm"))
	if err != nil {
		tb.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("name: probe\nmodule: probe.wasm\ntools:\n")
	for _, t := range tools {
		b.WriteString("  - name: " + t + "\n    description: probe " + t + "\n    risk_level: low\n")
	}
	b.WriteString(extra)
	return Dir(tb, b.String(), "probe.wasm", bin)
}
