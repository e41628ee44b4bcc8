package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nagent/nagent/runtime/errs"
)

// Schedule run statuses.
const (
	RunRunning        = "running"
	RunCompleted      = "completed"
	RunFailed         = "failed"
	RunCancelled      = "cancelled"
	RunSkippedOverlap = "skipped_overlap" // the previous run of the schedule was still running
	RunSkippedMissed  = "skipped_missed"  // due while nagent was not running, with catch_up skip
)

// Delivery statuses of a schedule run.
const (
	DeliveryNone      = "none" // nothing to deliver: no target, or the run was skipped
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
)

// ErrScheduleMoved is returned by ClaimScheduleRun when the schedule's
// next_run_at is no longer the one the claim expected: another tick or
// process claimed that occurrence first.
var ErrScheduleMoved = errors.New("store: schedule occurrence already claimed")

// Schedule is one scheduled agent run: when it fires, what it asks and where
// the answer goes.
type Schedule struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Kind is cron, every or once; Spec is its expression, duration or time.
	Kind     string `json:"kind"`
	Spec     string `json:"spec"`
	Timezone string `json:"timezone"`
	Prompt   string `json:"prompt"`
	// DeliveryKind is none, webhook, inbox or feishu; DeliveryTarget is the
	// webhook URL or Feishu chat id.
	DeliveryKind   string `json:"delivery_kind"`
	DeliveryTarget string `json:"delivery_target,omitempty"`
	Enabled        bool   `json:"enabled"`
	// CatchUp is skip or run_once: what happens to runs that fell due
	// while nagent was not running.
	CatchUp   string     `json:"catch_up"`
	NextRunAt *time.Time `json:"next_run_at"`
	LastRunAt *time.Time `json:"last_run_at"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
}

// ScheduleRun is the record of one occurrence of a schedule, run or skipped.
type ScheduleRun struct {
	ID         string `json:"id"`
	ScheduleID string `json:"schedule_id"`
	// Trigger is tick (fell due), catch_up (missed while down) or manual.
	Trigger      string     `json:"trigger"`
	ScheduledFor time.Time  `json:"scheduled_for"`
	StartedAt    *time.Time `json:"started_at"`
	FinishedAt   *time.Time `json:"finished_at"`
	Status       string     `json:"status"`
	SessionID    string     `json:"session_id"`
	Content      string     `json:"content"`
	Error        string     `json:"error,omitempty"`
	// Note explains a skip or a catch-up, e.g. how many runs were missed.
	Note             string `json:"note,omitempty"`
	DeliveryStatus   string `json:"delivery_status"`
	DeliveryAttempts int    `json:"delivery_attempts"`
	DeliveryError    string `json:"delivery_error,omitempty"`
}

// InboxMessage is one result delivered to the dashboard inbox.
type InboxMessage struct {
	ID           string     `json:"id"`
	ScheduleID   string     `json:"schedule_id"`
	ScheduleName string     `json:"schedule_name"`
	RunID        string     `json:"run_id"`
	SessionID    string     `json:"session_id"`
	Status       string     `json:"status"`
	Content      string     `json:"content"`
	CreatedAt    time.Time  `json:"created_at"`
	ReadAt       *time.Time `json:"read_at"`
}

// NewScheduleID returns a fresh id with the given prefix (sch, run, inb).
func NewScheduleID(prefix string) string {
	var b [10]byte
	rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}

func msOf(t time.Time) int64 { return t.UnixMilli() }

func msPtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UnixMilli()
}

func timeOf(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := time.UnixMilli(v.Int64).UTC()
	return &t
}

func notFoundSchedule(key string) error {
	return errs.Errorf(errs.ENOTFOUND, "no schedule %s; list them with: nagent schedule list", key)
}

// CreateSchedule stores a new schedule. A name in use is an ECONFLICT error.
func (db *DB) CreateSchedule(ctx context.Context, s Schedule) error {
	return db.Update(ctx, func(tx *Tx) error {
		_, err := tx.tx.ExecContext(ctx, `INSERT INTO schedules
			(id, name, kind, spec, timezone, prompt, delivery_kind, delivery_target, enabled, catch_up,
			 next_run_at, last_run_at, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			s.ID, s.Name, s.Kind, s.Spec, s.Timezone, s.Prompt, s.DeliveryKind, s.DeliveryTarget, s.Enabled,
			s.CatchUp, msPtr(s.NextRunAt), msPtr(s.LastRunAt), s.CreatedAt.UTC(), tx.now)
		if err != nil {
			if strings.Contains(err.Error(), "UNIQUE constraint failed: schedules.name") {
				return errs.Errorf(errs.ECONFLICT, "a schedule named %s already exists; pick another name or remove it first", s.Name)
			}
			return fmt.Errorf("store.CreateSchedule: %s: %w", s.Name, err)
		}
		return nil
	})
}

