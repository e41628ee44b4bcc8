package web_test

import (
	"bytes"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nagent/nagent/internal/testbin"
	"github.com/nagent/nagent/runtime/llm/scripted"
	"github.com/nagent/nagent/web"
)

// serveBinary starts the real `nagent serve` on addr with keys.
func serveBinary(t *testing.T, bin, home, addr string, model *scripted.Server) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--addr", addr)
	cmd.Env = append(os.Environ(), "NAGENT_HOME="+home, "NAGENT_LLM_BASE_URL="+model.URL(),
		"NAGENT_LLM_MODEL=scripted-model", "NAGENT_API_KEYS=e2e-key", "OPENAI_API_KEY=", "OPENAI_BASE_URL=")
	var logs bytes.Buffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitFor(t, func() bool {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return cmd
}

// TestServeBinary drives the real binary: the dashboard page, a login, a
// dashboard turn over the websocket, and a resume across a restart.
func TestServeBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the nagent binary")
	}
	bin := testbin.Nagent(t)
	model := scripted.Start(clockTurn("the time, from the binary")...)
	t.Cleanup(model.Close)
	home := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := serveBinary(t, bin, home, addr, model)

	jar, _ := cookiejar.New(nil)
	e := &env{tb: t, srv: &httptest.Server{URL: "http://" + addr}, client: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
	if r := e.do("GET", "/", nil); r.status != 200 || !strings.Contains(strings.ToLower(r.raw), "<html") {
		t.Fatalf("GET / = %d", r.status)
	}
	if r := e.do("GET", "/api/sessions", nil); r.status != 401 {
		t.Fatalf("GET /api/sessions before login = %d", r.status)
	}
	e.login("e2e-key")
	c := e.mustWS()
	sid := startRun(t, e, c, map[string]any{"message": "time?"})
	evs := c.until(60*time.Second, isType("run_finished"))
	var sawTool bool
	for _, ev := range evs {
		sawTool = sawTool || (ev.typ() == "tool_finished" && ev.tool()["status"] == "success")
	}
	if !sawTool {
		t.Fatal("no successful tool_finished event")
	}
	last := evs[len(evs)-1].id

	// Restart: the login survives (it is in nagent.db) and a resume with an
	// id from the old process is told about the gap.
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve exit: %v", err)
	}
	serveBinary(t, bin, home, addr, model)
	c2 := e.mustWS()
	c2.send(map[string]any{"type": "subscribe", "topics": []string{web.SessionTopic(sid)}, "last_event_id": last})
	if m := c2.next(10 * time.Second); m["type"] != "subscribed" {
		t.Fatalf("after restart subscribe answered %v", m)
	}
	if m := c2.next(10 * time.Second); m["type"] != "gap" {
		t.Fatalf("after restart a resume got %v, want gap", m)
	}
	if r := e.do("GET", "/api/sessions/"+sid, nil); r.status != 200 || r.body["task_state"].(map[string]any)["status"] != "completed" {
		t.Fatalf("session after restart = %d %.200s", r.status, r.raw)
	}
}
