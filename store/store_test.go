package store_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/store"
)

// MustOpenDB opens a fresh database file in a temporary directory.
func MustOpenDB(tb testing.TB) *store.DB {
	tb.Helper()
	db, err := store.Open(context.Background(), filepath.Join(tb.TempDir(), "nagent.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

func mustUpdate(tb testing.TB, db *store.DB, fn func(tx *store.Tx) error) {
	tb.Helper()
	if err := db.Update(context.Background(), fn); err != nil {
		tb.Fatal(err)
	}
}

func TestSessionMemoryRoundTrip(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)

	mustUpdate(t, db, func(tx *store.Tx) error {
		created, err := tx.CreateSession(ctx, store.Session{ID: "s1", Source: "cli"})
		if err != nil || !created {
			t.Fatalf("CreateSession = %v, %v; want created", created, err)
		}
		again, err := tx.CreateSession(ctx, store.Session{ID: "s1", Source: "api"})
		if err != nil || again {
			t.Fatalf("second CreateSession = %v, %v; want ignored", again, err)
		}
		got, err := tx.LockExternalMemory(ctx, "s1", []string{"builtin"})
		if err != nil || len(got) != 1 || got[0] != "builtin" {
			t.Fatalf("LockExternalMemory = %v, %v", got, err)
		}
		got, err = tx.LockExternalMemory(ctx, "s1", []string{"other"})
		if err != nil || len(got) != 1 || got[0] != "builtin" {
			t.Fatalf("second LockExternalMemory = %v, %v; first write must win", got, err)
		}
		return tx.AppendMessages(ctx, "s1",
			&store.Message{Role: "user", Content: "hi"},
			&store.Message{Role: "assistant", ToolCalls: json.RawMessage(`[{"id":"c1","type":"function","function":{"name":"t","arguments":"{}"}}]`)},
			&store.Message{Role: "tool", Content: `{"ok":true}`, ToolCallID: "c1", Name: "t"},
		)
	})
	mustUpdate(t, db, func(tx *store.Tx) error {
		if err := tx.SaveToolCall(ctx, store.ToolCall{SessionID: "s1", ID: "c1", Name: "t", Arguments: "{}", Status: "success", Result: `{"ok":true}`, DurationMS: 3}); err != nil {
			return err
		}
		if err := tx.SaveTaskState(ctx, store.TaskState{SessionID: "s1", Status: "running", IterationCount: 1}); err != nil {
			return err
		}
		if err := tx.SaveTaskState(ctx, store.TaskState{SessionID: "s1", Status: "completed", IterationCount: 2}); err != nil {
			return err
		}
		if err := tx.SaveSummary(ctx, "s1", "first"); err != nil {
			return err
		}
		return tx.SaveSummary(ctx, "s1", "second")
	})

	sess, err := db.GetSession(ctx, "s1")
	if err != nil || sess.Source != "cli" {
		t.Fatalf("GetSession = %+v, %v", sess, err)
	}
	msgs, err := db.ListMessages(ctx, "s1")
	if err != nil || len(msgs) != 3 {
		t.Fatalf("ListMessages = %d, %v", len(msgs), err)
	}
	for i, m := range msgs {
		if m.Seq != i+1 {
			t.Errorf("message %d seq = %d", i, m.Seq)
		}
	}
	if msgs[1].ToolCalls == nil || msgs[2].ToolCallID != "c1" {
		t.Errorf("tool call linkage lost: %+v %+v", msgs[1], msgs[2])
	}
	calls, _ := db.ListToolCalls(ctx, "s1")
	if len(calls) != 1 || calls[0].Status != "success" || calls[0].DurationMS != 3 {
		t.Errorf("ListToolCalls = %+v", calls)
	}
	ts, _ := db.GetTaskState(ctx, "s1")
	if ts.Status != "completed" || ts.IterationCount != 2 {
		t.Errorf("task state = %+v", ts)
	}
	sum, _ := db.GetSummary(ctx, "s1")
	if sum.Content != "second" {
		t.Errorf("summary = %q, want overwritten", sum.Content)
	}

	if err := db.DeleteSession(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if msgs, _ := db.ListMessages(ctx, "s1"); len(msgs) != 0 {
		t.Errorf("messages survive delete: %d", len(msgs))
	}
	if _, err := db.GetSession(ctx, "s1"); errs.Code(err) != errs.ENOTFOUND {
		t.Errorf("GetSession after delete: %v", err)
	}
	if err := db.DeleteSession(ctx, "s1"); errs.Code(err) != errs.ENOTFOUND {
		t.Errorf("second delete: %v", err)
	}
}

func TestUpdateRollsBackOnError(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	err := db.Update(ctx, func(tx *store.Tx) error {
		if _, err := tx.CreateSession(ctx, store.Session{ID: "s1", Source: "cli"}); err != nil {
			return err
		}
		// A message for a session that does not exist violates the foreign key.
		return tx.AppendMessages(ctx, "missing", &store.Message{Role: "user", Content: "x"})
	})
	if err == nil {
		t.Fatal("want foreign key error")
	}
	if _, err := db.GetSession(ctx, "s1"); errs.Code(err) != errs.ENOTFOUND {
		t.Errorf("session written by a failed transaction survived: %v", err)
	}
}

func TestReopenKeepsDataAndSchema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "nagent.db")
	db, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	mustUpdate(t, db, func(tx *store.Tx) error {
		_, err := tx.CreateSession(ctx, store.Session{ID: "keep", Source: "cli"})
		return err
	})
	db.Close()

	db, err = store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetSession(ctx, "keep"); err != nil {
		t.Fatal(err)
	}
	list, err := db.ListSessions(ctx, store.SessionFilter{Source: "cli"})
	if err != nil || len(list) != 1 {
		t.Fatalf("ListSessions = %v, %v", list, err)
	}
}

func TestInterruptStaleTurns(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	states := map[string]struct {
		status string
		at     time.Time
	}{
		"orphan":   {"running", t0},                       // its process died an hour ago
		"live":     {"running", t0.Add(55 * time.Minute)}, // stepped five minutes ago
		"finished": {"completed", t0},
	}
	for id, st := range states {
		db.Now = func() time.Time { return st.at }
		mustUpdate(t, db, func(tx *store.Tx) error {
			if _, err := tx.CreateSession(ctx, store.Session{ID: id, Source: "cli"}); err != nil {
				return err
			}
			return tx.SaveTaskState(ctx, store.TaskState{SessionID: id, Status: st.status})
		})
	}
	db.Now = func() time.Time { return t0.Add(time.Hour) }
	n, err := db.InterruptStaleTurns(ctx, t0.Add(50*time.Minute))
	if err != nil || n != 1 {
		t.Fatalf("InterruptStaleTurns = %d, %v; want 1", n, err)
	}
	want := map[string]string{"orphan": "failed", "live": "running", "finished": "completed"}
	for id, status := range want {
		got, err := db.GetTaskState(ctx, id)
		if err != nil || got.Status != status {
			t.Errorf("%s: %+v, %v; want %s", id, got, err, status)
		}
	}
	if got, _ := db.GetTaskState(ctx, "orphan"); !strings.Contains(got.Error, "interrupted") {
		t.Errorf("orphan error = %q", got.Error)
	}
}
