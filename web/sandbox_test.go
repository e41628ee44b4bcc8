package web_test

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/llm/scripted"
	"github.com/nagent/nagent/web"
)

func TestSandboxes(t *testing.T) {
	backend := "local"
	if _, err := exec.LookPath("bwrap"); err != nil {
		backend = "unisolated" // still a real subprocess; CI installs bubblewrap
	}
	e := newEnv(t, envOptions{keys: []string{"k"}, sandbox: backend})
	if e.app.Sandbox == nil {
		t.Fatalf("no sandbox manager with backend %s", backend)
	}
	e.login("k")
	c := e.mustWS()
	c.subscribe(0, web.TopicSandbox)

	r := e.do("POST", "/api/sandboxes/sess-box/exec", map[string]any{"code": "print(6*7)"})
	if r.status != 200 || r.body["stdout"] != "42\n" || r.body["exit_reason"] != "ok" {
		t.Fatalf("exec = %d %s", r.status, r.raw)
	}
	c.until(30*time.Second, func(ev event) bool { return ev.data["to"] == "active" })
	list := e.do("GET", "/api/sandboxes", nil)
	boxes, _ := list.body["sandboxes"].([]any)
	if list.body["available"] != true || len(boxes) != 1 || boxes[0].(map[string]any)["session_id"] != "sess-box" {
		t.Fatalf("GET /api/sandboxes = %s", list.raw)
	}
	h := e.do("GET", "/api/sandboxes/history?session_id=sess-box", nil)
	if ex, _ := h.body["executions"].([]any); len(ex) != 1 {
		t.Fatalf("history = %s", h.raw)
	}
	if r := e.do("POST", "/api/sandboxes/sess-box/release", map[string]any{"force": true, "reason": "test"}); r.status != 200 {
		t.Fatalf("release = %d %s", r.status, r.raw)
	}
	c.until(30*time.Second, func(ev event) bool { return ev.data["to"] == "released" })
	if r := e.do("POST", "/api/sandboxes/sess-box/release", nil); r.status != 404 {
		t.Fatalf("second release = %d %s", r.status, r.raw)
	}
	if boxes := e.do("GET", "/api/sandboxes", nil).body["sandboxes"].([]any); len(boxes) != 0 {
		t.Fatalf("sandboxes after release = %v", boxes)
	}
	if r := e.do("POST", "/api/sandboxes/sess-box/exec", map[string]any{"code": "import sys; sys.exit(3)"}); r.body["exit_code"].(float64) != 3 {
		t.Fatalf("failing exec = %s", r.raw)
	}
	if !strings.Contains(e.do("GET", "/api/status", nil).raw, `"sandbox_available":true`) {
		t.Fatal("status does not show the sandbox")
	}

	t.Run("DeleteSessionReleasesSandbox", func(t *testing.T) {
		e.model.Enqueue(scripted.Reply{Content: "hello"})
		startRun(t, e, c, map[string]any{"session_id": "sess-del", "message": "hi"})
		c.until(30*time.Second, func(ev event) bool { return ev.typ() == "run_finished" })
		if r := e.do("POST", "/api/sandboxes/sess-del/exec", map[string]any{"code": "print(1)"}); r.status != 200 {
			t.Fatalf("exec = %d %s", r.status, r.raw)
		}
		r := e.do("DELETE", "/api/sessions/sess-del", nil)
		if r.status != 200 || r.body["sandbox_released"] != true {
			t.Fatalf("DELETE = %d %s", r.status, r.raw)
		}
		for _, b := range e.do("GET", "/api/sandboxes", nil).body["sandboxes"].([]any) {
			if b.(map[string]any)["session_id"] == "sess-del" {
				t.Fatal("the deleted session's sandbox is still held")
			}
		}
	})
}
