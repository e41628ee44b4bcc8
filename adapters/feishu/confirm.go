package feishu

import (
	"context"
	"sync"
	"time"

	"github.com/larksuite/oapi-sdk-go/v3/event/dispatcher/callback"

	"github.com/nagent/nagent/runtime/tools"
)

// confirmer is a Feishu run's tools.Confirmer: it replies to the user's
// message with an Allow/Deny card and waits for the card action of the
// user who started the run. No answer within ConfirmTimeout is a denial.
type confirmer struct {
	a  *Adapter
	in inbound
}

var _ tools.Confirmer = (*confirmer)(nil)

type pendingConfirm struct {
	starter string // open_id of the user who may answer
	tool    string
	answer  chan bool // buffered, 1
}

type confirmations struct {
	mu      sync.Mutex
	pending map[string]*pendingConfirm
}

// Confirm implements tools.Confirmer.
func (c *confirmer) Confirm(ctx context.Context, call tools.ToolCallRequest, def tools.ToolDefinition, reasons []string) (bool, error) {
	a := c.a
	id := newID()
	p := &pendingConfirm{starter: c.in.OpenID, tool: def.Name, answer: make(chan bool, 1)}
	a.confirms.mu.Lock()
	a.confirms.pending[id] = p
	a.confirms.mu.Unlock()
	defer func() {
		a.confirms.mu.Lock()
		delete(a.confirms.pending, id)
		a.confirms.mu.Unlock()
	}()

	cardID, err := a.replyCard(ctx, c.in, confirmCard(id, def.Name, string(call.Arguments), reasons))
	if err != nil {
		return false, err
	}
	timer := time.NewTimer(a.opts.ConfirmTimeout)
	defer timer.Stop()
	select {
	case ok := <-p.answer:
		return ok, nil
	case <-timer.C:
		a.log.Info("feishu: confirmation timed out; the call is denied", "tool", def.Name, "message_id", c.in.MessageID)
		pctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.patchCard(pctx, cardID, settledCard(def.Name, "no answer in time, so it was not run")); err != nil {
			a.log.Debug("feishu: could not mark the confirmation card as timed out", "err", err)
		}
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// onCardAction handles card.action.trigger, which Feishu sends over the
// long connection. Its response (a toast and, once answered, a replacement
// card) goes back in the event's ack.
func (a *Adapter) onCardAction(_ context.Context, ev *callback.CardActionTriggerEvent) (*callback.CardActionTriggerResponse, error) {
	if ev == nil || ev.Event == nil || ev.Event.Action == nil {
		return nil, nil
	}
	id, _ := ev.Event.Action.Value[actionKey].(string)
	choice, _ := ev.Event.Action.Value[choiceKey].(string)
	if id == "" {
		return nil, nil // not one of ours
	}
	operator := ""
	if ev.Event.Operator != nil {
		operator = ev.Event.Operator.OpenID
	}
	a.confirms.mu.Lock()
	p := a.confirms.pending[id]
	if p != nil && p.starter == operator {
		delete(a.confirms.pending, id)
	}
	a.confirms.mu.Unlock()

	switch {
	case p == nil:
		return toast("info", "This request is no longer waiting for an answer."), nil
	case p.starter != operator:
		return toast("warning", "Sorry, only the person who asked can answer this request."), nil
	}
	allowed := choice == choiceAllow
	p.answer <- allowed
	resp := toast("success", "Denied. The call will not run.")
	outcome := "denied"
	if allowed {
		resp.Toast.Content, outcome = "Allowed. Running it now.", "allowed"
	}
	resp.Card = &callback.Card{Type: "raw", Data: settledCard(p.tool, outcome)}
	return resp, nil
}

func toast(kind, text string) *callback.CardActionTriggerResponse {
	return &callback.CardActionTriggerResponse{Toast: &callback.Toast{Type: kind, Content: text}}
}
