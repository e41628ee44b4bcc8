package scheduler_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/scheduler"
)

// BenchmarkRunDueIdle is the cost of one tick over 1000 schedules none of
// which is due: what a running server pays every scheduler.tick. (The due
// query is indexed: with no schedules at all it costs about the same.)
func BenchmarkRunDueIdle(b *testing.B) {
	e := newEnv(b)
	for i := range 1000 {
		e.add(b, scheduler.NewSchedule{Name: fmt.Sprintf("s%d", i), Kind: "every", Spec: "1h"})
	}
	e.clock.Set(t0.Add(30 * time.Minute))
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if err := e.sched.Runner.RunDue(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCronNext is the cost of computing a cron schedule's next
// occurrence in a time zone with DST.
func BenchmarkCronNext(b *testing.B) {
	timing, err := scheduler.ParseTiming("cron", "30 2 * * 1-5", "America/New_York", time.Time{})
	if err != nil {
		b.Fatal(err)
	}
	after := t0
	for b.Loop() {
		after, _ = timing.Next(after)
	}
}
