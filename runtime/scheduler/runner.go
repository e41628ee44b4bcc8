package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nagent/nagent/store"
)

// maxMissedCount bounds how far catch-up counts missed occurrences.
const maxMissedCount = 10000

// SchedulerRunner fires schedules. On Start it catches up on occurrences
// that fell due while nagent was not running (per schedule: skip records
// one skipped_missed run, run_once runs once however many were missed);
// then, every Tick, it claims each due schedule's occurrence, advances the
// schedule past now, and runs the occurrence in the background.
//
// The runner reads the schedules from the database on every tick, so
// schedules added, paused or removed by another process (the CLI) take
// effect within a tick.
type SchedulerRunner struct {
	DB   *store.DB
	Runs *ScheduleRunService
	Now  func() time.Time
	Tick time.Duration
	Log  *slog.Logger

	mu      sync.Mutex
	cancel  context.CancelFunc // stops the tick loop
	runCtx  context.Context    // parent of the runs
	stopRun context.CancelFunc // cancels the runs
	loop    sync.WaitGroup
	running sync.WaitGroup
	active  atomic.Int64 // runs spawned and not finished, for Stop's warning
}

// interruptOrphans marks failed the runs whose process died without
// finishing them, so that they neither block nor count as overlaps.
func (r *SchedulerRunner) interruptOrphans(ctx context.Context, now time.Time) error {
	owners, err := r.DB.RunningRunOwners(ctx)
	if err != nil {
		return fmt.Errorf("scheduler: %w", err)
	}
	for _, o := range owners {
		if !ownerGone(o) {
			continue
		}
		n, err := r.DB.InterruptOwnerRuns(ctx, o, now)
		if err != nil {
			return fmt.Errorf("scheduler: %w", err)
		}
		r.Log.Warn("schedule runs of a stopped nagent process were marked failed", "owner", o, "count", n)
	}
	return nil
}

// Start catches up on missed occurrences and starts the tick loop. ctx
// bounds the runner's whole life; Stop ends it earlier.
func (r *SchedulerRunner) Start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancel != nil {
		return errors.New("scheduler: already started")
	}
	r.runCtx, r.stopRun = context.WithCancel(context.WithoutCancel(ctx))
	loopCtx, cancel := context.WithCancel(ctx)
	r.cancel = cancel
	started := r.Now()
	if err := r.interruptOrphans(ctx, started); err != nil {
		cancel()
		return err
	}
	if n, err := r.DB.InterruptStaleRuns(ctx, started.Add(-r.Runs.RunTimeout), started); err != nil {
		cancel()
		return fmt.Errorf("scheduler: %w", err)
	} else if n > 0 {
		r.Log.Warn("schedule runs left running by a stopped process were marked failed", "count", n)
	}
	if err := r.CatchUp(ctx, started); err != nil {
		cancel()
		return err
	}
	r.loop.Add(1)
	go func() {
		defer r.loop.Done()
		t := time.NewTicker(r.Tick)
		defer t.Stop()
		for {
			select {
			case <-loopCtx.Done():
				return
			case <-t.C:
				if err := r.RunDue(loopCtx); err != nil && loopCtx.Err() == nil {
					r.Log.Error("scheduler tick failed", "err", err)
				}
			}
		}
	}()
	r.Log.Info("scheduler started", "tick", r.Tick.String())
	return nil
}

// Stop ends the tick loop, waits up to grace for running runs to finish,
// then cancels them and waits for their records. It is safe to call more
// than once, and on a runner never started.
func (r *SchedulerRunner) Stop(grace time.Duration) {
	r.mu.Lock()
	cancel, stopRun := r.cancel, r.stopRun
	r.cancel = nil // a second Stop (App.Close after serve's) has nothing to do
	r.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	r.loop.Wait()
	done := make(chan struct{})
	go func() { r.running.Wait(); close(done) }()
	if r.active.Load() > 0 {
		select {
		case <-done:
		case <-time.After(grace):
			r.Log.Warn("scheduler stopping: cancelling runs still running", "runs", r.active.Load(), "grace", grace.String())
			stopRun()
		}
	}
	<-done
	stopRun()
}

// Wait blocks until every run started by the runner has finished (tests).
func (r *SchedulerRunner) Wait() { r.running.Wait() }

