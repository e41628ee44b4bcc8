package web

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/runtime/tools"
)

// confirmations are the dashboard prompts waiting for an admin's answer.
type confirmations struct {
	hub     *Hub
	timeout time.Duration
	now     func() time.Time

	mu      sync.Mutex
	pending map[string]*pendingConfirm
}

type pendingConfirm struct {
	sessionID string
	answer    chan bool // buffered; written once
	request   []byte    // the confirm_request message, for a fresh page
}

// confirmRequest is the confirm_request event.
type confirmRequest struct {
	Type           string      `json:"type"`
	ConfirmationID string      `json:"confirmation_id"`
	SessionID      string      `json:"session_id"`
	RunID          string      `json:"run_id"`
	Tool           confirmTool `json:"tool"`
	Reasons        []string    `json:"reasons"`
	RiskLevel      string      `json:"risk_level,omitempty"`
	ExpiresAt      time.Time   `json:"expires_at"`
}

type confirmTool struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// confirmResolved is the confirm_resolved event.
type confirmResolved struct {
	Type           string `json:"type"`
	ConfirmationID string `json:"confirmation_id"`
	SessionID      string `json:"session_id"`
	RunID          string `json:"run_id"`
	Approved       bool   `json:"approved"`
	By             string `json:"by"`
}

// confirmer asks the dashboard about one dashboard run's calls.
type confirmer struct {
	c         *confirmations
	runID     string
	sessionID string
}

var _ tools.Confirmer = confirmer{}

// Confirm publishes a confirm_request on the session's topic and waits for
// an answer, the timeout (denied) or the run's end.
func (cf confirmer) Confirm(ctx context.Context, call tools.ToolCallRequest, def tools.ToolDefinition, reasons []string) (bool, error) {
	c := cf.c
	sessionID := cf.sessionID
	id := newID("conf_")
	req := confirmRequest{Type: "confirm_request", ConfirmationID: id, SessionID: sessionID, RunID: cf.runID,
		Tool: confirmTool{ID: call.ID, Name: call.Name, Arguments: call.Arguments}, Reasons: reasons,
		RiskLevel: string(def.RiskLevel), ExpiresAt: c.now().Add(c.timeout).UTC()}
	if req.Reasons == nil {
		req.Reasons = []string{}
	}
	p := &pendingConfirm{sessionID: sessionID, answer: make(chan bool, 1)}
	topicName := SessionTopic(sessionID)
	c.hub.Ensure(topicName)
	c.mu.Lock()
	c.pending[id] = p
	c.mu.Unlock()
	// The request is published with its id so that a fresh page can be
	// sent the same message.
	msg := c.hub.publish(topicName, req)
	c.mu.Lock()
	p.request = msg
	c.mu.Unlock()

	timer := time.NewTimer(c.timeout)
	defer timer.Stop()
	res := confirmResolved{Type: "confirm_resolved", ConfirmationID: id, SessionID: sessionID, RunID: cf.runID}
	var err error
	select {
	case res.Approved = <-p.answer:
		res.By = "user"
	case <-timer.C:
		res.By = "timeout"
		err = errs.Errorf(errs.EUNAVAILABLE, "no answer on the dashboard within %s; denied", c.timeout)
	case <-ctx.Done():
		res.By = "cancelled"
		err = context.Cause(ctx)
	}
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
	c.hub.Publish(topicName, res)
	return res.Approved, err
}

// answer delivers an admin's answer; the first answer wins.
func (c *confirmations) answer(id string, approved bool) error {
	c.mu.Lock()
	p := c.pending[id]
	if p != nil {
		delete(c.pending, id)
	}
	c.mu.Unlock()
	if p == nil {
		return errs.Errorf(errs.ENOTFOUND, "confirmation %q is not waiting (already answered, timed out, or unknown)", id)
	}
	p.answer <- approved
	return nil
}

// pendingFor returns the waiting confirm_request messages of the session
// topics among topics.
func (c *confirmations) pendingFor(topics []string) [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out [][]byte
	for _, p := range c.pending {
		if p.request != nil && slices.Contains(topics, SessionTopic(p.sessionID)) {
			out = append(out, p.request)
		}
	}
	return out
}
