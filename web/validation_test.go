package web_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nagent/nagent/web"
)

// validationTests send bad input to every endpoint and expect a precise error.
var validationTests = []struct {
	name, method, path string
	body               any
	status             int
	code, field        string
}{
	{"SessionsBadSource", "GET", "/api/sessions?source=NOT%20OK", nil, 400, "invalid", "source"},
	{"SessionsBadStatus", "GET", "/api/sessions?status=sleeping", nil, 400, "invalid", "status"},
	{"SessionsBadLimit", "GET", "/api/sessions?limit=0", nil, 400, "invalid", "limit"},
	{"SessionsLimitTooBig", "GET", "/api/sessions?limit=501", nil, 400, "invalid", "limit"},
	{"SessionsBadOffset", "GET", "/api/sessions?offset=-1", nil, 400, "invalid", "offset"},
	{"SessionsLongQuery", "GET", "/api/sessions?q=" + strings.Repeat("x", 201), nil, 400, "invalid", "q"},
	{"SessionBadID", "GET", "/api/sessions/bad%20id", nil, 400, "invalid", "id"},
	{"SessionMissing", "GET", "/api/sessions/nope", nil, 404, "not_found", ""},
	{"DeleteSessionMissing", "DELETE", "/api/sessions/nope", nil, 404, "not_found", ""},
	{"SessionsWrongMethod", "POST", "/api/sessions", map[string]any{}, 405, "method_not_allowed", ""},
	{"UnknownEndpoint", "GET", "/api/nothing", nil, 404, "not_found", ""},
	{"RunNoMessage", "POST", "/api/runs", map[string]any{}, 400, "invalid", "message"},
	{"RunBadSession", "POST", "/api/runs", map[string]any{"message": "x", "session_id": "a b"}, 400, "invalid", "session_id"},
	{"RunLongMessage", "POST", "/api/runs", map[string]any{"message": strings.Repeat("x", 100001)}, 400, "invalid", "message"},
	{"RunBadMemory", "POST", "/api/runs", map[string]any{"message": "x", "external_memory": []string{"Bad!"}}, 400, "invalid", "external_memory"},
	{"RunUnknownField", "POST", "/api/runs", map[string]any{"message": "x", "mesage": "y"}, 400, "invalid", "mesage"},
	{"RunWrongType", "POST", "/api/runs", map[string]any{"message": 7}, 400, "invalid", "message"},
	{"RunNotJSON", "POST", "/api/runs", "{nope", 400, "invalid", ""},
	{"RunEmptyBody", "POST", "/api/runs", "", 400, "invalid", ""},
	{"RunTrailingData", "POST", "/api/runs", `{"message":"x"} {}`, 400, "invalid", ""},
	{"RunTooLarge", "POST", "/api/runs", `{"message":"` + strings.Repeat("x", 2<<20) + `"}`, 413, "too_large", ""},
	{"StopUnknownRun", "POST", "/api/runs/run_x/stop", nil, 404, "not_found", ""},
	{"StopIdleSession", "POST", "/api/sessions/idle/stop", nil, 404, "not_found", ""},
	{"PolicyNoName", "GET", "/api/policies/file", nil, 400, "invalid", "name"},
	{"PolicyEscape", "GET", "/api/policies/file?name=../x.rego", nil, 400, "invalid", "name"},
	{"PolicyWrongSuffix", "PUT", "/api/policies/file", map[string]any{"name": "x.txt", "content": ""}, 400, "invalid", "name"},
	{"PolicyNoContent", "PUT", "/api/policies/file", map[string]any{"name": "x.rego"}, 400, "invalid", "content"},
	{"PolicyMissing", "GET", "/api/policies/file?name=missing.rego", nil, 404, "not_found", ""},
	{"PolicyBadSource", "GET", "/api/policies/file?name=tools.rego&source=other", nil, 400, "invalid", "source"},
	{"PolicyBuiltinMissing", "GET", "/api/policies/file?name=nope.rego&source=builtin", nil, 404, "not_found", ""},
	{"PolicyDeleteMissing", "DELETE", "/api/policies/file?name=missing.rego", nil, 404, "not_found", ""},
	{"EvalBadKind", "POST", "/api/policies/eval", map[string]any{"kind": "x", "input": map[string]any{}}, 400, "invalid", "kind"},
	{"EvalNoInput", "POST", "/api/policies/eval", map[string]any{"kind": "tools"}, 400, "invalid", "input"},
	{"EvalInputNotObject", "POST", "/api/policies/eval", map[string]any{"input": []int{1}}, 400, "invalid", "input"},
	{"DecisionsBadLimit", "GET", "/api/policies/decisions?limit=abc", nil, 400, "invalid", "limit"},
	{"DecisionsBadSession", "GET", "/api/policies/decisions?session_id=a%20b", nil, 400, "invalid", "session_id"},
	{"PluginUploadNotMultipart", "POST", "/api/plugins", map[string]any{}, 400, "invalid", ""},
	{"PluginBadName", "DELETE", "/api/plugins/Bad!", nil, 400, "invalid", "name"},
	{"PluginCallMissing", "POST", "/api/plugins/nope/call", map[string]any{"tool": "x"}, 404, "not_found", ""},
	{"PluginCallNoTool", "POST", "/api/plugins/nope/call", map[string]any{}, 400, "invalid", "tool"},
	{"SandboxHistoryBadLimit", "GET", "/api/sandboxes/history?limit=0", nil, 400, "invalid", "limit"},
	{"SandboxReleaseBadID", "POST", "/api/sandboxes/a%20b/release", nil, 400, "invalid", "session_id"},
	{"SandboxReleaseLongReason", "POST", "/api/sandboxes/s1/release", map[string]any{"reason": strings.Repeat("r", 501)}, 400, "invalid", "reason"},
	{"SandboxExecNoCode", "POST", "/api/sandboxes/s1/exec", map[string]any{}, 400, "invalid", "code"},
	{"SandboxExecBadTimeout", "POST", "/api/sandboxes/s1/exec", map[string]any{"code": "print(1)", "timeout_ms": -1}, 400, "invalid", "timeout_ms"},
	{"SandboxExecUnavailable", "POST", "/api/sandboxes/s1/exec", map[string]any{"code": "print(1)"}, 503, "unavailable", ""},
	{"MemoryBadProvider", "GET", "/api/memory/Bad!/memory.md", nil, 400, "invalid", "provider"},
	{"MemoryBadFile", "GET", "/api/memory/builtin/secrets.md", nil, 400, "invalid", "file"},
	{"MemoryObservationsReadOnly", "PUT", "/api/memory/builtin/observations.md", map[string]any{"content": ""}, 400, "invalid", "file"},
	{"MemoryNoContent", "PUT", "/api/memory/builtin/memory.md", map[string]any{}, 400, "invalid", "content"},
	{"MemoryTooLong", "PUT", "/api/memory/builtin/memory.md", map[string]any{"content": strings.Repeat("m", 32001)}, 400, "invalid", "content"},
	{"MemoryMissingProject", "GET", "/api/memory/nosuch/memory.md", nil, 404, "not_found", ""},
	{"SkillMissing", "GET", "/api/skills/no-such-skill", nil, 404, "not_found", ""},
	{"KBBadName", "POST", "/api/kb", map[string]any{"name": "Bad Name", "type": "local"}, 400, "invalid", "name"},
	{"KBNoType", "POST", "/api/kb", map[string]any{"name": "kb1"}, 400, "invalid", "type"},
	{"KBUnknownType", "POST", "/api/kb", map[string]any{"name": "kb1", "type": "nope"}, 400, "invalid", "type"},
	{"KBLocalNoDir", "POST", "/api/kb", map[string]any{"name": "kb1", "type": "local"}, 400, "invalid", "dir"},
	{"KBDifyNoSecret", "POST", "/api/kb", map[string]any{"name": "kb1", "type": "dify", "endpoint": "http://127.0.0.1:1"}, 400, "invalid", "secret"},
	{"KBSearchNoQuery", "POST", "/api/kb/search", map[string]any{}, 400, "invalid", "query"},
	{"KBSearchBadLimit", "POST", "/api/kb/search", map[string]any{"query": "x", "limit": 51}, 400, "invalid", "limit"},
	{"KBIngestMissing", "POST", "/api/kb/nope/ingest", nil, 404, "not_found", ""},
	{"KBDeleteMissing", "DELETE", "/api/kb/nope", nil, 404, "not_found", ""},
	{"MCPAddInvalid", "POST", "/api/mcp", map[string]any{"name": "Bad Name!", "command": "x"}, 400, "invalid", ""},
	{"MCPAddBadTimeout", "POST", "/api/mcp", map[string]any{"name": "s", "command": "x", "call_timeout_ms": -5}, 400, "invalid", "call_timeout_ms"},
	{"MCPProbeMissing", "POST", "/api/mcp/nope/probe", nil, 404, "not_found", ""},
	{"MCPHealthMissing", "GET", "/api/mcp/nope/health", nil, 404, "not_found", ""},
	{"MCPDeleteMissing", "DELETE", "/api/mcp/nope", nil, 404, "not_found", ""},
}