const scheduleColumns = `id, name, kind, spec, timezone, prompt, delivery_kind, delivery_target, enabled, catch_up,
	next_run_at, last_run_at, created_at, updated_at`

func scanSchedule(row interface{ Scan(...any) error }) (Schedule, error) {
	var s Schedule
	var next, last sql.NullInt64
	err := row.Scan(&s.ID, &s.Name, &s.Kind, &s.Spec, &s.Timezone, &s.Prompt, &s.DeliveryKind, &s.DeliveryTarget,
		&s.Enabled, &s.CatchUp, &next, &last, &s.CreatedAt, &s.UpdatedAt)
	s.NextRunAt, s.LastRunAt = timeOf(next), timeOf(last)
	return s, err
}

func (db *DB) querySchedules(ctx context.Context, op, where string, args ...any) ([]Schedule, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT `+scheduleColumns+` FROM schedules `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("store.%s: %w", op, err)
	}
	defer rows.Close()
	var out []Schedule
	for rows.Next() {
		s, err := scanSchedule(rows)
		if err != nil {
			return nil, fmt.Errorf("store.%s: %w", op, err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// ListSchedules returns every schedule by name.
func (db *DB) ListSchedules(ctx context.Context) ([]Schedule, error) {
	return db.querySchedules(ctx, "ListSchedules", `ORDER BY name`)
}

// DueSchedules returns the enabled schedules whose next run is at or before
// now, earliest first.
func (db *DB) DueSchedules(ctx context.Context, now time.Time) ([]Schedule, error) {
	return db.querySchedules(ctx, "DueSchedules",
		`WHERE enabled = 1 AND next_run_at IS NOT NULL AND next_run_at <= ? ORDER BY next_run_at`, msOf(now))
}

// GetSchedule returns the schedule whose id or name is key, or an ENOTFOUND
// error.
func (db *DB) GetSchedule(ctx context.Context, key string) (Schedule, error) {
	row := db.read.QueryRowContext(ctx, `SELECT `+scheduleColumns+` FROM schedules
		WHERE id = ? OR name = ? ORDER BY id = ? DESC LIMIT 1`, key, key, key)
	s, err := scanSchedule(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Schedule{}, notFoundSchedule(key)
	}
	if err != nil {
		return Schedule{}, fmt.Errorf("store.GetSchedule: %w", err)
	}
	return s, nil
}

// SetScheduleEnabled pauses or resumes the schedule with the given id and
// sets its next run (nil: none).
func (db *DB) SetScheduleEnabled(ctx context.Context, id string, enabled bool, next *time.Time) error {
	return db.Update(ctx, func(tx *Tx) error {
		res, err := tx.tx.ExecContext(ctx, `UPDATE schedules SET enabled = ?, next_run_at = ?, updated_at = ? WHERE id = ?`,
			enabled, msPtr(next), tx.now, id)
		if err != nil {
			return fmt.Errorf("store.SetScheduleEnabled: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notFoundSchedule(id)
		}
		return nil
	})
}

// DeleteSchedule removes the schedule with the given id and its runs (inbox
// messages stay).
func (db *DB) DeleteSchedule(ctx context.Context, id string) error {
	return db.Update(ctx, func(tx *Tx) error {
		res, err := tx.tx.ExecContext(ctx, `DELETE FROM schedules WHERE id = ?`, id)
		if err != nil {
			return fmt.Errorf("store.DeleteSchedule: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notFoundSchedule(id)
		}
		return nil
	})
}

// ScheduleClaim asks ClaimScheduleRun to record one occurrence of a schedule.
type ScheduleClaim struct {
	ScheduleID   string
	RunID        string
	SessionID    string
	Trigger      string
	ScheduledFor time.Time
	Now          time.Time
	// Advance, when set, moves the schedule's next_run_at from From to To
	// (nil: no further run) and its last_run_at to ScheduledFor, in the same
	// transaction. The claim fails with ErrScheduleMoved when next_run_at is
	// no longer From.
	Advance *ScheduleAdvance
	// Status, when set (skipped_missed), records the occurrence with that
	// status instead of running it.
	Status string
	Note   string
	// StaleBefore: a running run started before it is dead (its process
	// stopped) and does not count as an overlap.
	StaleBefore time.Time
	// Owner names the process that runs it ("<host>:<pid>"), so that a
	// restarted server can tell its dead predecessor's runs from live ones.
	Owner string
	// OwnerGone, when set, reports whether the owner of a running run of
	// the schedule is gone; such a run is failed rather than overlapped.
	OwnerGone func(owner string) bool
}

// ScheduleAdvance moves a schedule to its next occurrence.
type ScheduleAdvance struct {
	From time.Time
	To   *time.Time
}

// ClaimScheduleRun records one occurrence of a schedule in one transaction:
// it advances the schedule (Advance) and inserts the run row. The row is
// running when the occurrence may run, skipped_overlap when another run of
// the schedule is still running (runs are single-flight per schedule), or
// c.Status. The single writer connection serialises claims across
// goroutines, and the running-row check serialises them across processes.
func (db *DB) ClaimScheduleRun(ctx context.Context, c ScheduleClaim) (ScheduleRun, error) {
	run := ScheduleRun{
		ID: c.RunID, ScheduleID: c.ScheduleID, Trigger: c.Trigger, ScheduledFor: c.ScheduledFor.UTC(),
		Status: c.Status, Note: c.Note, DeliveryStatus: DeliveryNone,
	}
	err := db.Update(ctx, func(tx *Tx) error {
		if a := c.Advance; a != nil {
			res, err := tx.tx.ExecContext(ctx, `UPDATE schedules SET next_run_at = ?, last_run_at = ?, updated_at = ?
				WHERE id = ? AND next_run_at = ?`, msPtr(a.To), msOf(c.ScheduledFor), tx.now, c.ScheduleID, msOf(a.From))
			if err != nil {
				return fmt.Errorf("store.ClaimScheduleRun: %w", err)
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return ErrScheduleMoved
			}
		} else if c.Status == "" {
			if _, err := tx.tx.ExecContext(ctx, `UPDATE schedules SET last_run_at = ?, updated_at = ? WHERE id = ?`,
				msOf(c.ScheduledFor), tx.now, c.ScheduleID); err != nil {
				return fmt.Errorf("store.ClaimScheduleRun: %w", err)
			}
		}
		if run.Status == "" {
			var running, owner string
			err := tx.tx.QueryRowContext(ctx, `SELECT id, owner FROM schedule_runs
				WHERE schedule_id = ? AND status = 'running' AND started_at >= ? LIMIT 1`,
				c.ScheduleID, msOf(c.StaleBefore)).Scan(&running, &owner)
			if err == nil && c.OwnerGone != nil && c.OwnerGone(owner) {
				// Its process died mid-run: fail it, and this run may go.
				if _, err := tx.tx.ExecContext(ctx, `UPDATE schedule_runs SET status = 'failed', finished_at = ?,
					error = 'interrupted: the nagent process running it stopped', delivery_status = 'none'
					WHERE id = ?`, msOf(c.Now), running); err != nil {
					return fmt.Errorf("store.ClaimScheduleRun: %w", err)
				}
				err = sql.ErrNoRows
			}
			switch {
			case errors.Is(err, sql.ErrNoRows):
				run.Status, run.SessionID = RunRunning, c.SessionID
				started := c.Now.UTC()
				run.StartedAt = &started
			case err != nil:
				return fmt.Errorf("store.ClaimScheduleRun: %w", err)
			default:
				run.Status = RunSkippedOverlap
				run.Note = "run " + running + " of this schedule was still running"
			}
		}
		if run.Status != RunRunning {
			finished := c.Now.UTC()
			run.FinishedAt = &finished
		}
		_, err := tx.tx.ExecContext(ctx, `INSERT INTO schedule_runs
			(id, schedule_id, trigger_kind, scheduled_for, started_at, finished_at, status, session_id, note, delivery_status, owner)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			run.ID, run.ScheduleID, run.Trigger, msOf(run.ScheduledFor), msPtr(run.StartedAt), msPtr(run.FinishedAt),
			run.Status, run.SessionID, run.Note, run.DeliveryStatus, c.Owner)
		if err != nil {
			if strings.Contains(err.Error(), "FOREIGN KEY") {
				return notFoundSchedule(c.ScheduleID)
			}
			return fmt.Errorf("store.ClaimScheduleRun: %w", err)
		}
		return nil
	})
	return run, err
}

