package main_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/llm/scripted"
	"github.com/nagent/nagent/runtime/scheduler"
	"github.com/nagent/nagent/store"
)

// webhookReceiver records the deliveries POSTed to it.
type webhookReceiver struct {
	*httptest.Server
	mu  sync.Mutex
	got []scheduler.Payload
}

func newWebhookReceiver(tb testing.TB) *webhookReceiver {
	r := &webhookReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var p scheduler.Payload
		body, _ := io.ReadAll(req.Body)
		if err := json.Unmarshal(body, &p); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.got = append(r.got, p)
		r.mu.Unlock()
	}))
	tb.Cleanup(r.Close)
	return r
}

func (r *webhookReceiver) payloads() []scheduler.Payload {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]scheduler.Payload(nil), r.got...)
}

type scheduleDetail struct {
	Schedule store.Schedule      `json:"schedule"`
	Runs     []store.ScheduleRun `json:"runs"`
}

func (n *nagent) scheduleJSON(tb testing.TB, v any, args ...string) {
	tb.Helper()
	out, stderr, code := n.run(tb, "", append([]string{"schedule"}, append(args, "--json")...)...)
	if code != 0 {
		tb.Fatalf("nagent schedule %v: exit %d: %s", args, code, stderr)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		tb.Fatalf("nagent schedule %v --json: %v\n%s", args, err, out)
	}
}

func (n *nagent) show(tb testing.TB, name string) scheduleDetail {
	tb.Helper()
	var d scheduleDetail
	n.scheduleJSON(tb, &d, "show", name)
	return d
}

// userPrompts counts the model requests whose last user message is prompt.
func userPrompts(reqs []scripted.RecordedRequest, prompt string) int {
	n := 0
	for _, r := range reqs {
		if len(r.Messages) > 0 && r.Messages[len(r.Messages)-1].Content == prompt {
			n++
		}
	}
	return n
}

func TestScheduleCLIRoundTrip(t *testing.T) {
	n := newNagent(t, scripted.Reply{Content: "the morning report"})
	hook := newWebhookReceiver(t)

	var added struct{ Schedule store.Schedule }
	n.scheduleJSON(t, &added, "add", "daily", "--cron", "0 9 * * 1-5", "--tz", "Asia/Shanghai",
		"--prompt", "write the morning report", "--deliver", "webhook:"+hook.URL+"/hook", "--catch-up", "run_once")
	s := added.Schedule
	if s.Name != "daily" || s.Kind != "cron" || s.Timezone != "Asia/Shanghai" || s.CatchUp != "run_once" ||
		s.DeliveryKind != "webhook" || !s.Enabled || s.NextRunAt == nil || s.NextRunAt.In(time.FixedZone("CST", 8*3600)).Hour() != 9 {
		t.Fatalf("added = %+v", s)
	}
	var list struct{ Schedules []store.Schedule }
	n.scheduleJSON(t, &list, "list")
	if len(list.Schedules) != 1 || list.Schedules[0].ID != s.ID {
		t.Fatalf("list = %+v", list)
	}
	out, _, code := n.run(t, "", "schedule", "list")
	if code != 0 || !strings.Contains(out, "cron 0 9 * * 1-5 (Asia/Shanghai)") || !strings.Contains(out, "run_once") {
		t.Errorf("list:\n%s", out)
	}

	var paused struct{ Schedule store.Schedule }
	n.scheduleJSON(t, &paused, "pause", "daily")
	if paused.Schedule.Enabled || paused.Schedule.NextRunAt != nil {
		t.Errorf("paused = %+v", paused.Schedule)
	}
	var resumed struct{ Schedule store.Schedule }
	n.scheduleJSON(t, &resumed, "resume", s.ID)
	if !resumed.Schedule.Enabled || resumed.Schedule.NextRunAt == nil {
		t.Errorf("resumed = %+v", resumed.Schedule)
	}

	// run executes in the CLI process, with the configured model.
	var ran struct{ Run store.ScheduleRun }
	n.scheduleJSON(t, &ran, "run", "daily")
	r := ran.Run
	if r.Status != "completed" || r.Content != "the morning report" || r.Trigger != "manual" ||
		r.DeliveryStatus != "delivered" || r.DeliveryAttempts != 1 || r.SessionID == "" {
		t.Fatalf("run = %+v", r)
	}
	if got := hook.payloads(); len(got) != 1 || got[0].RunID != r.ID || got[0].Content != "the morning report" {
		t.Errorf("webhook got %+v", got)
	}
	d := n.show(t, "daily")
	if len(d.Runs) != 1 || d.Runs[0].ID != r.ID {
		t.Errorf("show = %+v", d)
	}
	out, _, _ = n.run(t, "", "schedule", "show", "daily")
	if !strings.Contains(out, r.ID) || !strings.Contains(out, "delivered (1)") {
		t.Errorf("show:\n%s", out)
	}
	out, _, _ = n.run(t, "", "session", "show", "--json", r.SessionID)
	if !strings.Contains(out, `"source": "cron"`) {
		t.Errorf("the run's session is not a cron session:\n%s", out)
	}

	var removed struct {
		Removed bool
		ID      string
	}
	n.scheduleJSON(t, &removed, "remove", "daily")
	if !removed.Removed || removed.ID != s.ID {
		t.Errorf("remove = %+v", removed)
	}
	if _, stderr, code := n.run(t, "", "schedule", "show", "daily"); code != 1 || !strings.Contains(stderr, "no schedule daily") {
		t.Errorf("show removed: exit %d: %s", code, stderr)
	}

	for _, bad := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"schedule", "add", "x", "--prompt", "p"}, 1, "give exactly one of --cron"},
		{[]string{"schedule", "add", "x", "--every", "1h"}, 1, "has no prompt"},
		{[]string{"schedule", "add", "x", "--every", "1h", "--prompt", "p", "--deliver", "slack:#x"}, 1, "inbox, webhook:URL or feishu:CHAT_ID"},
		{[]string{"schedule", "frobnicate"}, 2, "unknown subcommand"},
		{[]string{"schedule", "show"}, 2, "usage: nagent schedule show NAME"},
	} {
		if _, stderr, code := n.run(t, "", bad.args...); code != bad.code || !strings.Contains(stderr, bad.msg) {
			t.Errorf("nagent %v: exit %d, %s; want %d mentioning %q", bad.args, code, stderr, bad.code, bad.msg)
		}
	}
	_, stderr, code := n.run(t, "", "schedule", "--help")
	if code != 0 || !strings.Contains(stderr, "run_once runs once on start") || !strings.Contains(stderr, "in THIS process") {
		t.Errorf("schedule --help: exit %d\n%s", code, stderr)
	}
}

