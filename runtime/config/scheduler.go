package config

import (
	"fmt"
	"time"
)

// Scheduler configures scheduled runs (runtime/scheduler), under scheduler
// in config.yaml.
type Scheduler struct {
	// Enabled starts the scheduler in `nagent serve` (default true).
	Enabled bool `yaml:"enabled"`
	// Tick is how often due schedules are looked for (default 1s).
	Tick Duration `yaml:"tick"`
	// RunTimeout bounds one scheduled run (default 30m).
	RunTimeout Duration `yaml:"run_timeout"`
	// Delivery tunes the retries of result deliveries.
	Delivery SchedulerDelivery `yaml:"delivery"`
}

// SchedulerDelivery tunes ScheduleOutboundDelivery.
type SchedulerDelivery struct {
	// MaxAttempts bounds the attempts of one delivery (default 5).
	MaxAttempts int `yaml:"max_attempts"`
	// BaseDelay is the wait after the first failed attempt; it doubles up
	// to MaxDelay (defaults 2s and 1m).
	BaseDelay Duration `yaml:"base_delay"`
	MaxDelay  Duration `yaml:"max_delay"`
	// Timeout bounds one attempt (default 10s).
	Timeout Duration `yaml:"timeout"`
}

func defaultScheduler() Scheduler {
	return Scheduler{
		Enabled:    true,
		Tick:       Duration(time.Second),
		RunTimeout: Duration(30 * time.Minute),
		Delivery: SchedulerDelivery{
			MaxAttempts: 5,
			BaseDelay:   Duration(2 * time.Second),
			MaxDelay:    Duration(time.Minute),
			Timeout:     Duration(10 * time.Second),
		},
	}
}

// Validate reports the first invalid scheduler setting.
func (s Scheduler) Validate() error {
	switch {
	case s.Tick.Std() < 10*time.Millisecond:
		return fmt.Errorf("config: scheduler.tick is %s; it must be at least 10ms", s.Tick.Std())
	case s.RunTimeout.Std() <= 0:
		return fmt.Errorf("config: scheduler.run_timeout is %s; it must be positive, e.g. 30m", s.RunTimeout.Std())
	case s.Delivery.MaxAttempts < 1:
		return fmt.Errorf("config: scheduler.delivery.max_attempts is %d; it must be at least 1", s.Delivery.MaxAttempts)
	case s.Delivery.BaseDelay.Std() < 0 || s.Delivery.MaxDelay.Std() < 0 || s.Delivery.Timeout.Std() <= 0:
		return fmt.Errorf("config: scheduler.delivery delays must not be negative, and its timeout must be positive")
	}
	return nil
}