// CatchUp handles the enabled schedules whose next occurrence is before
// started: they fell due while nagent was not running.
func (r *SchedulerRunner) CatchUp(ctx context.Context, started time.Time) error {
	due, err := r.DB.DueSchedules(ctx, started.Add(-time.Millisecond))
	if err != nil {
		return fmt.Errorf("scheduler: catch-up: %w", err)
	}
	for _, s := range due {
		timing, ok := r.timing(ctx, s)
		if !ok {
			continue
		}
		first := *s.NextRunAt
		count, latest := timing.Missed(first, started, maxMissedCount)
		adv := &store.ScheduleAdvance{From: first, To: nextPtr(timing, started)}
		missed := fmt.Sprintf("%d run(s) missed while nagent was not running (first %s)", count, first.Format(time.RFC3339))
		if count >= maxMissedCount {
			missed = fmt.Sprintf("%d or more runs missed while nagent was not running (first %s)", count, first.Format(time.RFC3339))
		}
		if s.CatchUp == CatchUpRunOnce {
			run, err := r.Runs.Claim(ctx, s, TriggerCatchUp, latest, adv, missed+"; catch_up run_once runs it once")
			if err != nil {
				r.logClaimErr(s, err)
				continue
			}
			r.Log.Info("schedule catch-up: running once", "schedule", s.Name, "missed", count)
			r.spawn(s, run)
			continue
		}
		_, err = r.DB.ClaimScheduleRun(ctx, store.ScheduleClaim{
			ScheduleID: s.ID, RunID: store.NewScheduleID("run"), Trigger: TriggerCatchUp, ScheduledFor: first,
			Now: r.Now(), Advance: adv, Status: store.RunSkippedMissed, Note: missed + "; catch_up skip skips them",
		})
		if err != nil {
			r.logClaimErr(s, err)
			continue
		}
		r.Log.Info("schedule catch-up: skipped missed runs", "schedule", s.Name, "missed", count)
	}
	return nil
}

// RunDue claims and starts every schedule due at the runner's now.
func (r *SchedulerRunner) RunDue(ctx context.Context) error {
	now := r.Now()
	due, err := r.DB.DueSchedules(ctx, now)
	if err != nil {
		return err
	}
	for _, s := range due {
		timing, ok := r.timing(ctx, s)
		if !ok {
			continue
		}
		at := *s.NextRunAt
		// Advance past now, not past at: a late tick runs the occurrence
		// once instead of replaying every one it slept through.
		run, err := r.Runs.Claim(ctx, s, TriggerTick, at, &store.ScheduleAdvance{From: at, To: nextPtr(timing, now)}, "")
		if err != nil {
			r.logClaimErr(s, err)
			continue
		}
		if run.Status == store.RunRunning {
			r.spawn(s, run)
		}
	}
	return nil
}

// timing parses s's timing. A schedule whose timing no longer parses (its
// time zone vanished from the system, say) is paused, so that it is
// reported once and not on every tick.
func (r *SchedulerRunner) timing(ctx context.Context, s store.Schedule) (Timing, bool) {
	t, err := ParseTiming(s.Kind, s.Spec, s.Timezone, s.CreatedAt)
	if err == nil {
		return t, true
	}
	r.Log.Error("schedule has an invalid timing; pausing it", "schedule", s.Name, "err", err)
	if err := r.DB.SetScheduleEnabled(ctx, s.ID, false, nil); err != nil {
		r.Log.Error("pausing a schedule with an invalid timing failed", "schedule", s.Name, "err", err)
	}
	return Timing{}, false
}

// spawn executes a claimed run in the background.
func (r *SchedulerRunner) spawn(s store.Schedule, run store.ScheduleRun) {
	r.running.Add(1)
	r.active.Add(1)
	go func() {
		defer r.running.Done()
		defer r.active.Add(-1)
		r.Runs.Execute(r.runContext(), s, run)
	}()
}

// runContext is the parent context of runs: cancelled by Stop, or
// Background when RunDue is driven without Start (tests).
func (r *SchedulerRunner) runContext() context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.runCtx == nil {
		return context.Background()
	}
	return r.runCtx
}

func (r *SchedulerRunner) logClaimErr(s store.Schedule, err error) {
	if errors.Is(err, store.ErrScheduleMoved) {
		return // another tick or process took this occurrence
	}
	r.Log.Error("claiming a schedule run failed", "schedule", s.Name, "err", err)
}

func nextPtr(t Timing, after time.Time) *time.Time {
	if n, ok := t.Next(after); ok {
		return &n
	}
	return nil
}
