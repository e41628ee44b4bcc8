package feishu

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"

	"github.com/nagent/nagent/runtime/agent"
)

// Size limits of what we send: Feishu takes text messages up to 150 KB and
// cards up to 30 KB of JSON.
const (
	maxTextBytes = 100 << 10
	maxCardBytes = 24 << 10
)

// reply streams one turn's answer back to the message that asked. Turn
// events only update its state; a pump goroutine does the HTTP calls, so
// the turn never waits on Feishu:
//
//   - no card while the answer is short-lived: an answer that ends within
//     StreamAfter of its first delta is sent as one text reply;
//   - otherwise a card reply holds the text so far, and PATCH updates it at
//     most once per UpdateInterval (intermediate states are coalesced);
//   - at the end the card is patched with the final text.
type reply struct {
	a  *Adapter
	in inbound

	mu        sync.Mutex
	text      strings.Builder
	iteration int
	tool      string
	final     string // set with finished
	failed    bool
	finished  bool
	started   bool // the pump runs
	wake      chan struct{}
	sent      chan struct{} // closed when the pump has delivered the answer
}

func (a *Adapter) newReply(in inbound) *reply {
	return &reply{a: a, in: in, wake: make(chan struct{}, 1), sent: make(chan struct{})}
}

// event is the gateway.Handler's Event: it never blocks.
func (r *reply) event(e agent.Event) {
	r.mu.Lock()
	switch e.Type {
	case agent.EventDelta:
		if e.Content == "" {
			r.mu.Unlock()
			return
		}
		if e.Iteration != r.iteration {
			r.iteration = e.Iteration
			r.text.Reset()
		}
		r.text.WriteString(e.Content)
		r.tool = ""
	case agent.EventToolStarted:
		if e.Tool != nil {
			r.tool = e.Tool.Name
		}
	default:
		r.mu.Unlock()
		return
	}
	start := !r.started
	r.started = true
	r.mu.Unlock()
	if start {
		go r.pump()
	}
	r.poke()
}

// done is the gateway.Handler's Done. It waits (boundedly) until the answer
// is delivered, so that the conversation's next turn, and so its answer,
// comes after this one: a burst is answered in order.
func (r *reply) done(res *agent.Result, err error) {
	text, failed := answerText(res, err)
	r.finish(text, failed)
	select {
	case <-r.sent:
	case <-time.After(time.Minute):
		r.a.log.Warn("feishu: the answer is slow to deliver; the next turn starts anyway", "message_id", r.in.MessageID)
	}
}

// fail answers with a plain-words error, without starting a turn.
func (r *reply) fail(text string) { r.finish(text, true) }

func (r *reply) finish(text string, failed bool) {
	r.mu.Lock()
	r.final, r.failed, r.finished = text, failed, true
	start := !r.started
	r.started = true
	r.mu.Unlock()
	if start {
		go r.pump()
	}
	r.poke()
}

func (r *reply) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// snapshot returns the text to show now, and whether the turn ended.
func (r *reply) snapshot() (text string, finished, failed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished {
		return r.final, true, r.failed
	}
	text = r.text.String()
	if r.tool != "" {
		if text != "" {
			text += "\n\n"
		}
		text += "_Using " + r.tool + "…_"
	}
	return text, false, false
}

func (r *reply) pump() {
	defer close(r.sent)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	opts := r.a.opts

	// Phase 1: wait for the answer to end, or for StreamAfter.
	if _, finished, _ := r.snapshot(); !finished && opts.StreamAfter > 0 {
		deadline := time.NewTimer(opts.StreamAfter)
	wait:
		for {
			select {
			case <-r.wake:
				if _, finished, _ := r.snapshot(); finished {
					break wait
				}
			case <-deadline.C:
				break wait
			}
		}
		deadline.Stop()
	}
	text, finished, failed := r.snapshot()
	if finished {
		r.a.replyText(ctx, r.in, text, failed)
		return
	}

	// Phase 2: a card, patched at most once per UpdateInterval.
	cardID, err := r.a.replyCard(ctx, r.in, streamingCard(text))
	if err != nil {
		r.a.log.Warn("feishu: could not send the answer card; the answer goes as text", "message_id", r.in.MessageID, "err", err)
		for {
			if _, finished, _ := r.snapshot(); finished {
				break
			}
			<-r.wake
		}
		text, _, failed := r.snapshot()
		r.a.replyText(ctx, r.in, text, failed)
		return
	}
	shown := text
	last := time.Now()
	for {
		<-r.wake
		if wait := opts.UpdateInterval - time.Since(last); wait > 0 {
			time.Sleep(wait)
		}
		text, finished, failed := r.snapshot()
		if finished {
			card := finalCard(text, failed)
			for attempt := 0; ; attempt++ {
				err := r.a.patchCard(ctx, cardID, card)
				if err == nil || attempt == 3 {
					if err != nil {
						r.a.log.Warn("feishu: could not write the final answer into its card", "message_id", r.in.MessageID, "err", err)
					}
					return
				}
				time.Sleep(opts.UpdateInterval << attempt)
			}
		}
		if text == shown {
			continue
		}
		if err := r.a.patchCard(ctx, cardID, streamingCard(text)); err != nil {
			// A skipped intermediate update is harmless: the next one
			// carries all the text.
			r.a.log.Debug("feishu: card update skipped", "message_id", r.in.MessageID, "err", err)
		}
		shown, last = text, time.Now()
	}
}

