package wasm_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/wasm"
)

// failureTests are plugins that misbehave. Each call must end in an error
// ToolResult that says what happened, and the host must go on serving.
var failureTests = []struct {
	name    string
	fixture string // wasm/testdata/<fixture>.wasm
	extra   string // manifest lines
	want    []string
	within  time.Duration
}{
	{"InfiniteLoopTimesOut", "loop", "limits:\n  timeout: 200ms\n",
		[]string{"plugin loop timed out after 200ms", "limits.timeout"}, 3 * time.Second},
	{"MemoryPastLimit", "grow", "limits:\n  memory_mib: 2\n",
		[]string{"plugin grow ran out of memory", "over its limit of 2 MiB", "limits.memory_mib"}, 3 * time.Second},
	{"Trap", "trap", "",
		[]string{"plugin trap crashed: integer divide by zero"}, 3 * time.Second},
	{"GarbageOutput", "garbage", "",
		[]string{"plugin garbage wrote invalid output", "stdout is not a JSON object", `"hello, I am not JSON\n"`}, 3 * time.Second},
}

func TestFailures(t *testing.T) {
	for _, interrupt := range []wasm.Interrupt{wasm.InterruptLoopCheck, wasm.InterruptCloseOnContextDone} {
		t.Run(string(interrupt), func(t *testing.T) {
			e := newEnv(t, wasm.Options{Interrupt: interrupt})
			e.install(t, fixture(t, "trap", "")) // keeps the host busy with a healthy neighbour below
			for _, tt := range failureTests {
				t.Run(tt.name, func(t *testing.T) {
					e.install(t, fixture(t, tt.fixture, tt.extra))
					start := time.Now()
					res := e.call(t, tt.fixture, `{}`)
					wantError(t, res, tt.want...)
					if d := time.Since(start); d > tt.within {
						t.Errorf("call took %s, want under %s", d, tt.within)
					}
					// The host is still healthy: the same plugin runs again
					// in a fresh instance, and fails the same way.
					wantError(t, e.call(t, tt.fixture, `{}`), tt.want...)
				})
			}
		})
	}
}

// TestSpinningPluginDoesNotBlockGC: native wasm code cannot be preempted,
// and a GC stop-the-world waits for every goroutine. A plugin spinning in
// a loop must still let a GC (and so every other goroutine) through, which
// the loop-check tick does; a bare flag check would not.
func TestSpinningPluginDoesNotBlockGC(t *testing.T) {
	e := newEnv(t, wasm.Options{})
	e.install(t, fixture(t, "loop", "limits:\n  timeout: 2s\n"))
	done := make(chan tools.ToolResult, 1)
	go func() { done <- e.call(t, "loop", `{}`) }()
	time.Sleep(200 * time.Millisecond) // the plugin is spinning now
	start := time.Now()
	runtime.GC()
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("a GC took %s while a plugin spun", d)
	}
	wantError(t, <-done, "timed out after 2s")
}
