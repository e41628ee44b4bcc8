package scheduler_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/app"
	"github.com/nagent/nagent/runtime/config"
	"github.com/nagent/nagent/runtime/llm/scripted"
	"github.com/nagent/nagent/runtime/scheduler"
	"github.com/nagent/nagent/store"
)

// t0 is the fake clock's start.
var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// clock is a controllable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// env is a wired runtime over a fresh data directory, a scripted model and
// a fake clock.
type env struct {
	cfg   *config.Config
	app   *app.App
	sched *scheduler.Scheduler
	model *scripted.Server
	clock *clock
}

func newEnv(tb testing.TB, replies ...scripted.Reply) *env {
	tb.Helper()
	model := scripted.Start(replies...)
	tb.Cleanup(model.Close)
	cfg := config.Defaults()
	cfg.Home = tb.TempDir()
	cfg.LLM.BaseURL = model.URL()
	cfg.LLM.Model = "scripted-model"
	cfg.LLM.MaxAttempts = 1
	cfg.Scheduler.Tick = config.Duration(10 * time.Millisecond)
	cfg.Scheduler.Delivery.BaseDelay = config.Duration(5 * time.Millisecond)
	cfg.Scheduler.Delivery.MaxDelay = config.Duration(20 * time.Millisecond)
	cfg.Scheduler.Delivery.MaxAttempts = 3
	return openEnv(tb, &cfg, model, &clock{now: t0})
}

// openEnv wires an App over cfg (a new one over the same data directory
// is a restarted server).
func openEnv(tb testing.TB, cfg *config.Config, model *scripted.Server, c *clock) *env {
	tb.Helper()
	a, err := app.New(context.Background(), cfg, app.Options{Now: c.Now, Log: testLog()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { a.Close() })
	return &env{cfg: cfg, app: a, sched: a.Scheduler(), model: model, clock: c}
}

// testLog discards logs unless NAGENT_TEST_LOG is set.
func testLog() *slog.Logger {
	var w io.Writer = io.Discard
	if os.Getenv("NAGENT_TEST_LOG") != "" {
		w = os.Stderr
	}
	return slog.New(slog.NewTextHandler(w, nil))
}

func (e *env) add(tb testing.TB, n scheduler.NewSchedule) store.Schedule {
	tb.Helper()
	if n.Prompt == "" {
		n.Prompt = "report on " + n.Name
	}
	s, err := e.sched.Add(context.Background(), n)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func (e *env) runs(tb testing.TB, s store.Schedule) []store.ScheduleRun {
	tb.Helper()
	runs, err := e.app.DB.ListScheduleRuns(context.Background(), s.ID, 100)
	if err != nil {
		tb.Fatal(err)
	}
	return runs
}

func (e *env) tick(tb testing.TB, at time.Time) {
	tb.Helper()
	e.clock.Set(at)
	if err := e.sched.Runner.RunDue(context.Background()); err != nil {
		tb.Fatal(err)
	}
}

func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestTickRunsDueScheduleAsCronSession(t *testing.T) {
	e := newEnv(t, scripted.Reply{Content: "all quiet"})
	ctx := context.Background()
	s := e.add(t, scheduler.NewSchedule{Name: "hourly", Kind: "every", Spec: "1h", Target: "inbox"})
	if s.NextRunAt == nil || !s.NextRunAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("first run at %v, want %s", s.NextRunAt, t0.Add(time.Hour))
	}

	e.tick(t, t0.Add(59*time.Minute)) // not yet due
	e.tick(t, t0.Add(time.Hour+300*time.Millisecond))
	e.tick(t, t0.Add(time.Hour+600*time.Millisecond)) // same occurrence: no second run
	e.sched.Runner.Wait()

	runs := e.runs(t, s)
	if len(runs) != 1 {
		t.Fatalf("runs = %+v, want 1", runs)
	}
	r := runs[0]
	if r.Status != store.RunCompleted || r.Trigger != scheduler.TriggerTick || r.Content != "all quiet" ||
		!r.ScheduledFor.Equal(t0.Add(time.Hour)) || r.DeliveryStatus != store.DeliveryDelivered || r.DeliveryAttempts != 1 {
		t.Errorf("run = %+v", r)
	}
	sess, err := e.app.DB.GetSession(ctx, r.SessionID)
	if err != nil || sess.Source != scheduler.SourceCron {
		t.Errorf("session %s = %+v, %v; want source cron", r.SessionID, sess, err)
	}
	got, _ := e.sched.Get(ctx, "hourly")
	if got.NextRunAt == nil || !got.NextRunAt.Equal(t0.Add(2*time.Hour)) || got.LastRunAt == nil || !got.LastRunAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("after the run: next %v, last %v", got.NextRunAt, got.LastRunAt)
	}

	inbox, err := e.sched.Inbox(ctx, store.InboxFilter{UnreadOnly: true})
	if err != nil || len(inbox) != 1 || inbox[0].Content != "all quiet" || inbox[0].RunID != r.ID ||
		inbox[0].ScheduleName != "hourly" || inbox[0].SessionID != r.SessionID || inbox[0].Status != store.RunCompleted {
		t.Fatalf("inbox = %+v, %v", inbox, err)
	}
	if err := e.sched.MarkInboxRead(ctx, inbox[0].ID); err != nil {
		t.Fatal(err)
	}
	if unread, _ := e.sched.Inbox(ctx, store.InboxFilter{UnreadOnly: true}); len(unread) != 0 {
		t.Errorf("unread after MarkInboxRead = %+v", unread)
	}
	if all, _ := e.sched.Inbox(ctx, store.InboxFilter{}); len(all) != 1 || all[0].ReadAt == nil {
		t.Errorf("inbox = %+v", all)
	}
}

