package web

import (
	"net/http"
	"regexp"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/store"
)

var sourcePattern = regexp.MustCompile(`^[a-z0-9_-]{1,32}$`)

var taskStatuses = map[string]bool{"running": true, "completed": true, "failed": true, "cancelled": true, "none": true}

// sessionJSON is a session in API answers.
type sessionJSON struct {
	*store.SessionRow
	Running bool `json:"running"`
}

// intParam reads an optional integer query parameter within [min, max].
func intParam(r *http.Request, name string, def, min, max int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min || n > max {
		return 0, invalid(name, "%s must be an integer between %d and %d", name, min, max)
	}
	return n, nil
}

// handleListSessions is GET /api/sessions.
func (s *Server) handleListSessions(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := store.SessionQuery{Source: q.Get("source"), Status: q.Get("status"), Text: q.Get("q")}
	if f.Source != "" && !sourcePattern.MatchString(f.Source) {
		return invalid("source", "source must be 1-32 characters of a-z 0-9 _ - (api, cli, dashboard, feishu, acp, cron …)")
	}
	if f.Status != "" && !taskStatuses[f.Status] {
		return invalid("status", "status must be running, completed, failed, cancelled or none")
	}
	if utf8.RuneCountInString(f.Text) > 200 || !utf8.ValidString(f.Text) {
		return invalid("q", "q must be valid text of at most 200 characters")
	}
	limit, err := intParam(r, "limit", 50, 1, 500)
	if err != nil {
		return err
	}
	offset, err := intParam(r, "offset", 0, 0, 1<<30)
	if err != nil {
		return err
	}
	f.Limit, f.Offset = limit+1, offset
	rows, err := s.app.DB.SearchSessions(r.Context(), f)
	if err != nil {
		return err
	}
	more := len(rows) > limit
	if more {
		rows = rows[:limit]
	}
	out := make([]sessionJSON, len(rows))
	for i, row := range rows {
		if row.ExternalMemoryEnabled == nil {
			row.ExternalMemoryEnabled = []string{}
		}
		out[i] = sessionJSON{SessionRow: row, Running: s.runs.isRunning(row.ID)}
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": out, "has_more": more})
	return nil
}

func (s *Server) sessionID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if !sessionIDPattern.MatchString(id) {
		return "", invalid("id", "a session id is 1-128 characters of letters, digits and _ . : -")
	}
	return id, nil
}

// handleGetSession is GET /api/sessions/{id}.
func (s *Server) handleGetSession(w http.ResponseWriter, r *http.Request) error {
	id, err := s.sessionID(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	sess, err := s.app.DB.GetSession(ctx, id)
	if err != nil {
		return err
	}
	msgs, err := s.app.DB.ListMessages(ctx, id)
	if err != nil {
		return err
	}
	calls, err := s.app.DB.ListToolCalls(ctx, id)
	if err != nil {
		return err
	}
	task, err := s.app.DB.GetTaskState(ctx, id)
	if err != nil {
		return err
	}
	sum, err := s.app.DB.GetSummary(ctx, id)
	if err != nil {
		return err
	}
	snap, err := s.app.DB.GetMemorySnapshot(ctx, id)
	if err != nil {
		return err
	}
	row := &store.SessionRow{Session: *sess}
	if task != nil {
		row.Status, row.IterationCount = task.Status, task.IterationCount
	}
	if row.ExternalMemoryEnabled == nil {
		row.ExternalMemoryEnabled = []string{}
	}
	if msgs == nil {
		msgs = []*store.Message{}
	}
	if calls == nil {
		calls = []*store.ToolCall{}
	}
	ext := map[string]any{"enabled": row.ExternalMemoryEnabled, "snapshot_frozen": snap != nil}
	if snap != nil {
		ext["snapshot"] = snap.Snapshot
	}
	var active any
	for _, run := range s.runs.forSession(id) {
		active = map[string]any{"run_id": run.ID, "started_at": run.StartedAt}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"session": sessionJSON{SessionRow: row, Running: s.runs.isRunning(id)}, "messages": msgs, "tool_calls": calls,
		"task_state": task, "summary": sum, "external_memory": ext, "active_run": active,
	})
	return nil
}

// handleDeleteSession is DELETE /api/sessions/{id}.
func (s *Server) handleDeleteSession(w http.ResponseWriter, r *http.Request) error {
	id, err := s.sessionID(r)
	if err != nil {
		return err
	}
	if s.runs.isRunning(id) {
		return errs.Errorf(errs.ECONFLICT, "session %q has a turn running; stop it first (POST /api/sessions/%s/stop)", id, id)
	}
	if err := s.app.DB.DeleteSession(r.Context(), id); err != nil {
		return err
	}
	released := false
	if sb := s.sandbox(); sb != nil {
		switch err := sb.Release(r.Context(), id, true, "session deleted from the dashboard"); {
		case errs.Code(err) == errs.ENOTFOUND: // it had none
		case err != nil:
			s.log.Warn("releasing a deleted session's sandbox failed", "session_id", id, "err", err)
		default:
			released = true
		}
	}
	s.hub.Publish(TopicSessions, map[string]string{"type": "session_deleted", "session_id": id})
	writeJSON(w, http.StatusOK, map[string]bool{"deleted": true, "sandbox_released": released})
	return nil
}

// handleStatus is GET /api/status.
func (s *Server) handleStatus(w http.ResponseWriter, r *http.Request) error {
	modelErr := ""
	if s.app.ModelErr != nil {
		modelErr = s.app.ModelErr.Error()
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"model": s.app.Config.LLM.Model, "model_error": modelErr,
		"policy_revision": s.app.Policy.Revision(), "policy_error": policyError(s.app.Policy.LastError()),
		"sandbox_available": s.sandbox() != nil, "running_runs": s.runs.count(),
		"auth_required": s.authRequired(), "confirm_timeout_ms": s.opts.ConfirmTimeout.Milliseconds(),
		"server_time": time.Now().UTC(),
	})
	return nil
}