func TestInputValidation(t *testing.T) {
	e := newEnv(t, envOptions{keys: []string{"k"}})
	e.login("k")
	for _, tc := range validationTests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, tc.path, tc.body)
			if r.status != tc.status || r.errCode() != tc.code || r.errField() != tc.field {
				t.Fatalf("%s %s = %d code=%q field=%q, want %d %q %q; body %.300s",
					tc.method, tc.path, r.status, r.errCode(), r.errField(), tc.status, tc.code, tc.field, r.raw)
			}
			msg, _ := r.body["error"].(map[string]any)["message"].(string)
			if msg == "" || msg == "internal error" {
				t.Fatalf("error message %q says nothing", msg)
			}
		})
	}
}

func TestReadEndpoints(t *testing.T) {
	e := newEnv(t, envOptions{keys: []string{"k"}})
	e.login("k")
	for _, p := range []string{"/api/status", "/api/sessions", "/api/runs", "/api/policies", "/api/policies/decisions",
		"/api/policies/file?name=tools.rego&source=builtin", "/api/plugins", "/api/sandboxes", "/api/memory",
		"/api/memory/health", "/api/memory/builtin/memory.md", "/api/skills", "/api/kb", "/api/mcp"} {
		if r := e.do("GET", p, nil); r.status != 200 {
			t.Errorf("GET %s = %d %.300s", p, r.status, r.raw)
		}
	}
}

