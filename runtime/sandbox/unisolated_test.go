//go:build unix

package sandbox_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/sandbox"
	"github.com/nagent/nagent/runtime/sandbox/sandboxtest"
)

// TestUnisolated: the plain-subprocess fallback runs code, serves the
// callback socket, times out, starts from an empty environment, and says
// in every result that it is unisolated. It is NOT an escape-proof
// backend, so the escape suite does not apply.
func TestUnisolated(t *testing.T) {
	b := &sandbox.UnisolatedBackend{}
	if _, err := os.Stat(sandbox.DefaultPython); err != nil {
		t.Skip("no " + sandbox.DefaultPython)
	}
	h := sandboxtest.NewHarness(t, b, sandbox.Options{})
	if !h.Manager.Unisolated() || !strings.Contains(h.Manager.ToolDefinition().Description, "WARNING") {
		t.Error("the manager does not say it is unisolated")
	}
	res := h.Exec(t, "u", "import os, nagent_tools\nprint(6*7, nagent_tools.get_current_time()['now'][:2], os.environ.get('NAGENT_LLM_API_KEY'))", time.Minute, 0)
	if res.ExitReason != sandbox.ExitOK || res.Stdout != "42 20 None\n" || res.Warning != sandbox.UnisolatedWarning {
		t.Fatalf("result = %+v", res)
	}
	res = h.Exec(t, "u", "while True: pass", time.Second, 0)
	if res.ExitReason != sandbox.ExitTimeout || !res.Reused {
		t.Errorf("loop = %+v", res)
	}
}
