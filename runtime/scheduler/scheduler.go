// Package scheduler owns scheduled agent runs: the schedules (cron, every,
// once) kept in SQLite, the SchedulerRunner that fires them and catches up
// on runs missed while nagent was down, the ScheduleRunService that records
// and runs one occurrence single-flight per schedule, the
// ScheduledAgentExecutor that runs it as a cron turn (safe_only tools, no
// confirmation), and the ScheduleOutboundDelivery that sends the result.
package scheduler

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/store"
)

// Scheduler is the scheduler as the entry points see it: schedule
// management, manual runs, the inbox, and the runner that fires schedules.
type Scheduler struct {
	DB       *store.DB
	Runs     *ScheduleRunService
	Runner   *SchedulerRunner
	Delivery *ScheduleOutboundDelivery
	now      func() time.Time
}

// Options configure New.
type Options struct {
	// Executor runs the agent; nil makes every run fail with a message
	// saying no model is wired (management commands need none).
	Executor Executor
	// Delivery sends results; nil delivers with the defaults.
	Delivery *ScheduleOutboundDelivery
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Tick is how often the runner looks for due schedules (default 1s).
	Tick time.Duration
	// RunTimeout bounds one run (default 30m). A run still recorded as
	// running after it is dead, and no longer blocks its schedule.
	RunTimeout time.Duration
	Log        *slog.Logger
}

// New builds a scheduler over db. It does not start the runner.
func New(db *store.DB, opts Options) *Scheduler {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Tick <= 0 {
		opts.Tick = time.Second
	}
	if opts.RunTimeout <= 0 {
		opts.RunTimeout = 30 * time.Minute
	}
	if opts.Delivery == nil {
		opts.Delivery = &ScheduleOutboundDelivery{}
	}
	if opts.Delivery.DB == nil {
		opts.Delivery.DB = db
	}
	if opts.Delivery.Log == nil {
		opts.Delivery.Log = opts.Log
	}
	runs := &ScheduleRunService{DB: db, Executor: opts.Executor, Delivery: opts.Delivery,
		Now: opts.Now, RunTimeout: opts.RunTimeout, Log: opts.Log}
	return &Scheduler{
		DB: db, Runs: runs, Delivery: opts.Delivery, now: opts.Now,
		Runner: &SchedulerRunner{DB: db, Runs: runs, Now: opts.Now, Tick: opts.Tick, Log: opts.Log},
	}
}

// SetChatSender registers the sender of feishu deliveries (the Feishu
// adapter calls it when it starts).
func (s *Scheduler) SetChatSender(c ChatSender) { s.Delivery.SetChatSender(c) }

// Start starts the runner: it catches up on missed runs, then fires due
// schedules every tick until Stop.
func (s *Scheduler) Start(ctx context.Context) error { return s.Runner.Start(ctx) }

// Stop stops firing schedules and waits up to grace for running runs, then
// cancels them (they are recorded as cancelled).
func (s *Scheduler) Stop(grace time.Duration) { s.Runner.Stop(grace) }

// NewSchedule is what Add needs to create a schedule.
type NewSchedule struct {
	Name     string
	Kind     string
	Spec     string
	Timezone string
	Prompt   string
	// Target is a delivery target as ParseTarget reads it.
	Target  string
	CatchUp string
	Paused  bool
}

