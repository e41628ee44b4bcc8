package wasm_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nagent/nagent/internal/plugintest"
	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/wasm"
)

// example is one example plugin for the benchmarks.
type example struct {
	name, tool string
	build      func(testing.TB) string
	args       func(srvURL string) string
}

var examples = []example{
	{"textstats", "word_count", plugintest.Textstats, func(string) string { return `{"text":"the quick brown fox\njumps over the lazy dog"}` }},
	{"hashing", "sha256", plugintest.Hashing, func(string) string { return `{"text":"the quick brown fox jumps over the lazy dog"}` }},
	{"fetch", "fetch", plugintest.Fetch, func(u string) string { return `{"url":"` + u + `/x"}` }},
}

// BenchmarkCompile is a plugin's cold start: compiling its module with an
// empty compilation cache ("cold"), and with the cache on disk from an
// earlier run ("disk_cache", a restart).
func BenchmarkCompile(b *testing.B) {
	for _, ex := range examples {
		dir := ex.build(b)
		b.Run(ex.name+"/cold", func(b *testing.B) {
			for b.Loop() {
				h, err := wasm.NewHost(wasm.Options{Dir: b.TempDir()})
				if err != nil {
					b.Fatal(err)
				}
				if st := h.Inspect(context.Background(), dir); st.State != wasm.StateReady {
					b.Fatal(st.Error)
				}
				h.Close(context.Background())
			}
		})
		b.Run(ex.name+"/disk_cache", func(b *testing.B) {
			cache := b.TempDir()
			warm, _ := wasm.NewHost(wasm.Options{Dir: b.TempDir(), CacheDir: cache})
			warm.Inspect(context.Background(), dir)
			warm.Close(context.Background())
			for b.Loop() {
				h, _ := wasm.NewHost(wasm.Options{Dir: b.TempDir(), CacheDir: cache})
				if st := h.Inspect(context.Background(), dir); st.State != wasm.StateReady {
					b.Fatal(st.Error)
				}
				h.Close(context.Background())
			}
		})
	}
}

// benchEnv installs ex with the given interrupt mechanism, and a local HTTP
// server for fetch.
func benchEnv(b *testing.B, ex example, interrupt wasm.Interrupt) (*env, string) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	b.Cleanup(srv.Close)
	// Logs are discarded: fetch logs every call, and the benchmark measures
	// the plugin runtime, not the terminal.
	e := newEnv(b, wasm.Options{Interrupt: interrupt, Log: slog.New(slog.DiscardHandler)})
	e.install(b, ex.build(b))
	return e, ex.args(srv.URL)
}

// BenchmarkWarmCall is one call through the ToolService on a compiled
// plugin: a fresh instance, the request, the run and the result. It
// reports the median and the 99th percentile.
func BenchmarkWarmCall(b *testing.B) {
	for _, ex := range examples {
		b.Run(ex.name, func(b *testing.B) {
			e, args := benchEnv(b, ex, "")
			call := tools.ToolCallRequest{ID: "c", Name: ex.tool, Arguments: args}
			ec := tools.ExecutionContext{SessionID: "bench"}
			var d []time.Duration
			for b.Loop() {
				start := time.Now()
				if res := e.ts.Execute(context.Background(), call, ec); res.Status != tools.StatusSuccess {
					b.Fatal(res.Content)
				}
				d = append(d, time.Since(start))
			}
			reportPercentiles(b, d)
		})
	}
}

func reportPercentiles(b *testing.B, d []time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	b.ReportMetric(float64(d[len(d)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(d[len(d)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkParallel8 runs calls from 8 goroutines and reports calls per
// second.
func BenchmarkParallel8(b *testing.B) {
	for _, ex := range examples {
		b.Run(ex.name, func(b *testing.B) {
			e, args := benchEnv(b, ex, "")
			call := tools.ToolCallRequest{ID: "c", Name: ex.tool, Arguments: args}
			ec := tools.ExecutionContext{SessionID: "bench"}
			procs := max(1, 8/runtime.GOMAXPROCS(0))
			b.SetParallelism(procs)
			var failures atomic.Int64
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if res := e.ts.Execute(context.Background(), call, ec); res.Status != tools.StatusSuccess {
						failures.Add(1)
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
			if n := failures.Load(); n > 0 {
				b.Fatalf("%d calls failed", n)
			}
		})
	}
}

// BenchmarkInterrupt measures what a timeout mechanism costs a CPU-bound
// plugin: testdata/spin.wasm, a tight loop of 20 million iterations, with
// no interrupt at all, with wazero's close-on-context-done, and with the
// loop-check rewrite. Also the AssemblyScript sha256 of 1 MiB.
func BenchmarkInterrupt(b *testing.B) {
	big := `{"text":"` + repeat("abcdefgh", 1<<17) + `"}`
	for _, w := range []struct {
		name, tool, args string
		dir              func(testing.TB) string
	}{
		{"spin", "spin", `{}`, func(tb testing.TB) string { return fixture(tb, "spin", "") }},
		{"sha256_1MiB", "sha256", big, plugintest.Hashing},
		{"word_count_1MiB", "word_count", big, plugintest.Textstats},
	} {
		for _, mode := range []wasm.Interrupt{wasm.InterruptNone, wasm.InterruptCloseOnContextDone, wasm.InterruptLoopCheck} {
			b.Run(w.name+"/"+string(mode), func(b *testing.B) {
				e := newEnv(b, wasm.Options{Interrupt: mode})
				e.install(b, w.dir(b))
				call := tools.ToolCallRequest{ID: "c", Name: w.tool, Arguments: w.args}
				var d []time.Duration
				for b.Loop() {
					start := time.Now()
					if res := e.ts.Execute(context.Background(), call, tools.ExecutionContext{}); res.Status != tools.StatusSuccess {
						b.Fatal(res.Content)
					}
					d = append(d, time.Since(start))
				}
				reportPercentiles(b, d)
			})
		}
	}
}

func repeat(s string, n int) string {
	b := make([]byte, 0, len(s)*n)
	for range n {
		b = append(b, s...)
	}
	return string(b)
}
