package app

import (
	"sync"
	"time"

	"github.com/nagent/nagent/runtime/scheduler"
)

// lazyScheduler builds the App's scheduler on first use, so that commands
// that never touch schedules pay nothing for it.
type lazyScheduler struct {
	once sync.Once
	s    *scheduler.Scheduler
}

// Scheduler returns the scheduler wired to this App: scheduled runs go
// through Chat as cron turns (safe_only tools, confirmations denied), and
// results go out through its delivery, to which the Feishu adapter adds
// its ChatSender. It is built, not started: `nagent serve` starts it when
// scheduler.enabled is set. Its clock is the store's (Options.Now).
func (a *App) Scheduler() *scheduler.Scheduler {
	a.sched.once.Do(func() {
		cfg := a.Config.Scheduler
		now := a.DB.Now
		if now == nil {
			now = time.Now
		}
		a.sched.s = scheduler.New(a.DB, scheduler.Options{
			Executor: &scheduler.ScheduledAgentExecutor{Chat: a.Chat},
			Delivery: &scheduler.ScheduleOutboundDelivery{
				MaxAttempts: cfg.Delivery.MaxAttempts,
				BaseDelay:   cfg.Delivery.BaseDelay.Std(),
				MaxDelay:    cfg.Delivery.MaxDelay.Std(),
				Timeout:     cfg.Delivery.Timeout.Std(),
			},
			Now:        now,
			Tick:       cfg.Tick.Std(),
			RunTimeout: cfg.RunTimeout.Std(),
			Log:        a.Log.With("component", "scheduler"),
		})
	})
	return a.sched.s
}

// stopScheduler stops a started scheduler, cancelling runs at once.
func (a *App) stopScheduler() {
	if a.sched.s != nil {
		a.sched.s.Stop(0)
	}
}