func TestLateTickRunsOnceAndSkipsAhead(t *testing.T) {
	e := newEnv(t, scripted.Reply{Content: "ok"})
	s := e.add(t, scheduler.NewSchedule{Name: "quarter", Kind: "cron", Spec: "*/15 * * * *"})
	e.tick(t, t0.Add(50*time.Minute)) // slept through 10:15, 10:30 and 10:45
	e.sched.Runner.Wait()
	runs := e.runs(t, s)
	if len(runs) != 1 || !runs[0].ScheduledFor.Equal(t0.Add(15*time.Minute)) {
		t.Fatalf("runs = %+v", runs)
	}
	got, _ := e.sched.Get(context.Background(), s.ID)
	if !got.NextRunAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("next = %s, want 11:00", got.NextRunAt)
	}
}

func TestOnceRunsOnceThenHasNoNextRun(t *testing.T) {
	e := newEnv(t, scripted.Reply{Content: "done"})
	s := e.add(t, scheduler.NewSchedule{Name: "once", Kind: "once", Spec: "2026-12-02 19:00", Timezone: "Asia/Shanghai"})
	if !s.NextRunAt.Equal(t0.Add(time.Hour)) || s.Spec != "2026-12-02T19:00:00+08:00" {
		t.Fatalf("schedule = %+v", s)
	}
	e.tick(t, t0.Add(time.Hour))
	e.sched.Runner.Wait()
	e.tick(t, t0.Add(48*time.Hour))
	e.sched.Runner.Wait()
	if runs := e.runs(t, s); len(runs) != 1 || runs[0].Status != store.RunCompleted {
		t.Fatalf("runs = %+v", runs)
	}
	if got, _ := e.sched.Get(context.Background(), s.ID); got.NextRunAt != nil {
		t.Errorf("next run = %s, want none", got.NextRunAt)
	}
}

