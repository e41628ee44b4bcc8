//go:build linux

package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/sandbox"
	"github.com/nagent/nagent/runtime/sandbox/sandboxtest"
	"github.com/nagent/nagent/store"
)

// clock is a settable clock for idle timeouts.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// events records the state changes a manager emits.
type events struct {
	mu  sync.Mutex
	all []sandbox.Event
	ch  chan sandbox.Event
}

func record(m *sandbox.Manager) *events {
	e := &events{ch: make(chan sandbox.Event, 100)}
	m.Subscribe(func(ev sandbox.Event) {
		e.mu.Lock()
		e.all = append(e.all, ev)
		e.mu.Unlock()
		select {
		case e.ch <- ev:
		default:
		}
	})
	return e
}

func (e *events) states(session string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.all {
		if ev.SessionID == session {
			out = append(out, string(ev.To))
		}
	}
	return out
}

func newLifecycleHarness(t *testing.T, clk *clock) *sandboxtest.Harness {
	b := requireLocal(t)
	opts := sandbox.Options{IdleTimeout: time.Minute, ReapInterval: time.Hour} // the test reaps by hand
	if clk != nil {
		opts.Now = clk.Now
	}
	return sandboxtest.NewHarness(t, b, opts)
}

func released(t *testing.T, db *store.DB, session string) *store.ReleasedSandbox {
	t.Helper()
	rows, err := db.ListReleasedSandboxes(context.Background(), session, 10)
	if err != nil || len(rows) != 1 {
		t.Fatalf("released_sandboxes rows for %s = %d, %v; want 1", session, len(rows), err)
	}
	return rows[0]
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestLifecycleIdleRelease(t *testing.T) {
	clk := &clock{now: time.Date(2026, 6, 27, 12, 0, 0, 0, time.UTC)}
	h := newLifecycleHarness(t, clk)
	ev := record(h.Manager)
	ctx := context.Background()
	h.Exec(t, "idle", "print(1)", time.Minute, 0)
	if live, err := h.DB.ListLiveSandboxes(ctx); err != nil || len(live) != 1 || live[0].State != "active" {
		t.Fatalf("live rows = %+v, %v", live, err)
	}

	clk.Add(59 * time.Second)
	h.Manager.ReapOnce(ctx)
	if len(h.Manager.List()) != 1 {
		t.Fatal("released before the idle timeout")
	}
	clk.Add(2 * time.Second)
	h.Manager.ReapOnce(ctx)
	if n := len(h.Manager.List()); n != 0 {
		t.Fatalf("%d sandboxes after the idle timeout, want 0", n)
	}
	r := released(t, h.DB, "idle")
	if r.Reason != sandbox.ReasonIdle || r.Forced || r.Executions != 1 || r.Backend != "local" {
		t.Errorf("release row = %+v", r)
	}
	if live, _ := h.DB.ListLiveSandboxes(ctx); len(live) != 0 {
		t.Errorf("live rows after release = %+v", live)
	}
	want := []string{"active", "executing", "active", "releasing", "released"}
	if got := ev.states("idle"); !equal(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
	// The next call gets a new sandbox.
	if res := h.Exec(t, "idle", "print(2)", time.Minute, 0); res.Reused {
		t.Error("a released sandbox was reused")
	}
}

func TestLifecycleForceReleaseDuringExecution(t *testing.T) {
	h := newLifecycleHarness(t, nil)
	ev := record(h.Manager)
	ctx := context.Background()

	type outcome struct {
		res sandbox.Result
		err error
	}
	done := make(chan outcome, 1)
	start := time.Now()
	go func() {
		res, err := h.Manager.Execute(ctx, sandbox.ExecuteRequest{SessionID: "force", Timeout: 2 * time.Minute,
			Code: "import time\nopen('/scratch/started', 'w').write('1')\ntime.sleep(120)\n"})
		done <- outcome{res, err}
	}()
	// Wait until the code runs: its marker file appears in the call's scratch dir.
	marker := filepath.Join(h.Home, "sandboxes", "force", "calls", "1", "started")
	for deadline := time.Now().Add(30 * time.Second); ; {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the code never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	relStart := time.Now()
	if err := h.Manager.Release(ctx, "force", true, sandbox.ReasonManual); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(relStart); d > 15*time.Second {
		t.Errorf("a forced release took %s", d)
	}
	out := <-done
	if out.err == nil && out.res.ExitReason != sandbox.ExitKilled {
		t.Errorf("the execution ended with %+v, want killed", out.res)
	}
	if time.Since(start) > 60*time.Second {
		t.Error("the execution was not killed at once")
	}
	r := released(t, h.DB, "force")
	if r.Reason != sandbox.ReasonManual || !r.Forced {
		t.Errorf("release row = %+v", r)
	}
	hist, _ := h.DB.ListSandboxExecutions(ctx, "force", 10)
	if len(hist) != 1 || hist[0].ExitReason != "killed" {
		t.Errorf("history = %+v, want one killed execution", hist)
	}
	want := []string{"active", "executing", "releasing", "released"}
	if got := ev.states("force"); !equal(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
}

func TestLifecycleReleaseOnSessionDelete(t *testing.T) {
	h := newLifecycleHarness(t, nil)
	ctx := context.Background()
	if err := h.DB.Update(ctx, func(tx *store.Tx) error {
		_, err := tx.CreateSession(ctx, store.Session{ID: "doomed", Source: "cli"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	h.Exec(t, "doomed", "print(1)", time.Minute, 0)
	h.Exec(t, "never-stored", "print(1)", time.Minute, 0) // no session row: only idle release applies
	h.Manager.ReapOnce(ctx)
	if n := len(h.Manager.List()); n != 2 {
		t.Fatalf("%d sandboxes before the delete, want 2", n)
	}
	// Deleted as `nagent session delete` would, from another process: only
	// the database changes.
	other, err := store.Open(ctx, h.DB.Path())
	if err != nil {
		t.Fatal(err)
	}
	if err := other.DeleteSession(ctx, "doomed"); err != nil {
		t.Fatal(err)
	}
	other.Close()
	h.Manager.ReapOnce(ctx)
	list := h.Manager.List()
	if len(list) != 1 || list[0].SessionID != "never-stored" {
		t.Fatalf("after the delete: %+v", list)
	}
	if r := released(t, h.DB, "doomed"); r.Reason != sandbox.ReasonSessionDeleted {
		t.Errorf("release row = %+v", r)
	}
}

func TestLifecycleReleaseRequestedByAnotherProcess(t *testing.T) {
	h := newLifecycleHarness(t, nil)
	ctx := context.Background()
	h.Exec(t, "asked", "print(1)", time.Minute, 0)
	if err := h.DB.RequestSandboxRelease(ctx, "asked", false, "manual"); err != nil {
		t.Fatal(err)
	}
	h.Manager.ReapOnce(ctx)
	if n := len(h.Manager.List()); n != 0 {
		t.Fatalf("%d sandboxes after the request, want 0", n)
	}
	if r := released(t, h.DB, "asked"); r.Reason != "manual" {
		t.Errorf("release row = %+v", r)
	}
}

// TestLifecycleSessionLock: concurrent executions of one session run one
// at a time in the same sandbox; different sessions get their own.
func TestLifecycleSessionLock(t *testing.T) {
	h := newLifecycleHarness(t, nil)
	var wg sync.WaitGroup
	results := make([]sandbox.Result, 6)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			session := "s" + strconv.Itoa(i%2)
			// Each run reports when it was inside; runs of one session must not overlap.
			results[i] = h.Exec(t, session, "import time\nprint(time.time())\ntime.sleep(0.2)\nprint(time.time())", time.Minute, 0)
		}()
	}
	wg.Wait()
	type span struct{ from, to float64 }
	spans := map[string][]span{}
	for _, r := range results {
		var sp span
		if _, err := fmt.Sscan(r.Stdout, &sp.from, &sp.to); err != nil {
			t.Fatalf("stdout %q: %v", r.Stdout, err)
		}
		for _, o := range spans[r.SessionID] {
			if sp.from < o.to && o.from < sp.to {
				t.Errorf("session %s: executions overlapped: %v and %v", r.SessionID, sp, o)
			}
		}
		spans[r.SessionID] = append(spans[r.SessionID], sp)
	}
	seqs := map[string]map[int]bool{}
	for _, r := range results {
		if r.ExitReason != sandbox.ExitOK {
			t.Errorf("result = %+v", r)
		}
		if seqs[r.SessionID] == nil {
			seqs[r.SessionID] = map[int]bool{}
		}
		if seqs[r.SessionID][r.Seq] {
			t.Errorf("session %s reused call number %d", r.SessionID, r.Seq)
		}
		seqs[r.SessionID][r.Seq] = true
	}
	if n := len(h.Manager.List()); n != 2 {
		t.Errorf("%d sandboxes, want 2", n)
	}
	for _, info := range h.Manager.List() {
		if info.Executions != 3 {
			t.Errorf("%s ran %d executions, want 3", info.SessionID, info.Executions)
		}
	}
}
