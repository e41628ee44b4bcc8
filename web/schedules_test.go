package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/llm/scripted"
	"github.com/nagent/nagent/runtime/scheduler"
	"github.com/nagent/nagent/web"
)

// addSchedule stores a schedule through the App's scheduler, as
// `nagent schedule add` does.
func addSchedule(t *testing.T, e *env, name, target string) string {
	t.Helper()
	sc, err := e.app.Scheduler().Add(context.Background(), scheduler.NewSchedule{
		Name: name, Kind: scheduler.KindEvery, Spec: "24h", Prompt: "Summarise the day.", Target: target})
	if err != nil {
		t.Fatal(err)
	}
	return sc.ID
}

var scheduleValidationTests = []struct {
	name, method, path string
	body               any
	status             int
	code, field        string
}{
	{"SchedulesWrongMethod", "POST", "/api/schedules", map[string]any{}, 405, "method_not_allowed", ""},
	{"ScheduleMissing", "GET", "/api/schedules/nope", nil, 404, "not_found", ""},
	{"ScheduleBadKey", "GET", "/api/schedules/a%20b", nil, 400, "invalid", "id"},
	{"ScheduleLongKey", "GET", "/api/schedules/" + strings.Repeat("k", 201), nil, 400, "invalid", "id"},
	{"ScheduleBadLimit", "GET", "/api/schedules/nope?limit=0", nil, 400, "invalid", "limit"},
	{"ScheduleLimitTooBig", "GET", "/api/schedules/nope?limit=201", nil, 400, "invalid", "limit"},
	{"RunScheduleMissing", "POST", "/api/schedules/nope/run", nil, 404, "not_found", ""},
	{"RunScheduleBadKey", "POST", "/api/schedules/a%20b/run", nil, 400, "invalid", "id"},
	{"RunScheduleBadWait", "POST", "/api/schedules/nope/run?wait=maybe", nil, 400, "invalid", "wait"},
	{"RunScheduleWrongMethod", "GET", "/api/schedules/nope/run", nil, 405, "method_not_allowed", ""},
	{"PauseScheduleMissing", "POST", "/api/schedules/nope/pause", nil, 404, "not_found", ""},
	{"ResumeScheduleMissing", "POST", "/api/schedules/nope/resume", nil, 404, "not_found", ""},
	{"ResumeScheduleBadKey", "POST", "/api/schedules/a%09b/resume", nil, 400, "invalid", "id"},
	{"InboxBadUnread", "GET", "/api/inbox?unread=yes", nil, 400, "invalid", "unread"},
	{"InboxBadLimit", "GET", "/api/inbox?limit=abc", nil, 400, "invalid", "limit"},
	{"InboxLimitTooBig", "GET", "/api/inbox?limit=501", nil, 400, "invalid", "limit"},
	{"InboxWrongMethod", "DELETE", "/api/inbox", nil, 405, "method_not_allowed", ""},
	{"InboxReadMissing", "POST", "/api/inbox/inb_nope/read", nil, 404, "not_found", ""},
	{"InboxReadBadID", "POST", "/api/inbox/a%20b/read", nil, 400, "invalid", "id"},
	{"GatewayWrongMethod", "POST", "/api/gateway", map[string]any{}, 405, "method_not_allowed", ""},
}

