package web

import (
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/runtime/sandbox"
	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/store"
)

// sandbox returns the App's sandbox manager, or nil when none runs.
func (s *Server) sandbox() *sandbox.Manager { return s.app.Sandbox }

func (s *Server) needSandbox() (*sandbox.Manager, error) {
	if sb := s.sandbox(); sb != nil {
		return sb, nil
	}
	return nil, errs.Errorf(errs.EUNAVAILABLE, "no sandbox manager runs in this server (execute_code is off: see sandbox.backend)")
}

// watchSandbox publishes the sandboxes' state changes on the sandbox topic.
func (s *Server) watchSandbox() (cancel func()) {
	sb := s.sandbox()
	if sb == nil {
		return func() {}
	}
	return sb.Subscribe(func(ev sandbox.Event) { s.hub.Publish(TopicSandbox, ev) })
}

// handleListSandboxes is GET /api/sandboxes.
func (s *Server) handleListSandboxes(w http.ResponseWriter, r *http.Request) error {
	sb := s.sandbox()
	if sb == nil {
		writeJSON(w, http.StatusOK, map[string]any{"available": false, "sandboxes": []any{}})
		return nil
	}
	writeJSON(w, http.StatusOK, map[string]any{"available": true, "backend": sb.Backend().Name(),
		"unisolated": sb.Unisolated(), "sandboxes": sb.List()})
	return nil
}

// handleSandboxHistory is GET /api/sandboxes/history?session_id=&limit=.
func (s *Server) handleSandboxHistory(w http.ResponseWriter, r *http.Request) error {
	sid := r.URL.Query().Get("session_id")
	if sid != "" && !sessionIDPattern.MatchString(sid) {
		return invalid("session_id", "a session id is 1-128 characters of letters, digits and _ . : -")
	}
	limit, err := intParam(r, "limit", 50, 1, 500)
	if err != nil {
		return err
	}
	sb, err := s.needSandbox()
	if err != nil {
		return err
	}
	list, err := sb.History(r.Context(), sid, limit)
	if err != nil {
		return err
	}
	if list == nil {
		list = []*store.SandboxExecution{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"executions": list})
	return nil
}

func pathSession(r *http.Request) (string, error) {
	id := r.PathValue("session_id")
	if !sessionIDPattern.MatchString(id) {
		return "", invalid("session_id", "a session id is 1-128 characters of letters, digits and _ . : -")
	}
	return id, nil
}

// handleReleaseSandbox is POST /api/sandboxes/{session_id}/release.
func (s *Server) handleReleaseSandbox(w http.ResponseWriter, r *http.Request) error {
	id, err := pathSession(r)
	if err != nil {
		return err
	}
	var req struct {
		Force  *bool  `json:"force"`
		Reason string `json:"reason"`
	}
	if r.ContentLength != 0 {
		if err := decode(w, r, &req); err != nil {
			return err
		}
	}
	if utf8.RuneCountInString(req.Reason) > 500 {
		return invalid("reason", "reason is over 500 characters")
	}
	force := req.Force == nil || *req.Force
	if req.Reason == "" {
		req.Reason = "released from the dashboard"
	}
	sb, err := s.needSandbox()
	if err != nil {
		return err
	}
	if err := sb.Release(r.Context(), id, force, req.Reason); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]bool{"released": true})
	return nil
}

// handleExecSandbox is POST /api/sandboxes/{session_id}/exec: an admin
// runs code directly in a session's sandbox (created if needed).
func (s *Server) handleExecSandbox(w http.ResponseWriter, r *http.Request) error {
	id, err := pathSession(r)
	if err != nil {
		return err
	}
	var req struct {
		Code      string `json:"code"`
		TimeoutMS int64  `json:"timeout_ms"`
	}
	if err := decode(w, r, &req); err != nil {
		return err
	}
	switch {
	case req.Code == "":
		return invalid("code", "code is required: the Python source to run")
	case len(req.Code) > 256<<10:
		return invalid("code", "code is over 256 KiB")
	case req.TimeoutMS < 0 || req.TimeoutMS > 600000:
		return invalid("timeout_ms", "timeout_ms must be between 0 (default) and 600000")
	}
	sb, err := s.needSandbox()
	if err != nil {
		return err
	}
	res, err := sb.Execute(r.Context(), sandbox.ExecuteRequest{
		SessionID: id, Code: req.Code, Timeout: time.Duration(req.TimeoutMS) * time.Millisecond,
		Exec: tools.ExecutionContext{SessionID: id, Source: SourceDashboard, AgentContext: tools.AgentPrimary},
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}