// TestOverlapIsSkippedAndRecorded: runs are single-flight per schedule.
func TestOverlapIsSkippedAndRecorded(t *testing.T) {
	e := newEnv(t)
	// The first run stays with the model until the overlapping ones were tried.
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock)
	e.model.SetResponder(func(scripted.RecordedRequest) scripted.Reply {
		<-release
		return scripted.Reply{Content: "slow answer"}
	})
	s := e.add(t, scheduler.NewSchedule{Name: "minutely", Kind: "every", Spec: "1m"})
	e.tick(t, t0.Add(time.Minute))
	waitFor(t, "the first run to reach the model", func() bool { return len(e.model.Requests()) == 1 })
	e.tick(t, t0.Add(2*time.Minute))
	// A manual run is refused too.
	manual, err := e.sched.RunNow(context.Background(), "minutely")
	if err != nil || manual.Status != store.RunSkippedOverlap {
		t.Fatalf("manual run during a run = %+v, %v", manual, err)
	}
	unblock()
	e.sched.Runner.Wait()

	runs := e.runs(t, s)
	statuses := map[string]int{}
	for _, r := range runs {
		statuses[r.Status]++
	}
	if len(runs) != 3 || statuses[store.RunCompleted] != 1 || statuses[store.RunSkippedOverlap] != 2 {
		t.Fatalf("runs = %+v", runs)
	}
	for _, r := range runs {
		if r.Status == store.RunSkippedOverlap && (!strings.Contains(r.Note, "still running") || r.SessionID != "" || r.FinishedAt == nil) {
			t.Errorf("skipped run = %+v", r)
		}
	}
	if n := len(e.model.Requests()); n != 1 {
		t.Errorf("model asked %d times, want 1", n)
	}
	// The next occurrence runs again once the first finished.
	e.model.Enqueue(scripted.Reply{Content: "next"})
	e.tick(t, t0.Add(3*time.Minute))
	e.sched.Runner.Wait()
	if runs := e.runs(t, s); runs[0].Status != store.RunCompleted || runs[0].Content != "next" {
		t.Errorf("latest run = %+v", runs[0])
	}
}

// TestCatchUpAfterRestart: occurrences due while nagent was down run once
// with run_once, and are skipped (one skipped_missed record) with skip.
// The restart is a new App over the same data directory.
func TestCatchUpAfterRestart(t *testing.T) {
	e := newEnv(t)
	runOnce := e.add(t, scheduler.NewSchedule{Name: "catch", Kind: "every", Spec: "1h", CatchUp: scheduler.CatchUpRunOnce, Prompt: "catch up"})
	skip := e.add(t, scheduler.NewSchedule{Name: "skip", Kind: "every", Spec: "1h", CatchUp: scheduler.CatchUpSkip, Prompt: "skip me"})
	paused := e.add(t, scheduler.NewSchedule{Name: "paused", Kind: "every", Spec: "1h", CatchUp: scheduler.CatchUpRunOnce, Paused: true})
	e.app.Close()

	// Down from 10:00 to 15:30: 11:00 … 15:00 fell due (5 occurrences).
	c := &clock{now: t0.Add(5*time.Hour + 30*time.Minute)}
	e.model.Enqueue(scripted.Reply{Content: "caught up"})
	e2 := openEnv(t, e.cfg, e.model, c)
	if err := e2.sched.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	e2.sched.Runner.Wait()
	e2.sched.Stop(time.Second)

	runs := e2.runs(t, runOnce)
	if len(runs) != 1 || runs[0].Status != store.RunCompleted || runs[0].Trigger != scheduler.TriggerCatchUp ||
		runs[0].Content != "caught up" || !runs[0].ScheduledFor.Equal(t0.Add(5*time.Hour)) ||
		!strings.Contains(runs[0].Note, "5 run(s) missed") {
		t.Fatalf("run_once runs = %+v", runs)
	}
	runs = e2.runs(t, skip)
	if len(runs) != 1 || runs[0].Status != store.RunSkippedMissed || runs[0].Trigger != scheduler.TriggerCatchUp ||
		runs[0].SessionID != "" || !strings.Contains(runs[0].Note, "5 run(s) missed") {
		t.Fatalf("skip runs = %+v", runs)
	}
	if runs := e2.runs(t, paused); len(runs) != 0 {
		t.Errorf("paused schedule ran: %+v", runs)
	}
	reqs := e.model.Requests()
	if len(reqs) != 1 || !strings.Contains(reqs[0].Messages[len(reqs[0].Messages)-1].Content, "catch up") {
		t.Fatalf("model requests = %d, want one for the run_once schedule", len(reqs))
	}
	for _, s := range []store.Schedule{runOnce, skip} {
		got, _ := e2.sched.Get(context.Background(), s.ID)
		if !got.NextRunAt.Equal(t0.Add(6 * time.Hour)) {
			t.Errorf("%s: next run %s, want 16:00", s.Name, got.NextRunAt)
		}
	}
}

