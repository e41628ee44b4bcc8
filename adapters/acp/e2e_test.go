package acp_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nagent/nagent/internal/testbin"
	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/llm/scripted"
)

const nodeDir = "testdata/node"

// requireNodeClient returns the node binary, or skips the test when the
// ACP client suite is not installed. With CI set a missing install fails.
func requireNodeClient(tb testing.TB) string {
	tb.Helper()
	missing := func(msg string) {
		tb.Helper()
		if os.Getenv("CI") != "" {
			tb.Fatal(msg + " (CI is set, so this test may not be skipped)")
		}
		tb.Skip(msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not on PATH; install Node 20 or later, then run `npm ci --prefix adapters/acp/testdata/node`")
	}
	for _, pkg := range []string{"@agentclientprotocol/sdk", "@modelcontextprotocol/server-everything"} {
		if _, err := os.Stat(filepath.Join(nodeDir, "node_modules", pkg, "package.json")); err != nil {
			missing(pkg + " is not installed: run `npm ci --prefix adapters/acp/testdata/node`")
		}
	}
	return node
}

const e2eConfig = `llm:
  max_attempts: 1
  retry_base_delay: 1ms
`

// confirmClock makes get_current_time need a human's approval.
const confirmClock = `package nagent.tools

confirm contains "reading the clock needs your approval" if input.tool.name == "get_current_time"
`

// acpEnv is one scenario's world: a data directory and a scripted model.
type acpEnv struct {
	home  string
	model *scripted.Server
	extra []string
}

func newEnv(tb testing.TB, replies ...scripted.Reply) *acpEnv {
	tb.Helper()
	home := tb.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(e2eConfig), 0o600); err != nil {
		tb.Fatal(err)
	}
	model := scripted.Start(replies...)
	tb.Cleanup(model.Close)
	return &acpEnv{home: home, model: model}
}

func (e *acpEnv) policy(tb testing.TB, name, body string) {
	tb.Helper()
	dir := filepath.Join(e.home, "policies")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
		tb.Fatal(err)
	}
}

func (e *acpEnv) environ(bin string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "NAGENT_") && !strings.HasPrefix(kv, "OPENAI_") {
			env = append(env, kv)
		}
	}
	everything, _ := filepath.Abs(filepath.Join(nodeDir, "node_modules", ".bin", "mcp-server-everything"))
	env = append(env,
		"NAGENT_BIN="+bin,
		"NAGENT_HOME="+e.home,
		"NAGENT_LLM_BASE_URL="+e.model.URL(),
		"NAGENT_LLM_MODEL=nagent-test",
		"NAGENT_LLM_API_KEY=x",
		"NAGENT_LOG_LEVEL=info",
		"MCP_EVERYTHING="+everything,
	)
	return append(env, e.extra...)
}

// runScenario runs one scenario of testdata/node/acp.mjs and returns its
// JSON summary.
func runScenario(tb testing.TB, node, bin string, e *acpEnv, scenario string) map[string]any {
	tb.Helper()
	cmd := exec.Command(node, "acp.mjs", scenario)
	cmd.Dir = nodeDir
	cmd.Env = e.environ(bin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			tb.Fatalf("scenario %s failed: %v\nstdout:\n%s\nstderr:\n%s", scenario, err, stdout.String(), stderr.String())
		}
	case <-time.After(3 * time.Minute):
		cmd.Process.Kill()
		<-done
		tb.Fatalf("scenario %s did not finish in 3 minutes\nstdout:\n%s\nstderr:\n%s", scenario, stdout.String(), stderr.String())
	}
	if os.Getenv("ACP_DEBUG") != "" {
		tb.Logf("scenario %s stderr (nagent's log):\n%s", scenario, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var summary map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &summary); err != nil {
		tb.Fatalf("scenario %s: the last stdout line is not a JSON summary: %v\n%s", scenario, err, stdout.String())
	}
	return summary
}

// lastUser is the last user message of a model request.
func lastUser(req scripted.RecordedRequest) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == llm.RoleUser {
			return req.Messages[i].Content
		}
	}
	return ""
}

func clockCall(id string) scripted.Reply {
	return scripted.Reply{ToolCalls: []llm.ToolCall{{ID: id, Name: "get_current_time", Arguments: `{"timezone":"UTC"}`}}}
}

