package web

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/nagent/nagent/runtime/agent"
	"github.com/nagent/nagent/runtime/chat"
	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/tools"
)

// SourceDashboard tags sessions and runs started from the dashboard.
const SourceDashboard = "dashboard"

// maxMessageChars bounds a dashboard message.
const maxMessageChars = 100000

// activeRun is a dashboard turn in flight.
type activeRun struct {
	ID        string    `json:"run_id"`
	SessionID string    `json:"session_id"`
	Source    string    `json:"source"`
	StartedAt time.Time `json:"started_at"`
	cancel    context.CancelFunc
}

// runs tracks dashboard turns, and which sessions have any turn running
// (from every source, as the observer sees them).
type runs struct {
	mu        sync.Mutex
	byID      map[string]*activeRun
	running   map[string]int    // session id → turns running, any source
	sources   map[string]string // session id → source of its running turn
	dashboard map[string]string // session id → the latest dashboard run id
}

func newRuns() *runs {
	return &runs{byID: map[string]*activeRun{}, running: map[string]int{}, sources: map[string]string{}, dashboard: map[string]string{}}
}

func (rs *runs) add(r *activeRun) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.byID[r.ID] = r
	rs.dashboard[r.SessionID] = r.ID
}

func (rs *runs) remove(r *activeRun) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	delete(rs.byID, r.ID)
	if rs.dashboard[r.SessionID] == r.ID {
		delete(rs.dashboard, r.SessionID)
	}
}

func (rs *runs) get(id string) *activeRun {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.byID[id]
}

// forSession returns the dashboard runs of a session.
func (rs *runs) forSession(sessionID string) []*activeRun {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var out []*activeRun
	for _, r := range rs.byID {
		if r.SessionID == sessionID {
			out = append(out, r)
		}
	}
	return out
}

func (rs *runs) list() []*activeRun {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := make([]*activeRun, 0, len(rs.byID))
	for _, r := range rs.byID {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].StartedAt.Before(out[j].StartedAt) })
	return out
}

func (rs *runs) count() int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return len(rs.byID)
}

func (rs *runs) isRunning(sessionID string) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.running[sessionID] > 0
}

// runIDOf is the dashboard run id of a session's running turn, or "".
func (rs *runs) runIDOf(sessionID string) string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.dashboard[sessionID]
}

// turnStarted and turnFinished count running turns per session.
func (rs *runs) turnStarted(sessionID, source string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.running[sessionID]++
	rs.sources[sessionID] = source
}

func (rs *runs) turnFinished(sessionID string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.running[sessionID] <= 1 {
		delete(rs.running, sessionID)
		delete(rs.sources, sessionID)
		return
	}
	rs.running[sessionID]--
}

// runEvent is an agent event as the websocket carries it.
type runEvent struct {
	agent.Event
	Source string `json:"source"`
	RunID  string `json:"run_id,omitempty"`
}

// sessionChange is an event of the sessions topic.
type sessionChange struct {
	Type      string `json:"type"`
	SessionID string `json:"session_id"`
	Source    string `json:"source,omitempty"`
	Status    string `json:"status,omitempty"`
	Running   bool   `json:"running"`
}

// observe receives every event of every run (agent.AgentGraphRunner.Observe).
// It must not block: publishing never waits for a client.
func (s *Server) observe(source string, e agent.Event) {
	if e.Type == agent.EventState && e.State == agent.StateLoadContext {
		s.runs.turnStarted(e.SessionID, source)
		s.hub.Publish(TopicSessions, sessionChange{Type: "session_updated", SessionID: e.SessionID, Source: source, Status: "running", Running: true})
	}
	runID := ""
	if source == SourceDashboard {
		runID = s.runs.runIDOf(e.SessionID)
	}
	s.hub.Publish(SessionTopic(e.SessionID), runEvent{Event: e, Source: source, RunID: runID})
	switch e.Type {
	case agent.EventWarning:
		s.hub.Publish(TopicWarnings, map[string]string{"type": "warning", "session_id": e.SessionID, "source": source, "message": e.Message})
	case agent.EventRunFinished:
		s.runs.turnFinished(e.SessionID)
		status := ""
		if e.Result != nil {
			status = e.Result.Status
		}
		s.hub.Publish(TopicSessions, sessionChange{Type: "session_updated", SessionID: e.SessionID, Source: source, Status: status, Running: s.runs.isRunning(e.SessionID)})
	}
}