func TestPolicySave(t *testing.T) {
	e := newEnv(t, envOptions{keys: []string{"k"}})
	e.login("k")
	c := e.mustWS()
	c.subscribe(0, web.TopicPolicy)
	before := e.do("GET", "/api/policies", nil).body["revision"]
	target := filepath.Join(e.cfg.Home, "policies", "no_clock.rego")

	t.Run("CompileErrorSavesNothing", func(t *testing.T) {
		broken := "package nagent.tools\nimport rego.v1\n\ndeny contains \"x\" if {\n\tinput.tool.name ==\n}\n"
		r := e.do("PUT", "/api/policies/file", map[string]any{"name": "no_clock.rego", "content": broken})
		if r.status != 400 || r.errCode() != "invalid" {
			t.Fatalf("broken policy = %d %s", r.status, r.raw)
		}
		problems, _ := r.body["error"].(map[string]any)["problems"].([]any)
		if len(problems) == 0 {
			t.Fatalf("no problems in %s", r.raw)
		}
		p := problems[0].(map[string]any)
		if p["file"] != "no_clock.rego" || p["line"] == nil || p["line"].(float64) < 5 {
			t.Fatalf("problem = %v, want no_clock.rego at line 5 or 6", p)
		}
		if _, err := os.Stat(target); !os.IsNotExist(err) {
			t.Fatalf("the broken file was written (stat err %v)", err)
		}
		if got := e.do("GET", "/api/policies", nil).body["revision"]; got != before {
			t.Fatalf("revision changed to %v", got)
		}
	})
	t.Run("TypeErrorSavesNothing", func(t *testing.T) {
		bad := "package nagent.tools\nimport rego.v1\ndeny contains msg if {\n  msg := no_such_function(input.tool.name)\n}\n"
		r := e.do("PUT", "/api/policies/file", map[string]any{"name": "no_clock.rego", "content": bad})
		problems, _ := r.body["error"].(map[string]any)["problems"].([]any)
		if r.status != 400 || len(problems) == 0 || problems[0].(map[string]any)["line"].(float64) != 4 {
			t.Fatalf("undefined function = %d %s", r.status, r.raw)
		}
	})
	t.Run("GoodSaveReloads", func(t *testing.T) {
		good := "package nagent.tools\nimport rego.v1\ndeny contains \"the clock is off limits\" if input.tool.name == \"get_current_time\"\n"
		r := e.do("PUT", "/api/policies/file", map[string]any{"name": "no_clock.rego", "content": good})
		if r.status != 200 || r.body["saved"] != true || r.body["revision"] == before {
			t.Fatalf("good policy = %d %s", r.status, r.raw)
		}
		if b, err := os.ReadFile(target); err != nil || string(b) != good {
			t.Fatalf("file = %q, %v", b, err)
		}
		ev := c.until(10*time.Second, isType("policy_reloaded"))
		if last := ev[len(ev)-1].data; last["revision"] != r.body["revision"] || last["error"] != nil {
			t.Fatalf("policy_reloaded = %v", last)
		}
		got := e.do("GET", "/api/policies/file?name=no_clock.rego", nil)
		if got.body["content"] != good {
			t.Fatalf("GET file = %s", got.raw)
		}
		d := e.do("POST", "/api/policies/eval", map[string]any{"kind": "tools", "input": map[string]any{
			"phase": "call", "tool": map[string]any{"name": "get_current_time", "risk_level": "low", "source_type": "builtin"},
			"agent_context": "primary"}})
		dec := d.body["decision"].(map[string]any)
		if dec["allow"] != false || !strings.Contains(d.raw, "off limits") {
			t.Fatalf("eval = %s", d.raw)
		}
	})
	t.Run("Delete", func(t *testing.T) {
		r := e.do("DELETE", "/api/policies/file?name=no_clock.rego", nil)
		if r.status != 200 || r.body["revision"] != before {
			t.Fatalf("delete = %d %s (revision before %v)", r.status, r.raw, before)
		}
	})
}

func TestMemoryEdit(t *testing.T) {
	e := newEnv(t, envOptions{keys: []string{"k"}})
	e.login("k")
	if r := e.do("PUT", "/api/memory/builtin/memory.md", map[string]any{"content": "The office is in Lyon.\n"}); r.status != 200 {
		t.Fatalf("PUT = %d %s", r.status, r.raw)
	}
	if r := e.do("GET", "/api/memory/builtin/memory.md", nil); r.body["content"] != "The office is in Lyon.\n" {
		t.Fatalf("GET = %s", r.raw)
	}
	if r := e.do("PUT", "/api/memory/website/user.md", map[string]any{"content": "Prefers short answers.\n"}); r.status != 200 {
		t.Fatalf("PUT project = %d %s", r.status, r.raw)
	}
	r := e.do("GET", "/api/memory", nil)
	if ps := r.body["providers"].([]any); len(ps) != 2 || ps[1].(map[string]any)["name"] != "website" {
		t.Fatalf("GET /api/memory = %s", r.raw)
	}
}