// Add validates and stores a new schedule and computes its first run.
func (s *Scheduler) Add(ctx context.Context, n NewSchedule) (store.Schedule, error) {
	n.Name = strings.TrimSpace(n.Name)
	if n.Name == "" || strings.ContainsAny(n.Name, " \t\n/") {
		return store.Schedule{}, errs.Errorf(errs.EINVALID, "schedule name %q: give a name without spaces or slashes, e.g. daily-report", n.Name)
	}
	if strings.TrimSpace(n.Prompt) == "" {
		return store.Schedule{}, errs.Errorf(errs.EINVALID, "schedule %s has no prompt: say what the agent should do, e.g. --prompt \"summarise yesterday's tickets\"", n.Name)
	}
	if n.Timezone == "" {
		n.Timezone = "UTC"
	}
	switch n.CatchUp {
	case "":
		n.CatchUp = CatchUpSkip
	case CatchUpSkip, CatchUpRunOnce:
	default:
		return store.Schedule{}, errs.Errorf(errs.EINVALID, "catch-up policy %q: use skip or run_once", n.CatchUp)
	}
	kind, target, err := ParseTarget(n.Target)
	if err != nil {
		return store.Schedule{}, err
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	timing, err := ParseTiming(n.Kind, n.Spec, n.Timezone, now)
	if err != nil {
		return store.Schedule{}, err
	}
	spec := strings.TrimSpace(n.Spec)
	next, ok := timing.Next(now)
	if n.Kind == KindOnce {
		spec = timing.at.In(timing.loc).Format(time.RFC3339)
		if !ok {
			return store.Schedule{}, errs.Errorf(errs.EINVALID, "once time %s is in the past; give a future time", spec)
		}
	} else if !ok {
		return store.Schedule{}, errs.Errorf(errs.EINVALID, "cron spec %q never fires (a day that no month has?); check the day-of-month and month fields", spec)
	}
	sc := store.Schedule{
		ID: store.NewScheduleID("sch"), Name: n.Name, Kind: n.Kind, Spec: spec, Timezone: n.Timezone,
		Prompt: n.Prompt, DeliveryKind: kind, DeliveryTarget: target, Enabled: !n.Paused, CatchUp: n.CatchUp,
		CreatedAt: now, UpdatedAt: now,
	}
	if ok && !n.Paused {
		sc.NextRunAt = &next
	}
	if err := s.DB.CreateSchedule(ctx, sc); err != nil {
		return store.Schedule{}, err
	}
	return s.DB.GetSchedule(ctx, sc.ID)
}

// List returns every schedule by name.
func (s *Scheduler) List(ctx context.Context) ([]store.Schedule, error) {
	return s.DB.ListSchedules(ctx)
}

// Get returns the schedule whose id or name is key.
func (s *Scheduler) Get(ctx context.Context, key string) (store.Schedule, error) {
	return s.DB.GetSchedule(ctx, key)
}

// RecentRuns returns a schedule's latest runs, newest first.
func (s *Scheduler) RecentRuns(ctx context.Context, key string, limit int) ([]store.ScheduleRun, error) {
	sc, err := s.DB.GetSchedule(ctx, key)
	if err != nil {
		return nil, err
	}
	return s.DB.ListScheduleRuns(ctx, sc.ID, limit)
}

// Pause stops a schedule from firing; runs already running finish.
func (s *Scheduler) Pause(ctx context.Context, key string) (store.Schedule, error) {
	sc, err := s.DB.GetSchedule(ctx, key)
	if err != nil {
		return sc, err
	}
	if err := s.DB.SetScheduleEnabled(ctx, sc.ID, false, nil); err != nil {
		return sc, err
	}
	return s.DB.GetSchedule(ctx, sc.ID)
}

// Resume lets a paused schedule fire again from its next occurrence after
// now: occurrences that fell in the pause are not caught up.
func (s *Scheduler) Resume(ctx context.Context, key string) (store.Schedule, error) {
	sc, err := s.DB.GetSchedule(ctx, key)
	if err != nil {
		return sc, err
	}
	timing, err := ParseTiming(sc.Kind, sc.Spec, sc.Timezone, sc.CreatedAt)
	if err != nil {
		return sc, err
	}
	var next *time.Time
	if n, ok := timing.Next(s.now()); ok {
		next = &n
	}
	if err := s.DB.SetScheduleEnabled(ctx, sc.ID, true, next); err != nil {
		return sc, err
	}
	return s.DB.GetSchedule(ctx, sc.ID)
}

// Remove deletes a schedule and its run records (inbox messages stay).
func (s *Scheduler) Remove(ctx context.Context, key string) (store.Schedule, error) {
	sc, err := s.DB.GetSchedule(ctx, key)
	if err != nil {
		return sc, err
	}
	return sc, s.DB.DeleteSchedule(ctx, sc.ID)
}

// RunNow runs a schedule at once in this process, paused or not, and
// returns its record after delivery. An overlapping run is not started:
// the returned record has status skipped_overlap.
func (s *Scheduler) RunNow(ctx context.Context, key string) (store.ScheduleRun, error) {
	sc, err := s.DB.GetSchedule(ctx, key)
	if err != nil {
		return store.ScheduleRun{}, err
	}
	return s.Runs.Run(ctx, sc, TriggerManual, s.now(), nil, "")
}

// Inbox returns dashboard inbox messages, newest first.
func (s *Scheduler) Inbox(ctx context.Context, f store.InboxFilter) ([]store.InboxMessage, error) {
	return s.DB.ListInbox(ctx, f)
}

// MarkInboxRead marks an inbox message read.
func (s *Scheduler) MarkInboxRead(ctx context.Context, id string) error {
	return s.DB.MarkInboxRead(ctx, id)
}