func TestStartInterruptsDeadRuns(t *testing.T) {
	e := newEnv(t)
	s := e.add(t, scheduler.NewSchedule{Name: "dead", Kind: "every", Spec: "1h"})
	// A process claimed a run and died.
	run, err := e.sched.Runs.Claim(context.Background(), s, scheduler.TriggerManual, t0, nil, "")
	if err != nil || run.Status != store.RunRunning {
		t.Fatal(run, err)
	}
	e.clock.Set(t0.Add(e.cfg.Scheduler.RunTimeout.Std() + time.Minute))
	if err := e.sched.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.sched.Stop(time.Second)
	got, _ := e.app.DB.GetScheduleRun(context.Background(), run.ID)
	if got.Status != store.RunFailed || !strings.Contains(got.Error, "interrupted") {
		t.Errorf("dead run = %+v", got)
	}
}

func TestManageSchedules(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	s := e.add(t, scheduler.NewSchedule{Name: "daily", Kind: "cron", Spec: "0 9 * * *", Timezone: "Asia/Shanghai",
		Target: "webhook:https://example.com/hook?token=x", CatchUp: "run_once"})
	if s.DeliveryKind != "webhook" || s.DeliveryTarget != "https://example.com/hook?token=x" || !s.Enabled ||
		!s.NextRunAt.Equal(time.Date(2026, 12, 3, 1, 0, 0, 0, time.UTC)) {
		t.Fatalf("added = %+v", s)
	}
	if _, err := e.sched.Add(ctx, scheduler.NewSchedule{Name: "daily", Kind: "every", Spec: "1h", Prompt: "x"}); err == nil ||
		!strings.Contains(err.Error(), "already exists") {
		t.Errorf("duplicate name: %v", err)
	}
	p, err := e.sched.Pause(ctx, "daily")
	if err != nil || p.Enabled || p.NextRunAt != nil {
		t.Fatalf("paused = %+v, %v", p, err)
	}
	e.tick(t, t0.Add(48*time.Hour)) // paused: never due
	if runs := e.runs(t, s); len(runs) != 0 {
		t.Errorf("paused schedule ran: %+v", runs)
	}
	r, err := e.sched.Resume(ctx, s.ID)
	if err != nil || !r.Enabled || !r.NextRunAt.Equal(time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)) {
		t.Fatalf("resumed = %+v, %v", r, err)
	}
	if _, err := e.sched.Remove(ctx, "daily"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.sched.Get(ctx, "daily"); err == nil || !strings.Contains(err.Error(), "nagent schedule list") {
		t.Errorf("get removed: %v", err)
	}

	for _, bad := range []struct {
		n    scheduler.NewSchedule
		want string
	}{
		{scheduler.NewSchedule{Name: "a b", Kind: "every", Spec: "1h", Prompt: "x"}, "without spaces"},
		{scheduler.NewSchedule{Name: "np", Kind: "every", Spec: "1h"}, "no prompt"},
		{scheduler.NewSchedule{Name: "past", Kind: "once", Spec: "2026-12-01T00:00:00Z", Prompt: "x"}, "in the past"},
		{scheduler.NewSchedule{Name: "feb30", Kind: "cron", Spec: "0 9 30 2 *", Prompt: "x"}, "never fires"},
		{scheduler.NewSchedule{Name: "cu", Kind: "every", Spec: "1h", Prompt: "x", CatchUp: "all"}, "skip or run_once"},
		{scheduler.NewSchedule{Name: "t", Kind: "every", Spec: "1h", Prompt: "x", Target: "ftp://x"}, "inbox, webhook:URL or feishu:CHAT_ID"},
		{scheduler.NewSchedule{Name: "w", Kind: "every", Spec: "1h", Prompt: "x", Target: "webhook:nohost"}, "http or https URL"},
	} {
		if _, err := e.sched.Add(ctx, bad.n); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Add(%+v) = %v, want %q", bad.n, err, bad.want)
		}
	}
}