func TestScheduleInputValidation(t *testing.T) {
	e := newEnv(t, envOptions{keys: []string{"k"}})
	e.login("k")
	for _, tc := range scheduleValidationTests {
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

func TestScheduleAuth(t *testing.T) {
	e := newEnv(t, envOptions{keys: []string{"k"}})
	id := addSchedule(t, e, "auth-check", "inbox")
	reads := []string{"/api/schedules", "/api/schedules/" + id, "/api/inbox", "/api/gateway"}
	writes := []string{"/api/schedules/" + id + "/run", "/api/schedules/" + id + "/pause", "/api/schedules/" + id + "/resume", "/api/inbox/inb_x/read"}
	t.Run("NoCookie", func(t *testing.T) {
		for _, p := range append(append([]string{}, reads...), writes...) {
			m := "GET"
			if strings.HasSuffix(p, "/run") || strings.HasSuffix(p, "/pause") || strings.HasSuffix(p, "/resume") || strings.HasSuffix(p, "/read") {
				m = "POST"
			}
			if r := e.do(m, p, nil); r.status != 401 || r.errCode() != "unauthorized" {
				t.Errorf("%s %s without login = %d %s", m, p, r.status, r.raw)
			}
		}
	})
	t.Run("WrongKey", func(t *testing.T) {
		for _, p := range reads {
			if r := e.do("GET", p, nil, "Authorization", "Bearer nope"); r.status != 401 {
				t.Errorf("GET %s with a wrong key = %d %s", p, r.status, r.raw)
			}
		}
	})
	e.login("k")
	t.Run("BadCSRFToken", func(t *testing.T) {
		for _, p := range writes {
			if r := e.do("POST", p, nil, "X-CSRF-Token", "forged"); r.status != 403 || r.errCode() != "forbidden" {
				t.Errorf("POST %s with a forged CSRF token = %d %s", p, r.status, r.raw)
			}
			if r := e.do("POST", p, nil, "X-CSRF-Token", ""); r.status != 403 {
				t.Errorf("POST %s without a CSRF token = %d %s", p, r.status, r.raw)
			}
		}
		// Nothing ran and nothing was paused.
		if r := e.do("GET", "/api/schedules/"+id, nil); len(r.body["runs"].([]any)) != 0 ||
			r.body["schedule"].(map[string]any)["enabled"] != true {
			t.Fatalf("a refused request changed the schedule: %s", r.raw)
		}
	})
	t.Run("LoggedIn", func(t *testing.T) {
		for _, p := range reads {
			if r := e.do("GET", p, nil); r.status != 200 {
				t.Errorf("GET %s = %d %s", p, r.status, r.raw)
			}
		}
	})
}

func TestEmptyBearerOnKeylessServer(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, v := range []string{"Bearer ", "Bearer", "Bearer   "} {
		if r := e.do("GET", "/api/schedules", nil, "Authorization", v); r.status != 200 {
			t.Errorf("GET with Authorization %q on a keyless server = %d %s", v, r.status, r.raw)
		}
	}
	// It is no credential: a write still needs the login's CSRF token.
	if r := e.do("POST", "/api/inbox/inb_x/read", nil, "Authorization", "Bearer "); r.status != 403 {
		t.Errorf("POST with an empty bearer = %d %s", r.status, r.raw)
	}
	k := newEnv(t, envOptions{keys: []string{"k"}})
	if r := k.do("GET", "/api/schedules", nil, "Authorization", "Bearer "); r.status != 401 {
		t.Errorf("an empty bearer with keys configured = %d %s", r.status, r.raw)
	}
}

func TestScheduleRunDeliversToInbox(t *testing.T) {
	e := newEnv(t, envOptions{keys: []string{"k"}, web: web.Options{InboxPoll: time.Hour},
		replies: []scripted.Reply{{Content: "Daily digest: all green."}}})
	e.login("k")
	id := addSchedule(t, e, "digest", "inbox")
	hook := addSchedule(t, e, "hooked", "webhook:https://hooks.example.com/services/T000/SECRET?token=abc")
	c := e.mustWS()
	c.subscribe(0, web.TopicInbox)

	list := e.do("GET", "/api/schedules", nil)
	if list.status != 200 || strings.Contains(list.raw, "SECRET") || strings.Contains(list.raw, "token=abc") {
		t.Fatalf("GET /api/schedules = %d leaks the webhook URL or fails: %s", list.status, list.raw)
	}
	if !strings.Contains(list.raw, "https://hooks.example.com/…") {
		t.Fatalf("the webhook target is not shown as scheme and host: %s", list.raw)
	}
	if r := e.do("GET", "/api/schedules/"+hook, nil); strings.Contains(r.raw, "SECRET") {
		t.Fatalf("GET /api/schedules/{id} leaks the webhook URL: %s", r.raw)
	}

	r := e.do("POST", "/api/schedules/"+id+"/run?wait=true", nil)
	run, _ := r.body["run"].(map[string]any)
	if r.status != 200 || run["status"] != "completed" || run["delivery_status"] != "delivered" || run["trigger"] != "manual" {
		t.Fatalf("run = %d %s", r.status, r.raw)
	}
	sid, _ := run["session_id"].(string)

	ev := c.until(30*time.Second, isType("inbox.message"))
	if m := ev[len(ev)-1].data["message"].(map[string]any); m["session_id"] != sid {
		t.Fatalf("inbox event = %v, want session %s", m, sid)
	}
	in := e.do("GET", "/api/inbox", nil)
	msgs, _ := in.body["messages"].([]any)
	if in.status != 200 || len(msgs) != 1 || in.body["unread"] != float64(1) {
		t.Fatalf("GET /api/inbox = %d %s", in.status, in.raw)
	}
	m := msgs[0].(map[string]any)
	if m["schedule_name"] != "digest" || m["session_id"] != sid || !strings.Contains(m["content"].(string), "all green") || m["read_at"] != nil {
		t.Fatalf("inbox message = %v", m)
	}
	if s := e.do("GET", "/api/sessions/"+sid, nil); s.status != 200 {
		t.Fatalf("the run's session %s = %d %s", sid, s.status, s.raw)
	}
	det := e.do("GET", "/api/schedules/digest", nil)
	runs, _ := det.body["runs"].([]any)
	if len(runs) != 1 || runs[0].(map[string]any)["session_id"] != sid {
		t.Fatalf("GET /api/schedules/digest runs = %s", det.raw)
	}

	mid := m["id"].(string)
	if rd := e.do("POST", "/api/inbox/"+mid+"/read", nil); rd.status != 200 || rd.body["unread"] != float64(0) {
		t.Fatalf("mark read = %d %s", rd.status, rd.raw)
	}
	c.until(10*time.Second, isType("inbox.read"))
	if un := e.do("GET", "/api/inbox?unread=true", nil); len(un.body["messages"].([]any)) != 0 {
		t.Fatalf("unread after mark read = %s", un.raw)
	}
	if all := e.do("GET", "/api/inbox", nil); all.body["messages"].([]any)[0].(map[string]any)["read_at"] == nil {
		t.Fatalf("read_at not set: %s", all.raw)
	}
}

func TestSchedulePauseResumeAndAsyncRun(t *testing.T) {
	e := newEnv(t, envOptions{keys: []string{"k"}, replies: []scripted.Reply{{Content: "ok"}}})
	e.login("k")
	id := addSchedule(t, e, "pausable", "none")
	p := e.do("POST", "/api/schedules/"+id+"/pause", nil)
	if sc := p.body["schedule"].(map[string]any); p.status != 200 || sc["enabled"] != false || sc["next_run_at"] != nil {
		t.Fatalf("pause = %d %s", p.status, p.raw)
	}
	rs := e.do("POST", "/api/schedules/pausable/resume", nil)
	if sc := rs.body["schedule"].(map[string]any); rs.status != 200 || sc["enabled"] != true || sc["next_run_at"] == nil {
		t.Fatalf("resume = %d %s", rs.status, rs.raw)
	}
	r := e.do("POST", "/api/schedules/"+id+"/run", nil)
	if run := r.body["run"].(map[string]any); r.status != http.StatusAccepted || run["status"] != "running" {
		t.Fatalf("async run = %d %s", r.status, r.raw)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		d := e.do("GET", "/api/schedules/"+id, nil)
		if runs := d.body["runs"].([]any); len(runs) == 1 && runs[0].(map[string]any)["status"] == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not complete: %s", d.raw)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// fakeAdapter is a chat platform connection that comes up and stays up.
type fakeAdapter struct{ name string }

func (f fakeAdapter) Name() string { return f.name }
func (f fakeAdapter) Run(ctx context.Context, up func()) error {
	up()
	<-ctx.Done()
	return nil
}

func TestGatewayEndpoint(t *testing.T) {
	e := newEnv(t, envOptions{keys: []string{"k"}})
	e.login("k")
	r := e.do("GET", "/api/gateway", nil)
	if r.status != 200 || r.body["ready"] != true || r.body["feishu_configured"] != false {
		t.Fatalf("GET /api/gateway = %d %s", r.status, r.raw)
	}
	if a, ok := r.body["adapters"].([]any); !ok || len(a) != 0 {
		t.Fatalf("adapters = %v", r.body["adapters"])
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e.app.Gateway.Start(ctx, fakeAdapter{name: "fakechat"})
	deadline := time.Now().Add(30 * time.Second)
	for {
		r = e.do("GET", "/api/gateway", nil)
		a, _ := r.body["adapters"].([]any)
		if len(a) == 1 && a[0].(map[string]any)["state"] == "up" && r.body["ready"] == true {
			if a[0].(map[string]any)["name"] != "fakechat" || a[0].(map[string]any)["since"] == nil {
				t.Fatalf("adapter = %v", a[0])
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the adapter never showed up: %s", r.raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