// TestACPClient drives the real `nagent acp` binary with the official ACP
// TypeScript client, one scenario per subtest.
func TestACPClient(t *testing.T) {
	node := requireNodeClient(t)
	bin := testbin.Nagent(t)

	t.Run("Initialize", func(t *testing.T) {
		runScenario(t, node, bin, newEnv(t), "initialize")
	})

	t.Run("TextPromptStreamed", func(t *testing.T) {
		e := newEnv(t, scripted.Reply{Content: "Hello from the scripted model.", ChunkSize: 4})
		sum := runScenario(t, node, bin, e, "text")
		reqs := e.model.Requests()
		if len(reqs) != 1 || !reqs[0].Stream {
			t.Fatalf("model requests = %d (stream %v), want 1 streamed", len(reqs), len(reqs) > 0 && reqs[0].Stream)
		}
		user := lastUser(reqs[0])
		for _, part := range []string{"Summarise the file.", `uri="file:///repo/notes.md"`, "kestrel runs in eu-west-1", "README.md <file:///repo/README.md>"} {
			if !strings.Contains(user, part) {
				t.Errorf("the user message lacks %q:\n%s", part, user)
			}
		}
		// The session is a stored session with source acp, as the CLI and
		// the dashboard list it.
		cmd := exec.Command(bin, "session", "list", "--source", "acp", "--json")
		cmd.Env = e.environ(bin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("session list: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), fmt.Sprint(sum["sessionId"])) {
			t.Errorf("nagent session list --source acp lacks %v:\n%s", sum["sessionId"], out)
		}
	})

	t.Run("ToolTurn", func(t *testing.T) {
		e := newEnv(t, clockCall("call_clock"), scripted.Reply{Content: "It is noon in UTC."})
		runScenario(t, node, bin, e, "tool")
	})

	t.Run("PermissionRejectThenAllow", func(t *testing.T) {
		e := newEnv(t,
			clockCall("p1"), scripted.Reply{Content: "You said no."},
			clockCall("p2"), scripted.Reply{Content: "Here it is."},
			clockCall("p3"), scripted.Reply{Content: "Again."},
		)
		e.policy(t, "confirm_clock.rego", confirmClock)
		runScenario(t, node, bin, e, "permission")
		// The rejection reached the model as a denied tool result.
		reqs := e.model.Requests()
		if len(reqs) != 6 {
			t.Fatalf("model requests = %d, want 6", len(reqs))
		}
		last := reqs[1].Messages[len(reqs[1].Messages)-1]
		if last.Role != llm.RoleTool || !strings.Contains(last.Content, "the user rejected this call") {
			t.Errorf("after a rejection the model saw %+v, want a denied tool result", last)
		}
	})

	t.Run("CancelMidRun", func(t *testing.T) {
		story := strings.Repeat("Once upon a time there was a cat. ", 20) + "THE END"
		e := newEnv(t,
			scripted.Reply{Content: story, ChunkSize: 3, ChunkDelay: 40 * time.Millisecond},
			clockCall("c1"),
			scripted.Reply{Content: "Yes."},
		)
		e.policy(t, "confirm_clock.rego", confirmClock)
		runScenario(t, node, bin, e, "cancel")
		if n := len(e.model.Requests()); n != 3 {
			t.Errorf("model requests = %d, want 3 (a cancelled turn makes no further call)", n)
		}
	})

	t.Run("IterationLimit", func(t *testing.T) {
		e := newEnv(t, clockCall("l1"))
		e.extra = []string{"NAGENT_MAX_ITERATIONS=1"}
		runScenario(t, node, bin, e, "limit")
	})

	t.Run("LoadAfterRestart", func(t *testing.T) {
		e := newEnv(t, clockCall("call_clock"), scripted.Reply{Content: "It is noon in UTC."}, scripted.Reply{Content: "Still noon."})
		runScenario(t, node, bin, e, "load")
		reqs := e.model.Requests()
		if len(reqs) != 3 {
			t.Fatalf("model requests = %d, want 3", len(reqs))
		}
		// The second process continued the stored conversation.
		var history []string
		for _, m := range reqs[2].Messages {
			if m.Role != llm.RoleSystem {
				history = append(history, string(m.Role))
			}
		}
		if want := []string{"user", "assistant", "tool", "assistant", "user"}; !slices.Equal(history, want) {
			t.Errorf("the continued turn sent roles %v, want %v", history, want)
		}
	})

	t.Run("MCPServerFromEditor", func(t *testing.T) {
		e := newEnv(t,
			scripted.Reply{ToolCalls: []llm.ToolCall{{ID: "call_echo", Name: "mcp_everything_echo", Arguments: `{"message":"hello from the editor"}`}}},
			scripted.Reply{Content: "It echoed."},
			scripted.Reply{Content: "No echo here."},
		)
		runScenario(t, node, bin, e, "mcp")
		reqs := e.model.Requests()
		offered := func(r scripted.RecordedRequest) bool {
			return slices.ContainsFunc(r.Tools, func(s llm.ToolSpec) bool { return s.Name == "mcp_everything_echo" })
		}
		if len(reqs) != 3 {
			t.Fatalf("model requests = %d, want 3", len(reqs))
		}
		if !offered(reqs[0]) {
			t.Errorf("the editor's MCP tool mcp_everything_echo was not offered to the model")
		}
		if offered(reqs[2]) {
			t.Errorf("mcp_everything_echo is still offered after session/close released its server")
		}
	})
}