// FinishScheduleRun records the outcome of a running run. deliveryStatus is
// pending when a delivery follows, none otherwise.
func (db *DB) FinishScheduleRun(ctx context.Context, r ScheduleRun) error {
	return db.Update(ctx, func(tx *Tx) error {
		_, err := tx.tx.ExecContext(ctx, `UPDATE schedule_runs SET status = ?, content = ?, error = ?, finished_at = ?,
			delivery_status = ? WHERE id = ?`,
			r.Status, r.Content, r.Error, msPtr(r.FinishedAt), r.DeliveryStatus, r.ID)
		if err != nil {
			return fmt.Errorf("store.FinishScheduleRun: %w", err)
		}
		return nil
	})
}

// UpdateRunDelivery records the delivery state of a run after an attempt.
func (db *DB) UpdateRunDelivery(ctx context.Context, runID, status string, attempts int, deliveryErr string) error {
	return db.Update(ctx, func(tx *Tx) error {
		_, err := tx.tx.ExecContext(ctx, `UPDATE schedule_runs SET delivery_status = ?, delivery_attempts = ?,
			delivery_error = ? WHERE id = ?`, status, attempts, deliveryErr, runID)
		if err != nil {
			return fmt.Errorf("store.UpdateRunDelivery: %w", err)
		}
		return nil
	})
}