// answerText turns a turn's outcome into what the user reads. Failures are
// said in plain words; the details stay in the log and the session.
func answerText(res *agent.Result, err error) (string, bool) {
	switch {
	case err != nil && errors.Is(err, context.Canceled):
		return "I was stopped before I could answer. Please send your message again.", true
	case err != nil:
		return "Sorry, something went wrong and I could not answer. Please try again in a moment.", true
	case res == nil:
		return "Sorry, I could not answer. Please try again in a moment.", true
	}
	switch res.Status {
	case "completed":
		if strings.TrimSpace(res.Content) == "" {
			return "(I have nothing to add.)", false
		}
		return res.Content, false
	case "cancelled":
		return "I was stopped before I could finish. Please send your message again.", true
	}
	switch res.Reason {
	case agent.ReasonProvider:
		return "Sorry, the language model is not answering right now. Please try again in a few minutes.", true
	case agent.ReasonIterationLimit:
		return "Sorry, this took more steps than I am allowed for one answer. Please ask a narrower question.", true
	case agent.ReasonTurnTimeout:
		return "Sorry, this took too long and I had to stop. Please try again, perhaps with a smaller request.", true
	}
	return "Sorry, something went wrong and I could not answer. Please try again in a moment.", true
}

// replyText answers in with a text message.
func (a *Adapter) replyText(ctx context.Context, in inbound, text string, failed bool) {
	content := jsonString(map[string]string{"text": truncate(text, maxTextBytes)})
	if _, err := a.reply(ctx, in, larkim.MsgTypeText, content); err != nil {
		a.log.Warn("feishu: could not send the answer", "message_id", in.MessageID, "failed_turn", failed, "err", err)
	}
}

// replyCard answers in with an interactive card and returns its message id.
func (a *Adapter) replyCard(ctx context.Context, in inbound, card map[string]any) (string, error) {
	return a.reply(ctx, in, larkim.MsgTypeInteractive, jsonString(card))
}

// reply calls the im/v1 reply API, retrying briefly when rate limited.
func (a *Adapter) reply(ctx context.Context, in inbound, msgType, content string) (string, error) {
	var last error
	uuid := newID() // one per answer: a retry of a reply that did land is not posted twice
	for attempt := 0; attempt < 4; attempt++ {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * 500 * time.Millisecond)
		}
		body := larkim.NewReplyMessageReqBodyBuilder().MsgType(msgType).Content(content).Uuid(uuid)
		if in.ThreadID != "" {
			body.ReplyInThread(true)
		}
		resp, err := a.api.Im.V1.Message.Reply(ctx, larkim.NewReplyMessageReqBuilder().
			MessageId(in.MessageID).Body(body.Build()).Build())
		if err != nil {
			last = err
			continue
		}
		if !resp.Success() {
			last = apiError("reply", resp.Code, resp.Msg)
			if !rateLimited(resp.Code) {
				return "", last
			}
			continue
		}
		if resp.Data == nil || resp.Data.MessageId == nil {
			return "", errors.New("feishu: reply: the answer has no message id")
		}
		return *resp.Data.MessageId, nil
	}
	return "", last
}

// patchCard replaces the content of the card message id.
func (a *Adapter) patchCard(ctx context.Context, id string, card map[string]any) error {
	resp, err := a.api.Im.V1.Message.Patch(ctx, larkim.NewPatchMessageReqBuilder().
		MessageId(id).Body(larkim.NewPatchMessageReqBodyBuilder().Content(jsonString(card)).Build()).Build())
	if err != nil {
		return err
	}
	if !resp.Success() {
		return apiError("patch", resp.Code, resp.Msg)
	}
	return nil
}
