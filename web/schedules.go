package web

import (
	"context"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/runtime/gateway"
	"github.com/nagent/nagent/runtime/scheduler"
	"github.com/nagent/nagent/store"
)

// TopicInbox carries {"type":"inbox.message","message":InboxMessage} when a
// scheduled result lands in the dashboard inbox, and {"type":"inbox.read","id"}
// when one is marked read.
const TopicInbox = "inbox"

// scheduleView is a schedule as the dashboard shows it: the webhook target
// reduced to its scheme and host, since paths and queries carry tokens.
type scheduleView struct {
	store.Schedule
	// Target is the delivery target as the CLI writes it, redacted.
	Target      string `json:"target"`
	Description string `json:"description"`
}

func viewSchedule(sc store.Schedule) scheduleView {
	if sc.DeliveryKind == scheduler.DeliverWebhook {
		sc.DeliveryTarget = redactWebhook(sc.DeliveryTarget)
	}
	return scheduleView{Schedule: sc, Target: scheduler.FormatTarget(sc.DeliveryKind, sc.DeliveryTarget),
		Description: scheduler.Describe(sc.Kind, sc.Spec, sc.Timezone)}
}

// redactWebhook keeps a webhook URL's scheme and host only.
func redactWebhook(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(webhook URL hidden)"
	}
	return u.Scheme + "://" + u.Host + "/…"
}

// redactRun hides webhook URLs a delivery error might quote.
func redactRun(r store.ScheduleRun, sc store.Schedule) store.ScheduleRun {
	if sc.DeliveryKind == scheduler.DeliverWebhook && sc.DeliveryTarget != "" {
		r.DeliveryError = strings.ReplaceAll(r.DeliveryError, sc.DeliveryTarget, redactWebhook(sc.DeliveryTarget))
	}
	return r
}

// scheduleKey validates the {id} path value: a schedule id or name.
func scheduleKey(r *http.Request) (string, error) {
	k := r.PathValue("id")
	if k == "" || len(k) > 200 || !utf8.ValidString(k) || strings.ContainsAny(k, " \t\r\n/") {
		return "", invalid("id", "a schedule is named by its id (sch_…) or its name: 1-200 characters without spaces or slashes")
	}
	return k, nil
}

// handleListSchedules is GET /api/schedules.
func (s *Server) handleListSchedules(w http.ResponseWriter, r *http.Request) error {
	sch := s.app.Scheduler()
	list, err := sch.List(r.Context())
	if err != nil {
		return err
	}
	out := make([]scheduleView, 0, len(list))
	for _, sc := range list {
		out = append(out, viewSchedule(sc))
	}
	unread, err := s.unreadCount(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"scheduler_enabled": s.app.Config.Scheduler.Enabled,
		"schedules": out, "inbox_unread": unread})
	return nil
}

// handleGetSchedule is GET /api/schedules/{id}?limit=.
func (s *Server) handleGetSchedule(w http.ResponseWriter, r *http.Request) error {
	key, err := scheduleKey(r)
	if err != nil {
		return err
	}
	limit, err := intParam(r, "limit", 20, 1, 200)
	if err != nil {
		return err
	}
	sch := s.app.Scheduler()
	sc, err := sch.Get(r.Context(), key)
	if err != nil {
		return err
	}
	runs, err := s.app.DB.ListScheduleRuns(r.Context(), sc.ID, limit)
	if err != nil {
		return err
	}
	out := make([]store.ScheduleRun, 0, len(runs))
	for _, run := range runs {
		out = append(out, redactRun(run, sc))
	}
	writeJSON(w, http.StatusOK, map[string]any{"schedule": viewSchedule(sc), "runs": out})
	return nil
}

// handleRunSchedule is POST /api/schedules/{id}/run[?wait=true]: it claims
// a manual run at once (202 with the running record, or 200 with a
// skipped_overlap one) and executes it in the background; with wait=true it
// answers 200 with the final record after delivery.
func (s *Server) handleRunSchedule(w http.ResponseWriter, r *http.Request) error {
	key, err := scheduleKey(r)
	if err != nil {
		return err
	}
	wait := false
	switch v := r.URL.Query().Get("wait"); v {
	case "", "false", "0":
	case "true", "1":
		wait = true
	default:
		return invalid("wait", "wait is true or false, not %q", v)
	}
	sch := s.app.Scheduler()
	sc, err := sch.Get(r.Context(), key)
	if err != nil {
		return err
	}
	if s.ctx.Err() != nil {
		return errs.Errorf(errs.EUNAVAILABLE, "the dashboard is shutting down; try again after the restart")
	}
	run, err := sch.Runs.Claim(r.Context(), sc, scheduler.TriggerManual, sch.Runs.Now(), nil, "run from the dashboard")
	if err != nil {
		return err
	}
	if run.Status != store.RunRunning {
		writeJSON(w, http.StatusOK, map[string]any{"run": redactRun(run, sc)})
		return nil
	}
	done := make(chan store.ScheduleRun, 1)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		final := sch.Runs.Execute(s.ctx, sc, run)
		s.noticeInbox(context.WithoutCancel(s.ctx))
		done <- final
	}()
	if !wait {
		writeJSON(w, http.StatusAccepted, map[string]any{"run": redactRun(run, sc)})
		return nil
	}
	select {
	case final := <-done:
		writeJSON(w, http.StatusOK, map[string]any{"run": redactRun(final, sc)})
		return nil
	case <-r.Context().Done():
		return r.Context().Err()
	}
}

