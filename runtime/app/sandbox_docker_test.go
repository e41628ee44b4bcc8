package app_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/llm/scripted"
)

// requireDockerSandbox returns the engine the docker sandbox tests use
// (NAGENT_TEST_DOCKER_HOST, set by .ci/run), skipping without one unless CI
// is set; .ci/run sets NAGENT_TEST_DOCKER_SKIP when dockerd cannot start.
func requireDockerSandbox(tb testing.TB) string {
	tb.Helper()
	host := os.Getenv("NAGENT_TEST_DOCKER_HOST")
	if host == "" {
		if why := os.Getenv("NAGENT_TEST_DOCKER_SKIP"); why != "" {
			tb.Skipf("DOCKER SANDBOX TESTS SKIPPED: %s", why)
		}
		if os.Getenv("CI") != "" {
			tb.Fatal("NAGENT_TEST_DOCKER_HOST is not set; .ci/run starts dockerd and sets it (or sets NAGENT_TEST_DOCKER_SKIP with the reason)")
		}
		tb.Skip("set NAGENT_TEST_DOCKER_HOST (see runtime/sandbox/docker/testdata/start-dockerd.sh) to run the docker sandbox tests")
	}
	return host
}

// TestExecuteCodeThroughLoopDocker is TestExecuteCodeThroughLoop on the
// docker backend chosen by config: print(42), then a second call in the
// same session reuses the container and calls get_current_time back.
func TestExecuteCodeThroughLoopDocker(t *testing.T) {
	host := requireDockerSandbox(t)
	srv := scripted.Start(
		scripted.Reply{ToolCalls: []llm.ToolCall{executeCode("call_1", "print(6*7)")}},
		scripted.Reply{Content: "It printed 42."},
		scripted.Reply{ToolCalls: []llm.ToolCall{executeCode("call_2", "import nagent_tools\nprint(nagent_tools.get_current_time()['now'])")}},
		scripted.Reply{Content: "Done."},
	)
	defer srv.Close()
	cfg := testConfig(t, srv)
	cfg.Sandbox.Backend = "docker"
	cfg.Sandbox.Docker.Host = host
	a := MustNewApp(t, cfg)
	if a.Sandbox == nil || a.Sandbox.Backend().Name() != "docker" {
		t.Fatalf("app.Sandbox = %v, want the docker backend", a.Sandbox)
	}
	ctx := context.Background()
	if res, err := a.Chat.Complete(ctx, userTurn("sbx-docker", "compute 6*7 in python")); err != nil || res.Status != "completed" {
		t.Fatalf("turn 1 = %+v, %v", res, err)
	}
	first := toolResultOf(t, srv.Requests()[1].Messages, "call_1")
	if first.ExitReason != "ok" || first.Stdout != "42\n" || first.Reused || first.Sandbox != "docker" {
		t.Fatalf("first execute_code result = %+v", first)
	}
	if res, err := a.Chat.Complete(ctx, userTurn("sbx-docker", "what time is it, from python?")); err != nil || res.Status != "completed" {
		t.Fatalf("turn 2 = %+v, %v", res, err)
	}
	second := toolResultOf(t, srv.Requests()[3].Messages, "call_2")
	if second.ExitReason != "ok" || !second.Reused || strings.TrimSpace(second.Stdout) == "" {
		t.Fatalf("second execute_code result = %+v", second)
	}
	if len(second.ToolCalls) != 1 || second.ToolCalls[0].Name != "get_current_time" || second.ToolCalls[0].Status != "success" {
		t.Errorf("callbacks = %+v", second.ToolCalls)
	}
}
