package web_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/llm/scripted"
	"github.com/nagent/nagent/web"
)

// clockTurn is a turn that calls get_current_time, then answers.
func clockTurn(answer string) []scripted.Reply {
	return []scripted.Reply{
		{ToolCalls: []llm.ToolCall{{ID: "call_clock", Name: "get_current_time", Arguments: `{}`}}},
		{Content: answer},
	}
}

// startRun starts a dashboard run and subscribes c to its session from the
// event id the answer gives, so no event is missed.
func startRun(t *testing.T, e *env, c *wsClient, body map[string]any) (sessionID string) {
	t.Helper()
	r := e.do("POST", "/api/runs", body)
	if r.status != 202 {
		t.Fatalf("POST /api/runs = %d %s", r.status, r.raw)
	}
	sessionID = r.body["session_id"].(string)
	last := int64(r.body["last_event_id"].(float64))
	c.subscribe(last, web.SessionTopic(sessionID))
	return sessionID
}

func TestDashboardRunStreamsEvents(t *testing.T) {
	e := newEnv(t, envOptions{keys: []string{"k"}, replies: clockTurn("It is noon in UTC, all right.")})
	e.login("k")
	c := e.mustWS()
	c.subscribe(0, web.TopicSessions)
	sid := startRun(t, e, c, map[string]any{"message": "What time is it?"})

	events := c.until(60*time.Second, func(ev event) bool { return ev.topic == web.SessionTopic(sid) && ev.typ() == "run_finished" })
	seen := map[string]int{}
	var lastID int64
	var text strings.Builder
	for _, ev := range events {
		if ev.id <= lastID {
			t.Errorf("event ids not increasing: %d after %d", ev.id, lastID)
		}
		lastID = ev.id
		if ev.topic != web.SessionTopic(sid) {
			continue
		}
		seen[ev.typ()]++
		if ev.data["source"] != web.SourceDashboard || ev.data["run_id"] == "" {
			t.Errorf("event lacks source/run_id: %v", ev.data)
		}
		switch ev.typ() {
		case "delta":
			text.WriteString(ev.data["content"].(string))
		case "tool_started":
			if ev.tool()["name"] != "get_current_time" {
				t.Errorf("tool_started = %v", ev.tool())
			}
		case "tool_finished":
			if ev.tool()["status"] != "success" || !strings.Contains(ev.tool()["content"].(string), "now") {
				t.Errorf("tool_finished = %v", ev.tool())
			}
		case "run_finished":
			res := ev.data["result"].(map[string]any)
			if res["status"] != "completed" {
				t.Errorf("run_finished result = %v", res)
			}
		}
	}
	for _, typ := range []string{"state", "delta", "tool_started", "tool_finished", "memory_updated", "run_finished"} {
		if seen[typ] == 0 {
			t.Errorf("no %s event; saw %v", typ, seen)
		}
	}
	if text.String() != "It is noon in UTC, all right." {
		t.Errorf("streamed text = %q", text.String())
	}

	// The session is stored with source dashboard and shows in the list.
	r := e.do("GET", "/api/sessions?source=dashboard", nil)
	list := r.body["sessions"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["id"] != sid || list[0].(map[string]any)["status"] != "completed" {
		t.Fatalf("GET /api/sessions?source=dashboard = %s", r.raw)
	}
	d := e.do("GET", "/api/sessions/"+sid, nil)
	if d.status != 200 || len(d.body["messages"].([]any)) != 4 || len(d.body["tool_calls"].([]any)) != 1 {
		t.Fatalf("GET /api/sessions/%s = %s", sid, d.raw)
	}
	if r := e.do("GET", "/api/sessions?q="+sid[5:12], nil); len(r.body["sessions"].([]any)) != 1 {
		t.Fatalf("search by id fragment = %s", r.raw)
	}
	if r := e.do("GET", "/api/sessions?status=failed", nil); len(r.body["sessions"].([]any)) != 0 {
		t.Fatalf("status filter = %s", r.raw)
	}
	// Delete it.
	if r := e.do("DELETE", "/api/sessions/"+sid, nil); r.status != 200 || r.body["deleted"] != true {
		t.Fatalf("DELETE = %d %s", r.status, r.raw)
	}
	if r := e.do("GET", "/api/sessions/"+sid, nil); r.status != 404 || r.errCode() != "not_found" {
		t.Fatalf("GET deleted = %d %s", r.status, r.raw)
	}
	c.until(10*time.Second, isType("session_deleted"))
}

func TestStopRun(t *testing.T) {
	e := newEnv(t, envOptions{keys: []string{"k"}, replies: []scripted.Reply{{Content: "slow answer", Delay: time.Minute}}})
	e.login("k")
	c := e.mustWS()
	sid := startRun(t, e, c, map[string]any{"message": "take your time"})
	c.until(30*time.Second, func(ev event) bool { return ev.typ() == "state" && ev.data["state"] == "call_llm" })
	runs := e.do("GET", "/api/runs", nil).body["runs"].([]any)
	if len(runs) != 1 {
		t.Fatalf("GET /api/runs = %v", runs)
	}
	if r := e.do("DELETE", "/api/sessions/"+sid, nil); r.status != 409 {
		t.Fatalf("DELETE of a running session = %d %s", r.status, r.raw)
	}
	if r := e.do("POST", "/api/sessions/"+sid+"/stop", nil); r.status != 202 {
		t.Fatalf("stop = %d %s", r.status, r.raw)
	}
	evs := c.until(30*time.Second, isType("run_finished"))
	if res := evs[len(evs)-1].data["result"].(map[string]any); res["status"] != "cancelled" {
		t.Fatalf("stopped run finished %v", res)
	}
	if r := e.do("POST", "/api/runs/run_nope/stop", nil); r.status != 404 {
		t.Fatalf("stop of an unknown run = %d", r.status)
	}
}

// confirmPolicy makes get_current_time ask for confirmation.
const confirmPolicy = `package nagent.tools
import rego.v1
confirm contains "the clock needs an admin's nod" if input.tool.name == "get_current_time"
`

func TestConfirmOverWebsocket(t *testing.T) {
	cases := []struct {
		name       string
		answer     *bool
		wantStatus string
		wantBy     string
	}{
		{"Allow", ptr(true), "success", "user"},
		{"Deny", ptr(false), "denied", "user"},
		{"Timeout", nil, "denied", "timeout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{keys: []string{"k"}, policy: confirmPolicy, replies: clockTurn("done"),
				web: web.Options{ConfirmTimeout: 1500 * time.Millisecond}})
			e.login("k")
			c := e.mustWS()
			startRun(t, e, c, map[string]any{"message": "time please"})
			evs := c.until(60*time.Second, isType("confirm_request"))
			req := evs[len(evs)-1].data
			if req["tool"].(map[string]any)["name"] != "get_current_time" || !strings.Contains(req["reasons"].([]any)[0].(string), "nod") {
				t.Fatalf("confirm_request = %v", req)
			}
			if tc.answer != nil {
				c.send(map[string]any{"type": "confirm_answer", "confirmation_id": req["confirmation_id"], "approved": *tc.answer})
			}
			evs = c.until(60*time.Second, isType("run_finished"))
			var resolved, finished map[string]any
			for _, ev := range evs {
				switch ev.typ() {
				case "confirm_resolved":
					resolved = ev.data
				case "tool_finished":
					finished = ev.tool()
				}
			}
			if resolved == nil || resolved["by"] != tc.wantBy || resolved["approved"] != (tc.answer != nil && *tc.answer) {
				t.Fatalf("confirm_resolved = %v", resolved)
			}
			if finished == nil || finished["status"] != tc.wantStatus {
				t.Fatalf("tool_finished = %v, want status %s", finished, tc.wantStatus)
			}
			// A late answer is refused.
			c.send(map[string]any{"type": "confirm_answer", "confirmation_id": req["confirmation_id"], "approved": true})
			if m := c.next(10 * time.Second); m["type"] != "error" || m["code"] != "not_found" {
				t.Fatalf("late answer got %v", m)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestConfirmOnlyForDashboardRuns(t *testing.T) {
	// A run from another channel (no confirmer) is denied at once, and the
	// dashboard still sees its events through the observer.
	e := newEnv(t, envOptions{keys: []string{"k"}, policy: confirmPolicy, replies: clockTurn("done")})
	e.login("k")
	c := e.mustWS()
	c.subscribe(0, web.SessionTopic("api-session"), web.TopicSessions)
	body := `{"model":"scripted-model","messages":[{"role":"user","content":"time?"}]}`
	r := e.do("POST", "/v1/chat/completions", body, "Authorization", "Bearer k", "X-Session-Id", "api-session")
	if r.status != 200 {
		t.Fatalf("chat completion = %d %s", r.status, r.raw)
	}
	evs := c.until(30*time.Second, func(ev event) bool { return ev.topic == web.SessionTopic("api-session") && ev.typ() == "run_finished" })
	var denied bool
	for _, ev := range evs {
		if ev.typ() == "confirm_request" {
			t.Fatal("an API run asked the dashboard")
		}
		if ev.typ() == "tool_finished" && ev.tool()["status"] == "denied" {
			denied = true
		}
		if ev.topic == web.SessionTopic("api-session") && ev.data["source"] != "api" {
			t.Errorf("source = %v", ev.data["source"])
		}
	}
	if !denied {
		t.Fatal("no denied tool_finished for the API run")
	}
}

func TestResumeFromLastEventID(t *testing.T) {
	e := newEnv(t, envOptions{keys: []string{"k"}, replies: append(clockTurn("first answer"), clockTurn("second answer")...)})
	e.login("k")
	c := e.mustWS()
	sid := startRun(t, e, c, map[string]any{"message": "one"})
	first := c.until(60*time.Second, isType("run_finished"))
	lastSeen := first[len(first)/2].id // the tab processed only half, then lost its connection
	c.conn.Close()

	// A second turn runs while the tab is away.
	if r := e.do("POST", "/api/runs", map[string]any{"session_id": sid, "message": "two"}); r.status != 202 {
		t.Fatalf("second run = %d %s", r.status, r.raw)
	}
	waitFor(t, func() bool { return len(e.do("GET", "/api/runs", nil).body["runs"].([]any)) == 0 })

	c2 := e.mustWS()
	c2.subscribe(lastSeen, web.SessionTopic(sid))
	replayed := c2.until(10*time.Second, func(ev event) bool {
		res, _ := ev.data["result"].(map[string]any)
		return ev.typ() == "run_finished" && res["content"] == "second answer"
	})
	want := 0
	for _, ev := range first {
		if ev.id > lastSeen {
			want++
		}
	}
	if replayed[0].id <= lastSeen {
		t.Fatalf("replay began at %d, not after %d", replayed[0].id, lastSeen)
	}
	for i := 1; i < len(replayed); i++ {
		if replayed[i].id <= replayed[i-1].id {
			t.Fatalf("replay out of order at %d", i)
		}
	}
	if got := replayed[:want]; got[want-1].id != first[len(first)-1].id {
		t.Fatalf("replay of the first turn ended at %d, want %d", got[want-1].id, first[len(first)-1].id)
	}

	t.Run("GapAfterRestart", func(t *testing.T) {
		c3 := e.mustWS()
		c3.send(map[string]any{"type": "subscribe", "topics": []string{web.SessionTopic(sid)}, "last_event_id": 12345})
		c3.next(10 * time.Second) // subscribed
		if m := c3.next(10 * time.Second); m["type"] != "gap" {
			t.Fatalf("an id from before this server started got %v, want gap", m)
		}
	})
}

// waitFor polls cond until it holds or 30 s pass.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A client that pings while a run streams gets its pongs, and every data
// frame still parses: control replies never interleave with event frames.
func TestClientPingsDuringAStream(t *testing.T) {
	e := newEnv(t, envOptions{keys: []string{"k"}, replies: clockTurn(strings.Repeat("tick tock ", 200))})
	e.login("k")
	c := e.mustWS()
	var pongs atomic.Int64
	var draining atomic.Bool
	c.conn.SetPongHandler(func(string) error {
		pongs.Add(1)
		if draining.Load() {
			c.conn.SetReadDeadline(time.Now())
		}
		return nil
	})
	c.subscribe(0, web.TopicSessions)
	stop := make(chan struct{})
	pinged := make(chan struct{})
	go func() {
		defer close(pinged)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			if c.conn.WriteControl(websocket.PingMessage, []byte(fmt.Sprint(i)), time.Now().Add(time.Second)) != nil {
				return
			}
		}
	}()
	sid := startRun(t, e, c, map[string]any{"message": "What time is it?"})
	c.until(60*time.Second, func(ev event) bool { return ev.topic == web.SessionTopic(sid) && ev.typ() == "run_finished" })
	close(stop)
	<-pinged
	// A pong is seen while reading; the run may end before the first one
	// arrives, so read on until it does (the handler then ends the read).
	if pongs.Load() == 0 {
		draining.Store(true)
		c.conn.WriteControl(websocket.PingMessage, []byte("last"), time.Now().Add(time.Second))
		deadline := time.Now().Add(10 * time.Second)
		for pongs.Load() == 0 {
			if _, err := c.read(time.Until(deadline)); err != nil {
				break
			}
		}
	}
	if pongs.Load() == 0 {
		t.Error("no pong came back")
	}
}
