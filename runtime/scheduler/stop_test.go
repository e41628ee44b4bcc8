package scheduler_test

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/scheduler"
	"github.com/nagent/nagent/store"
)

// Stopping a scheduler with nothing running warns about nothing, even with
// no grace and when stopped twice (serve, then App.Close); the tick is
// logged as a duration string, not nanoseconds.
func TestStopWithNothingRunningIsQuiet(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "nagent.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := range 20 {
		var logs bytes.Buffer
		s := scheduler.New(db, scheduler.Options{Tick: time.Second,
			Log: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		s.Stop(0)
		s.Stop(0)
		if strings.Contains(logs.String(), "cancelling runs") {
			t.Fatalf("stop %d with nothing running warned:\n%s", i, logs.String())
		}
		if !strings.Contains(logs.String(), `"tick":"1s"`) {
			t.Fatalf("start log lacks \"tick\":\"1s\":\n%s", logs.String())
		}
	}
}