func TestRunFailureIsRecorded(t *testing.T) {
	e := newEnv(t, scripted.Reply{Status: 500, ErrorMessage: "model exploded"})
	s := e.add(t, scheduler.NewSchedule{Name: "fails", Kind: "every", Spec: "1h", Target: "inbox"})
	run, err := e.sched.RunNow(context.Background(), "fails")
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != store.RunFailed || run.Error == "" || run.Trigger != scheduler.TriggerManual {
		t.Fatalf("run = %+v", run)
	}
	// A failed run is still delivered, as a failure.
	inbox, _ := e.sched.Inbox(context.Background(), store.InboxFilter{})
	if len(inbox) != 1 || inbox[0].Status != store.RunFailed || !strings.HasPrefix(inbox[0].Content, "run failed") {
		t.Errorf("inbox = %+v", inbox)
	}
	if got, _ := e.sched.Get(context.Background(), s.ID); !got.NextRunAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("a manual run moved the schedule: next %s", got.NextRunAt)
	}
}

// TestStopCancelsRunsAfterGrace: the tick loop fires due schedules by
// itself; Stop waits for a running run for its grace, then cancels it, and
// the run is recorded as cancelled.
func TestStopCancelsRunsAfterGrace(t *testing.T) {
	e := newEnv(t, scripted.Reply{Content: "too slow", Delay: time.Minute})
	s := e.add(t, scheduler.NewSchedule{Name: "slow", Kind: "every", Spec: "1m", Target: "inbox"})
	if err := e.sched.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.clock.Set(t0.Add(time.Minute))
	waitFor(t, "the tick loop to start the run", func() bool { return len(e.model.Requests()) == 1 })
	start := time.Now()
	e.sched.Stop(100 * time.Millisecond)
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("Stop took %s", d)
	}
	runs := e.runs(t, s)
	if len(runs) != 1 || runs[0].Status != store.RunCancelled || runs[0].Trigger != scheduler.TriggerTick || runs[0].FinishedAt == nil {
		t.Fatalf("runs = %+v", runs)
	}
	// Never reported as delivered: the stop cancelled the delivery too.
	if runs[0].DeliveryStatus == store.DeliveryDelivered {
		t.Errorf("a cancelled delivery was recorded as delivered: %+v", runs[0])
	}
}

// TestInvalidTimingIsPaused: a stored schedule whose timing no longer
// parses (here a time zone the system does not know) is paused on the
// first tick instead of failing on every one.
func TestInvalidTimingIsPaused(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	next := t0.Add(time.Minute)
	bad := store.Schedule{ID: "sch_bad", Name: "bad", Kind: scheduler.KindCron, Spec: "0 9 * * *", Timezone: "Mars/Base",
		Prompt: "x", DeliveryKind: scheduler.DeliverNone, Enabled: true, CatchUp: scheduler.CatchUpSkip,
		NextRunAt: &next, CreatedAt: t0, UpdatedAt: t0}
	if err := e.app.DB.CreateSchedule(ctx, bad); err != nil {
		t.Fatal(err)
	}
	e.tick(t, t0.Add(2*time.Minute))
	e.sched.Runner.Wait()
	got, err := e.sched.Get(ctx, "bad")
	if err != nil || got.Enabled || got.NextRunAt != nil {
		t.Fatalf("schedule = %+v, %v; want it paused", got, err)
	}
	if runs := e.runs(t, got); len(runs) != 0 {
		t.Errorf("runs = %+v", runs)
	}
}