type startRunRequest struct {
	SessionID      string   `json:"session_id"`
	Message        string   `json:"message"`
	ExternalMemory []string `json:"external_memory"`
}

// handleStartRun is POST /api/runs.
func (s *Server) handleStartRun(w http.ResponseWriter, r *http.Request) error {
	var req startRunRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	switch {
	case req.SessionID != "" && !sessionIDPattern.MatchString(req.SessionID):
		return invalid("session_id", "session_id must be 1-128 characters of letters, digits and _ . : -")
	case req.Message == "":
		return invalid("message", "message is required")
	case !utf8.ValidString(req.Message):
		return invalid("message", "message must be valid UTF-8")
	case utf8.RuneCountInString(req.Message) > maxMessageChars:
		return invalid("message", "message is over %d characters", maxMessageChars)
	case len(req.ExternalMemory) > 16:
		return invalid("external_memory", "external_memory names at most 16 providers")
	}
	for _, p := range req.ExternalMemory {
		if !providerName.MatchString(p) {
			return invalid("external_memory", "external_memory: %q is not a provider name ([a-z0-9][a-z0-9_-]{0,63})", p)
		}
	}
	if s.app.ModelErr != nil {
		return errs.Errorf(errs.EUNAVAILABLE, "no model is configured: %v", s.app.ModelErr)
	}
	if limit := s.app.Config.Server.MaxConcurrentTurns; limit > 0 && s.runs.count() >= limit {
		return errs.Errorf(errs.EBUSY, "the dashboard is running its maximum of %d turns; stop one or wait", limit)
	}
	if req.SessionID == "" {
		req.SessionID = chat.NewSessionID()
	}
	topicName := SessionTopic(req.SessionID)
	s.hub.Ensure(topicName)
	lastID := s.hub.LastEventID()
	ctx, cancel := context.WithCancel(s.ctx)
	run := &activeRun{ID: newID("run_"), SessionID: req.SessionID, Source: SourceDashboard, StartedAt: s.now().UTC(), cancel: cancel}
	s.runs.add(run)
	in := chat.Request{
		SessionID: req.SessionID, Source: SourceDashboard,
		Messages:       []llm.Message{{Role: llm.RoleUser, Content: req.Message}},
		ExternalMemory: req.ExternalMemory,
		Exec:           tools.ExecutionContext{Confirmer: confirmer{c: s.confirms, runID: run.ID, sessionID: req.SessionID}},
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer cancel()
		defer s.runs.remove(run)
		_, err := s.app.Chat.Stream(ctx, in, nil)
		if err != nil {
			// The turn never started (a full queue, a store failure).
			msg := errs.MessageOrError(err)
			if errors.Is(err, context.Canceled) {
				msg = "stopped before it started"
			}
			s.log.Warn("dashboard run did not start", "session_id", run.SessionID, "run_id", run.ID, "err", err)
			s.hub.Publish(topicName, map[string]string{"type": "run_error", "session_id": run.SessionID, "run_id": run.ID, "message": msg})
		}
	}()
	writeJSON(w, http.StatusAccepted, map[string]any{"run_id": run.ID, "session_id": run.SessionID, "last_event_id": lastID})
	return nil
}

// handleListRuns is GET /api/runs.
func (s *Server) handleListRuns(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]any{"runs": s.runs.list()})
	return nil
}

// handleStopRun is POST /api/runs/{id}/stop.
func (s *Server) handleStopRun(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	run := s.runs.get(id)
	if run == nil {
		return errs.Errorf(errs.ENOTFOUND, "no dashboard run %q is in flight", id)
	}
	run.cancel()
	writeJSON(w, http.StatusAccepted, map[string]bool{"stopping": true})
	return nil
}

// handleStopSession is POST /api/sessions/{id}/stop.
func (s *Server) handleStopSession(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	rs := s.runs.forSession(id)
	if len(rs) == 0 {
		return errs.Errorf(errs.ENOTFOUND, "no dashboard run of session %q is in flight (runs from other channels are stopped there)", id)
	}
	for _, run := range rs {
		run.cancel()
	}
	writeJSON(w, http.StatusAccepted, map[string]bool{"stopping": true})
	return nil
}