// RunningRunOwners returns the owners of the runs still marked running.
func (db *DB) RunningRunOwners(ctx context.Context) ([]string, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT DISTINCT owner FROM schedule_runs WHERE status = 'running'`)
	if err != nil {
		return nil, fmt.Errorf("store.RunningRunOwners: %w", err)
	}
	defer rows.Close()
	var owners []string
	for rows.Next() {
		var o string
		if err := rows.Scan(&o); err != nil {
			return nil, fmt.Errorf("store.RunningRunOwners: %w", err)
		}
		owners = append(owners, o)
	}
	return owners, rows.Err()
}

// InterruptOwnerRuns marks the running runs of owner, a process that is
// gone, as failed. It returns how many it marked.
func (db *DB) InterruptOwnerRuns(ctx context.Context, owner string, now time.Time) (int, error) {
	var n int64
	err := db.Update(ctx, func(tx *Tx) error {
		res, err := tx.tx.ExecContext(ctx, `UPDATE schedule_runs SET status = 'failed', finished_at = ?,
			error = 'interrupted: the nagent process running it stopped', delivery_status = 'none'
			WHERE status = 'running' AND owner = ?`, msOf(now), owner)
		if err != nil {
			return fmt.Errorf("store.InterruptOwnerRuns: %w", err)
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return int(n), err
}

// InterruptStaleRuns marks runs still running that started before
// staleBefore as failed: the process running them stopped. It returns how
// many it marked.
func (db *DB) InterruptStaleRuns(ctx context.Context, staleBefore, now time.Time) (int, error) {
	var n int64
	err := db.Update(ctx, func(tx *Tx) error {
		res, err := tx.tx.ExecContext(ctx, `UPDATE schedule_runs SET status = 'failed', finished_at = ?,
			error = 'interrupted: the nagent process running it stopped', delivery_status = 'none'
			WHERE status = 'running' AND started_at < ?`, msOf(now), msOf(staleBefore))
		if err != nil {
			return fmt.Errorf("store.InterruptStaleRuns: %w", err)
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return int(n), err
}

const runColumns = `id, schedule_id, trigger_kind, scheduled_for, started_at, finished_at, status, session_id,
	content, error, note, delivery_status, delivery_attempts, delivery_error`

func scanRun(row interface{ Scan(...any) error }) (ScheduleRun, error) {
	var r ScheduleRun
	var sched int64
	var started, finished sql.NullInt64
	err := row.Scan(&r.ID, &r.ScheduleID, &r.Trigger, &sched, &started, &finished, &r.Status, &r.SessionID,
		&r.Content, &r.Error, &r.Note, &r.DeliveryStatus, &r.DeliveryAttempts, &r.DeliveryError)
	r.ScheduledFor = time.UnixMilli(sched).UTC()
	r.StartedAt, r.FinishedAt = timeOf(started), timeOf(finished)
	return r, err
}

// ListScheduleRuns returns the latest runs of a schedule, newest first; a
// limit of 0 means 50.
func (db *DB) ListScheduleRuns(ctx context.Context, scheduleID string, limit int) ([]ScheduleRun, error) {
	if limit <= 0 {
		limit = 50
	}
	rows, err := db.read.QueryContext(ctx, `SELECT `+runColumns+` FROM schedule_runs WHERE schedule_id = ?
		ORDER BY scheduled_for DESC, rowid DESC LIMIT ?`, scheduleID, limit)
	if err != nil {
		return nil, fmt.Errorf("store.ListScheduleRuns: %w", err)
	}
	defer rows.Close()
	var out []ScheduleRun
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("store.ListScheduleRuns: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// GetScheduleRun returns one run, or an ENOTFOUND error.
func (db *DB) GetScheduleRun(ctx context.Context, id string) (ScheduleRun, error) {
	r, err := scanRun(db.read.QueryRowContext(ctx, `SELECT `+runColumns+` FROM schedule_runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, errs.Errorf(errs.ENOTFOUND, "no schedule run %s", id)
	}
	if err != nil {
		return r, fmt.Errorf("store.GetScheduleRun: %w", err)
	}
	return r, nil
}

