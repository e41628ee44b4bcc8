package docker_test

import (
	"testing"

	"github.com/nagent/nagent/runtime/sandbox"
	"github.com/nagent/nagent/runtime/sandbox/sandboxtest"
)

// TestDockerEscape runs the shared escape suite (network, hidden file,
// workspace writes, fork and memory bombs, timeouts, background processes,
// secrets, callback allowlist and max_tool_calls) through a real Manager.
func TestDockerEscape(t *testing.T) {
	testBackend(t)
	sandboxtest.RunEscapeSuite(t, func(t *testing.T) sandbox.Backend { return testBackend(t) })
}
