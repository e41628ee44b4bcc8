//go:build linux

package sandbox_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/sandbox"
	"github.com/nagent/nagent/store"
)

// BenchmarkLocalPrint1 measures execute latency of print(1) through the
// Manager (staging, tool socket, bwrap, python, history row in SQLite):
// "first" opens a new session's sandbox each time; "reused" runs in one
// warm sandbox; "baseline" is python alone, no sandbox. p50-ms and p95-ms
// are reported per sub-benchmark, over every timed iteration (ns/op is the
// mean, which a few slow outliers on a loaded machine inflate: read p50).
// "overhead" and "overhead-bwrap" report paired differences against bare
// python and bare bubblewrap+python, which hold up under machine load far
// better than absolute figures.
//
//	go test ./runtime/sandbox -run '^$' -bench LocalPrint1 -benchtime 100x
func BenchmarkLocalPrint1(b *testing.B) {
	backend := requireLocal(b)
	ctx := context.Background()
	home := b.TempDir()
	db, err := store.Open(ctx, filepath.Join(home, "nagent.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	m, err := sandbox.NewManager(sandbox.Options{Backend: backend, Store: db, Dir: filepath.Join(home, "sandboxes")})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	run := func(b *testing.B, session string) time.Duration {
		start := time.Now()
		res, err := m.Execute(ctx, sandbox.ExecuteRequest{SessionID: session, Code: "print(1)"})
		d := time.Since(start)
		if err != nil || res.ExitReason != sandbox.ExitOK || res.Stdout != "1\n" {
			b.Fatalf("print(1) = %+v, %v", res, err)
		}
		return d
	}
	report := func(b *testing.B, ds []time.Duration) {
		slices.Sort(ds)
		b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(ds[len(ds)*95/100].Microseconds())/1000, "p95-ms")
	}
	// baseline is /usr/bin/python3 -c 'print(1)' with no sandbox at all, to
	// read the others against on a loaded machine.
	b.Run("baseline", func(b *testing.B) {
		var ds []time.Duration
		for b.Loop() {
			start := time.Now()
			if out, err := exec.Command(sandbox.DefaultPython, "-c", "print(1)").Output(); err != nil || string(out) != "1\n" {
				b.Fatalf("python: %q, %v", out, err)
			}
			ds = append(ds, time.Since(start))
		}
		report(b, ds)
	})
	// overhead alternates a bare python and a reused-sandbox print(1), so
	// that both see the same machine load, and reports the p50 of the
	// differences: what the sandbox adds to python's own start-up.
	b.Run("overhead", func(b *testing.B) {
		run(b, "pair")
		var diffs []time.Duration
		for b.Loop() {
			start := time.Now()
			if err := exec.Command(sandbox.DefaultPython, "-c", "print(1)").Run(); err != nil {
				b.Fatal(err)
			}
			bare := time.Since(start)
			diffs = append(diffs, run(b, "pair")-bare)
		}
		report(b, diffs)
	})
	// overhead-bwrap alternates a bare bubblewrap running python with the
	// same namespace flags (no cgroups, rlimits, tool socket, staging or
	// history) and a reused-sandbox print(1), and reports the p50 of the
	// differences: what N-Agent adds over bubblewrap+python itself.
	b.Run("overhead-bwrap", func(b *testing.B) {
		run(b, "pair-bwrap")
		bwrap, err := exec.LookPath("bwrap")
		if err != nil {
			b.Fatal(err)
		}
		args := []string{"--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
			"--cap-drop", "ALL", "--uid", "1000", "--gid", "1000", "--clearenv", "--ro-bind", "/usr", "/usr"}
		for _, l := range []string{"bin", "sbin", "lib", "lib32", "lib64", "libx32"} {
			if target, err := os.Readlink("/" + l); err == nil {
				args = append(args, "--symlink", target, "/"+l)
			}
		}
		args = append(args, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--remount-ro", "/",
			"--", sandbox.DefaultPython, "-B", "-c", "print(1)")
		var diffs []time.Duration
		for b.Loop() {
			start := time.Now()
			cmd := exec.Command(bwrap, args...)
			cmd.Env = []string{}
			if out, err := cmd.Output(); err != nil || string(out) != "1\n" {
				b.Fatalf("bwrap python: %q, %v", out, err)
			}
			bare := time.Since(start)
			diffs = append(diffs, run(b, "pair-bwrap")-bare)
		}
		report(b, diffs)
	})
	// launch alternates reused calls in two warm sandboxes, one launched
	// through the /bin/sh wrapper (the fallback without ptrace) and one
	// shell-less, and reports the p50 of wrapper − shell-less.
	b.Run("launch", func(b *testing.B) {
		wrapped := requireLocal(b)
		if err := sandbox.WithShellWrapper(ctx, wrapped); err != nil {
			b.Fatal(err)
		}
		if !sandbox.LocalLaunchMode(backend) {
			b.Skip("the shell-less launch is unavailable here (traced?)")
		}
		mw, err := sandbox.NewManager(sandbox.Options{Backend: wrapped, Store: db, Dir: filepath.Join(home, "sandboxes-wrapped")})
		if err != nil {
			b.Fatal(err)
		}
		defer mw.Close()
		runOn := func(m *sandbox.Manager) time.Duration {
			start := time.Now()
			res, err := m.Execute(ctx, sandbox.ExecuteRequest{SessionID: "launch", Code: "print(1)"})
			if err != nil || res.Stdout != "1\n" {
				b.Fatalf("print(1) = %+v, %v", res, err)
			}
			return time.Since(start)
		}
		runOn(m)
		runOn(mw)
		var diffs []time.Duration
		for b.Loop() {
			diffs = append(diffs, runOn(mw)-runOn(m))
		}
		report(b, diffs)
	})
	b.Run("first", func(b *testing.B) {
		var ds []time.Duration
		for i := 0; b.Loop(); i++ {
			ds = append(ds, run(b, "first-"+strconv.Itoa(i)))
		}
		report(b, ds)
	})
	b.Run("reused", func(b *testing.B) {
		run(b, "warm")
		var ds []time.Duration
		for b.Loop() {
			ds = append(ds, run(b, "warm"))
		}
		report(b, ds)
	})
}