// TestRunTimeoutIsAFailure: a run cut off by scheduler.run_timeout is
// recorded as failed, saying so, not as cancelled by someone.
func TestRunTimeoutIsAFailure(t *testing.T) {
	model := scripted.Start(scripted.Reply{Content: "too slow", Delay: time.Minute})
	t.Cleanup(model.Close)
	cfg := config.Defaults()
	cfg.Home = t.TempDir()
	cfg.LLM.BaseURL, cfg.LLM.Model, cfg.LLM.MaxAttempts = model.URL(), "scripted-model", 1
	cfg.Scheduler.RunTimeout = config.Duration(300 * time.Millisecond)
	e := openEnv(t, &cfg, model, &clock{now: t0})
	e.add(t, scheduler.NewSchedule{Name: "slow", Kind: "every", Spec: "1h"})
	run, err := e.sched.RunNow(context.Background(), "slow")
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != store.RunFailed || !strings.Contains(run.Error, "timed out after 300ms") {
		t.Fatalf("run = %+v; want failed, timed out", run)
	}
}

// A run whose process is gone is failed at start at once, not after the run
// timeout, so it neither blocks the schedule nor turns a catch-up into an
// overlap; a run of a live process is left alone.
func TestStartInterruptsRunsOfGoneProcesses(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	host, _ := os.Hostname()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	owners := map[string]string{
		"gone": fmt.Sprintf("%s:%d", host, gone.Process.Pid),
		"live": fmt.Sprintf("%s:%d", host, os.Getppid()),
		"away": "other-host:1",
	}
	runs := map[string]string{}
	for name, owner := range owners {
		s := e.add(t, scheduler.NewSchedule{Name: name, Kind: "every", Spec: "1h"})
		run, err := e.app.DB.ClaimScheduleRun(ctx, store.ScheduleClaim{
			ScheduleID: s.ID, RunID: store.NewScheduleID("run"), Trigger: scheduler.TriggerManual,
			ScheduledFor: t0, Now: t0, StaleBefore: t0.Add(-time.Hour), Owner: owner,
		})
		if err != nil || run.Status != store.RunRunning {
			t.Fatal(run, err)
		}
		runs[name] = run.ID
	}
	if err := e.sched.Start(ctx); err != nil {
		t.Fatal(err)
	}
	e.sched.Stop(time.Second)
	want := map[string]string{"gone": store.RunFailed, "live": store.RunRunning, "away": store.RunRunning}
	for name, id := range runs {
		got, _ := e.app.DB.GetScheduleRun(ctx, id)
		if got.Status != want[name] {
			t.Errorf("%s run: status %s, want %s (%s)", name, got.Status, want[name], got.Error)
		}
	}
}

// While the server runs, a run left behind by a process that died (a
// `nagent schedule run` stopped with SIGKILL) does not turn the next
// occurrence into an overlap: it is failed and the occurrence runs.
func TestClaimFailsRunsOfGoneProcesses(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	host, _ := os.Hostname()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	s := e.add(t, scheduler.NewSchedule{Name: "orphaned", Kind: "every", Spec: "1h"})
	orphan, err := e.app.DB.ClaimScheduleRun(ctx, store.ScheduleClaim{
		ScheduleID: s.ID, RunID: store.NewScheduleID("run"), Trigger: scheduler.TriggerManual,
		ScheduledFor: t0, Now: t0, StaleBefore: t0.Add(-time.Hour), Owner: fmt.Sprintf("%s:%d", host, gone.Process.Pid),
	})
	if err != nil || orphan.Status != store.RunRunning {
		t.Fatal(orphan, err)
	}
	run, err := e.sched.Runs.Claim(ctx, s, scheduler.TriggerManual, t0, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != store.RunRunning {
		t.Errorf("the next run is %s (%s), want running", run.Status, run.Note)
	}
	got, _ := e.app.DB.GetScheduleRun(ctx, orphan.ID)
	if got.Status != store.RunFailed || !strings.Contains(got.Error, "interrupted") {
		t.Errorf("orphaned run = %s %q", got.Status, got.Error)
	}
}