// TestScheduleRestart is the restart test: a schedule due while `nagent
// serve` was stopped runs once when it starts again with catch-up
// run_once, and is skipped (recorded as skipped_missed) with skip.
func TestScheduleRestart(t *testing.T) {
	n := newNagent(t)
	n.model.SetResponder(scripted.Echo)
	hook := newWebhookReceiver(t)
	os.WriteFile(filepath.Join(n.home, "config.yaml"), []byte(
		"scheduler:\n  tick: 50ms\n  delivery: {base_delay: 10ms, max_attempts: 3}\nserver:\n  shutdown_grace: 2s\n"), 0o600)

	// A running server fires a schedule the CLI adds.
	cmd, _, logs := n.startServe(t)
	at := func(d time.Duration) string { return time.Now().Add(d).UTC().Format(time.RFC3339) }
	var added struct{ Schedule store.Schedule }
	n.scheduleJSON(t, &added, "add", "live", "--at", at(5*time.Second), "--prompt", "live prompt", "--deliver", "inbox")
	waitFor(t, "the live schedule to run in serve", func() bool {
		runs := n.show(t, "live").Runs
		return len(runs) == 1 && runs[0].Status == "completed"
	})
	if r := n.show(t, "live").Runs[0]; r.Trigger != "tick" || r.DeliveryStatus != "delivered" || r.Content != "echo: live prompt" {
		t.Errorf("live run = %+v", r)
	}

	// Two schedules fall due while the server is stopped. They are added
	// once it has stopped, so that a slow stop cannot let them run.
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve exit: %v\n%s", err, logs)
	}
	due := at(5 * time.Second) // room for the two commands, even on a slow machine
	n.scheduleJSON(t, &added, "add", "catch", "--at", due, "--prompt", "catch prompt", "--catch-up", "run_once",
		"--deliver", "webhook:"+hook.URL)
	n.scheduleJSON(t, &added, "add", "skip", "--at", due, "--prompt", "skip prompt", "--catch-up", "skip",
		"--deliver", "webhook:"+hook.URL)
	dueAt, _ := time.Parse(time.RFC3339, due)
	time.Sleep(time.Until(dueAt) + 300*time.Millisecond)
	for _, name := range []string{"catch", "skip"} {
		if runs := n.show(t, name).Runs; len(runs) != 0 {
			t.Fatalf("%s ran while the server was stopped: %+v", name, runs)
		}
	}

	cmd, _, logs = n.startServe(t)
	waitFor(t, "the catch-up run", func() bool {
		runs := n.show(t, "catch").Runs
		return len(runs) == 1 && runs[0].Status == "completed" && runs[0].DeliveryStatus == "delivered"
	})
	time.Sleep(300 * time.Millisecond) // a few more ticks: nothing else may run

	catch, skip := n.show(t, "catch"), n.show(t, "skip")
	if len(catch.Runs) != 1 || catch.Runs[0].Trigger != "catch_up" || catch.Runs[0].Content != "echo: catch prompt" ||
		!strings.Contains(catch.Runs[0].Note, "1 run(s) missed") || catch.Schedule.NextRunAt != nil {
		t.Errorf("catch = %+v", catch)
	}
	if len(skip.Runs) != 1 || skip.Runs[0].Status != "skipped_missed" || skip.Runs[0].Trigger != "catch_up" ||
		skip.Runs[0].DeliveryStatus != "none" || skip.Schedule.NextRunAt != nil {
		t.Errorf("skip = %+v", skip)
	}
	reqs := n.model.Requests()
	if c, s := userPrompts(reqs, "catch prompt"), userPrompts(reqs, "skip prompt"); c != 1 || s != 0 {
		t.Errorf("model asked for catch %d times, skip %d times; want 1 and 0", c, s)
	}
	if got := hook.payloads(); len(got) != 1 || got[0].ScheduleName != "catch" || got[0].Trigger != "catch_up" {
		t.Errorf("webhook got %+v", got)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("serve exit: %v\n%s", err, logs)
	}
}

func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