// AddInboxMessage stores a message in the dashboard inbox; an empty ID gets
// a fresh one.
func (db *DB) AddInboxMessage(ctx context.Context, m InboxMessage) (InboxMessage, error) {
	if m.ID == "" {
		m.ID = NewScheduleID("inb")
	}
	err := db.Update(ctx, func(tx *Tx) error {
		if m.CreatedAt.IsZero() {
			m.CreatedAt = tx.now
		}
		_, err := tx.tx.ExecContext(ctx, `INSERT INTO inbox_messages
			(id, schedule_id, schedule_name, run_id, session_id, status, content, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			m.ID, m.ScheduleID, m.ScheduleName, m.RunID, m.SessionID, m.Status, m.Content, msOf(m.CreatedAt))
		if err != nil {
			return fmt.Errorf("store.AddInboxMessage: %w", err)
		}
		return nil
	})
	return m, err
}

// InboxFilter selects inbox messages.
type InboxFilter struct {
	UnreadOnly bool
	// Limit defaults to 50.
	Limit int
}

// ListInbox returns inbox messages, newest first.
func (db *DB) ListInbox(ctx context.Context, f InboxFilter) ([]InboxMessage, error) {
	if f.Limit <= 0 {
		f.Limit = 50
	}
	q := `SELECT id, schedule_id, schedule_name, run_id, session_id, status, content, created_at, read_at
		FROM inbox_messages`
	if f.UnreadOnly {
		q += ` WHERE read_at IS NULL`
	}
	rows, err := db.read.QueryContext(ctx, q+` ORDER BY created_at DESC, rowid DESC LIMIT ?`, f.Limit)
	if err != nil {
		return nil, fmt.Errorf("store.ListInbox: %w", err)
	}
	defer rows.Close()
	var out []InboxMessage
	for rows.Next() {
		var m InboxMessage
		var created int64
		var read sql.NullInt64
		if err := rows.Scan(&m.ID, &m.ScheduleID, &m.ScheduleName, &m.RunID, &m.SessionID, &m.Status, &m.Content,
			&created, &read); err != nil {
			return nil, fmt.Errorf("store.ListInbox: %w", err)
		}
		m.CreatedAt, m.ReadAt = time.UnixMilli(created).UTC(), timeOf(read)
		out = append(out, m)
	}
	return out, rows.Err()
}

// MarkInboxRead marks an inbox message read, or returns an ENOTFOUND error.
func (db *DB) MarkInboxRead(ctx context.Context, id string) error {
	return db.Update(ctx, func(tx *Tx) error {
		res, err := tx.tx.ExecContext(ctx, `UPDATE inbox_messages SET read_at = COALESCE(read_at, ?) WHERE id = ?`,
			msOf(tx.now), id)
		if err != nil {
			return fmt.Errorf("store.MarkInboxRead: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errs.Errorf(errs.ENOTFOUND, "no inbox message %s", id)
		}
		return nil
	})
}
