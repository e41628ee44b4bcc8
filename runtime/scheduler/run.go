package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nagent/nagent/runtime/chat"
	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/store"
)

// Run triggers: why an occurrence ran.
const (
	TriggerTick    = "tick"     // it fell due while the runner was running
	TriggerCatchUp = "catch_up" // it fell due while nagent was down
	TriggerManual  = "manual"   // `nagent schedule run`
)

// errRunTimeout is the cause of a run's context ending at RunTimeout.
var errRunTimeout = errors.New("scheduler: run timeout")

// ScheduleRunService records and runs one occurrence of a schedule:
// claim (single-flight per schedule), execute, record the outcome, deliver.
type ScheduleRunService struct {
	DB         *store.DB
	Executor   Executor
	Delivery   *ScheduleOutboundDelivery
	Now        func() time.Time
	RunTimeout time.Duration
	Log        *slog.Logger
}

// Run claims the occurrence of s scheduled for at and, unless another run
// of s is still running (then the occurrence is recorded as
// skipped_overlap), runs and delivers it before returning its final record.
// advance moves the schedule to its next occurrence in the same transaction
// as the claim. note is kept on the record.
func (r *ScheduleRunService) Run(ctx context.Context, s store.Schedule, trigger string, at time.Time, advance *store.ScheduleAdvance, note string) (store.ScheduleRun, error) {
	run, err := r.Claim(ctx, s, trigger, at, advance, note)
	if err != nil || run.Status != store.RunRunning {
		return run, err
	}
	return r.Execute(ctx, s, run), nil
}

// Claim records the occurrence: running, or skipped_overlap.
func (r *ScheduleRunService) Claim(ctx context.Context, s store.Schedule, trigger string, at time.Time, advance *store.ScheduleAdvance, note string) (store.ScheduleRun, error) {
	now := r.Now()
	run, err := r.DB.ClaimScheduleRun(ctx, store.ScheduleClaim{
		ScheduleID: s.ID, RunID: store.NewScheduleID("run"), SessionID: chat.NewSessionID(),
		Trigger: trigger, ScheduledFor: at, Now: now, Advance: advance, Note: note,
		StaleBefore: now.Add(-r.RunTimeout), Owner: thisOwner, OwnerGone: ownerGone,
	})
	if err != nil {
		return run, err
	}
	if run.Status == store.RunSkippedOverlap {
		r.Log.Warn("schedule run skipped: the previous run is still running", "schedule", s.Name, "run_id", run.ID, "note", run.Note)
	}
	return run, nil
}

// Execute runs a claimed occurrence, records its outcome and delivers it.
// Cancelling ctx cancels the agent turn (recorded as cancelled); the
// records are written even then.
func (r *ScheduleRunService) Execute(ctx context.Context, s store.Schedule, run store.ScheduleRun) store.ScheduleRun {
	log := r.Log.With("schedule", s.Name, "run_id", run.ID, "session_id", run.SessionID)
	log.Info("schedule run started", "trigger", run.Trigger)
	runCtx, cancel := context.WithTimeoutCause(ctx, r.RunTimeout, errRunTimeout)
	defer cancel()
	if r.Executor == nil {
		run.Status, run.Error = store.RunFailed, "no model is wired into this process; run it from `nagent serve` or `nagent schedule run` with a model configured"
	} else {
		res, err := r.Executor.Execute(runCtx, s, run.ID, run.SessionID)
		switch {
		case err != nil && errors.Is(err, context.Canceled):
			run.Status, run.Error = store.RunCancelled, "cancelled before the turn started"
		case err != nil:
			run.Status, run.Error = store.RunFailed, errs.MessageOrError(err)
		case res == nil:
			run.Status, run.Error = store.RunFailed, "the executor returned no result"
		default:
			run.Status, run.Content, run.Error = res.Status, res.Content, res.Error
			if run.Status != store.RunCompleted && run.Status != store.RunCancelled {
				run.Status = store.RunFailed
			}
			if run.Status != store.RunCompleted && run.Error == "" {
				run.Error = fmt.Sprintf("turn %s (%s)", res.Status, res.Reason)
			}
		}
		if run.Status == store.RunCancelled && errors.Is(context.Cause(runCtx), errRunTimeout) {
			// The loop reports a deadline it did not set as a cancellation.
			run.Status, run.Error = store.RunFailed, fmt.Sprintf("the run timed out after %s; raise scheduler.run_timeout if it needs longer", r.RunTimeout)
		}
	}
	finished := r.Now().UTC()
	run.FinishedAt = &finished
	run.DeliveryStatus = store.DeliveryNone
	if s.DeliveryKind != "" && s.DeliveryKind != DeliverNone {
		run.DeliveryStatus = store.DeliveryPending
	}
	rec := context.WithoutCancel(ctx)
	if err := r.DB.FinishScheduleRun(rec, run); err != nil {
		log.Error("recording a schedule run failed", "err", err)
	}
	log.Info("schedule run finished", "status", run.Status)
	if run.DeliveryStatus == store.DeliveryPending {
		// Delivery outlives a stop request by the retry budget only through
		// ctx: a cancelled ctx records the delivery as failed.
		status, err := r.Delivery.Deliver(ctx, s, run)
		run.DeliveryStatus = status
		if err != nil {
			run.DeliveryError = err.Error()
		}
	}
	if final, err := r.DB.GetScheduleRun(rec, run.ID); err == nil {
		return final
	}
	return run
}