// handlePauseSchedule is POST /api/schedules/{id}/pause.
func (s *Server) handlePauseSchedule(w http.ResponseWriter, r *http.Request) error {
	return s.setEnabled(w, r, false)
}

// handleResumeSchedule is POST /api/schedules/{id}/resume.
func (s *Server) handleResumeSchedule(w http.ResponseWriter, r *http.Request) error {
	return s.setEnabled(w, r, true)
}

func (s *Server) setEnabled(w http.ResponseWriter, r *http.Request, on bool) error {
	key, err := scheduleKey(r)
	if err != nil {
		return err
	}
	sch := s.app.Scheduler()
	var sc store.Schedule
	if on {
		sc, err = sch.Resume(r.Context(), key)
	} else {
		sc, err = sch.Pause(r.Context(), key)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"schedule": viewSchedule(sc)})
	return nil
}

// handleListInbox is GET /api/inbox?unread=true&limit=: unread messages
// first, each group newest first.
func (s *Server) handleListInbox(w http.ResponseWriter, r *http.Request) error {
	unreadOnly := false
	switch v := r.URL.Query().Get("unread"); v {
	case "", "false", "0":
	case "true", "1":
		unreadOnly = true
	default:
		return invalid("unread", "unread is true or false, not %q", v)
	}
	limit, err := intParam(r, "limit", 50, 1, 500)
	if err != nil {
		return err
	}
	msgs, err := s.app.Scheduler().Inbox(r.Context(), store.InboxFilter{UnreadOnly: unreadOnly, Limit: limit})
	if err != nil {
		return err
	}
	if msgs == nil {
		msgs = []store.InboxMessage{}
	}
	sort.SliceStable(msgs, func(i, j int) bool { return msgs[i].ReadAt == nil && msgs[j].ReadAt != nil })
	unread, err := s.unreadCount(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"messages": msgs, "unread": unread})
	return nil
}

// inboxID validates the {id} path value: an inbox message id (inb_ + hex).
func inboxID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if !sessionIDPattern.MatchString(id) {
		return "", invalid("id", "an inbox message id is 1-128 characters of letters, digits and _ . : -, e.g. inb_0123abcd")
	}
	return id, nil
}

// handleReadInbox is POST /api/inbox/{id}/read.
func (s *Server) handleReadInbox(w http.ResponseWriter, r *http.Request) error {
	id, err := inboxID(r)
	if err != nil {
		return err
	}
	if err := s.app.Scheduler().MarkInboxRead(r.Context(), id); err != nil {
		return err
	}
	unread, err := s.unreadCount(r.Context())
	if err != nil {
		return err
	}
	s.hub.Publish(TopicInbox, map[string]any{"type": "inbox.read", "id": id, "unread": unread})
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "read": true, "unread": unread})
	return nil
}

// unreadCount counts unread inbox messages (up to 1000).
func (s *Server) unreadCount(ctx context.Context) (int, error) {
	msgs, err := s.app.DB.ListInbox(ctx, store.InboxFilter{UnreadOnly: true, Limit: 1000})
	return len(msgs), err
}

// inboxWatch remembers the newest inbox message seen, so that each new
// message is published on TopicInbox once, whether the dashboard ran the
// schedule or the scheduler's own tick did.
type inboxWatch struct {
	mu   sync.Mutex
	seen map[string]bool
	init bool
}

// noticeInbox publishes the inbox messages that arrived since the last look.
func (s *Server) noticeInbox(ctx context.Context) {
	msgs, err := s.app.DB.ListInbox(ctx, store.InboxFilter{Limit: 20})
	if err != nil {
		s.log.Debug("inbox watch", "err", err)
		return
	}
	s.inbox.mu.Lock()
	var fresh []store.InboxMessage
	first := !s.inbox.init
	next := make(map[string]bool, len(msgs))
	for _, m := range msgs {
		next[m.ID] = true
		if !first && !s.inbox.seen[m.ID] && m.ReadAt == nil {
			fresh = append(fresh, m)
		}
	}
	s.inbox.seen, s.inbox.init = next, true
	s.inbox.mu.Unlock()
	for i := len(fresh) - 1; i >= 0; i-- { // oldest first
		s.hub.Publish(TopicInbox, map[string]any{"type": "inbox.message", "message": fresh[i]})
	}
}

// inboxLoop looks for new inbox messages every interval.
func (s *Server) inboxLoop(every time.Duration) {
	defer s.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			s.noticeInbox(s.ctx)
		}
	}
}

// handleGateway is GET /api/gateway: the chat adapters' health.
func (s *Server) handleGateway(w http.ResponseWriter, r *http.Request) error {
	adapters := []gateway.AdapterHealth{}
	if s.app.Gateway != nil {
		adapters = append(adapters, s.app.Gateway.Health()...)
	}
	ready := s.app.Gateway == nil || s.app.Gateway.Ready() == nil
	writeJSON(w, http.StatusOK, map[string]any{"adapters": adapters, "ready": ready,
		"feishu_configured": s.app.Config.Feishu.Enabled(), "scheduler_enabled": s.app.Config.Scheduler.Enabled})
	return nil
}
