// Package gateway is GatewayService: the one path from a chat channel
// (Feishu, the terminal, ACP) to ChatCompletionService. It maps each
// platform conversation to a session, runs a conversation's messages one
// turn at a time in arrival order, drops messages the platform redelivers,
// and supervises the platform adapters.
//
// A burst of messages that arrives while a turn runs is answered in order,
// one turn per message, not coalesced: each message gets its own answer,
// and a platform reply can quote the message it answers.
package gateway

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/nagent/nagent/runtime/agent"
	"github.com/nagent/nagent/runtime/chat"
	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/store"
)

// Platforms, which are also the source tag of the sessions they start.
const (
	PlatformFeishu = "feishu"
	PlatformCLI    = "cli"
	PlatformACP    = "acp"
)

// Conversation names one platform conversation: (platform, chat, thread,
// user). Adapters leave out the parts their platform does not have.
type Conversation = store.Conversation

// Message is one inbound message from a platform.
type Message struct {
	Conversation Conversation
	// MessageID and EventID identify the delivery. A message whose message
	// id or event id was taken before is a redelivery and is dropped with
	// ErrDuplicate. Empty ids are not checked.
	MessageID string
	EventID   string
	// Text is the user's message. Messages, when set, replace it (for
	// channels that send several content blocks).
	Text     string
	Messages []llm.Message
	// SessionID, when set, binds the conversation to that session before the
	// turn (resuming a stored session).
	SessionID string
	// Confirmer asks the person behind the conversation about a call the
	// policy marked confirm; nil means nobody can answer, so it is denied.
	Confirmer tools.Confirmer
	// TrustedMetadata reaches the policy input as trusted_metadata.
	TrustedMetadata map[string]any
	// ExternalMemory selects the external-memory providers of a new session.
	ExternalMemory []string
	// Params override the configured generation parameters (model picker).
	Params llm.GenerationParams
}

// Handler receives one turn's progress. Both funcs may be nil. Event is
// called in order from the turn's goroutine and must not block for long;
// Done is called exactly once when the turn has ended or could not start.
type Handler struct {
	Event agent.EmitFunc
	Done  func(*agent.Result, error)
}

// Ticket says where a submitted message went.
type Ticket struct {
	SessionID string
	// Ahead is the number of this conversation's turns that run before it.
	Ahead int
}

// ErrDuplicate is returned for a message the platform delivered before.
var ErrDuplicate = errs.Errorf(errs.ECONFLICT, "gateway: message already received; a redelivery is not answered twice")

// Options tune a Service.
type Options struct {
	Log *slog.Logger
	// MaxQueued bounds the turns waiting in one conversation; 0 means 16.
	MaxQueued int
	// Backoff is the first delay before an adapter restarts; it doubles up
	// to MaxBackoff. Zero means 1 s and 30 s.
	Backoff, MaxBackoff time.Duration
}

// Service is GatewayService.
type Service struct {
	chat *chat.ChatCompletionService
	db   *store.DB
	opts Options

	mu         sync.Mutex
	queues     map[Conversation]*queue
	prunedSeen time.Time // when forgetOldSeen last ran

	adapters adapterSet
}

// New returns a gateway that runs turns through svc and keeps its
// conversation map and delivery log in db.
func New(svc *chat.ChatCompletionService, db *store.DB, opts Options) *Service {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.MaxQueued <= 0 {
		opts.MaxQueued = 16
	}
	if opts.Backoff <= 0 {
		opts.Backoff = time.Second
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 30 * time.Second
	}
	return &Service{chat: svc, db: db, opts: opts, queues: map[Conversation]*queue{}}
}

// queue holds one conversation's waiting turns; a worker goroutine drains
// it while it is non-empty.
type queue struct {
	jobs    []job
	running bool // a worker drains the queue
	busy    bool // the worker is running a turn
}

type job struct {
	ctx       context.Context
	msg       Message
	sessionID string
	h         Handler
}

// Submit queues msg behind the conversation's earlier messages and returns
// at once; the turn runs under ctx and reports to h. It fails with
// ErrDuplicate for a redelivered message and with an EBUSY error when the
// conversation already has Options.MaxQueued turns waiting.
func (s *Service) Submit(ctx context.Context, msg Message, h Handler) (Ticket, error) {
	if msg.Conversation.Platform == "" || msg.Conversation.ChatID == "" {
		return Ticket{}, errs.Errorf(errs.EINVALID, "gateway: a message needs a platform and a chat id")
	}
	if msg.Text == "" && len(msg.Messages) == 0 {
		return Ticket{}, errs.Errorf(errs.EINVALID, "gateway: the message is empty")
	}
	conv := msg.Conversation

	s.mu.Lock()
	q := s.queues[conv]
	if q == nil {
		q = &queue{}
		s.queues[conv] = q
	}
	ahead := len(q.jobs)
	if q.busy {
		ahead++
	}
	if len(q.jobs) >= s.opts.MaxQueued {
		s.mu.Unlock()
		return Ticket{}, errs.Errorf(errs.EBUSY, "gateway: %d messages are already waiting in this conversation; wait for the answers", len(q.jobs))
	}
	// The store calls run under s.mu so that two messages of one new
	// conversation agree on its session and keep their arrival order. The
	// message is marked seen last: a message that fails before it is queued
	// stays unseen, so that the platform's redelivery is answered.
	s.forgetOldSeen(ctx)
	sessionID, err := s.resolve(ctx, conv, msg.SessionID)
	if err == nil {
		var fresh bool
		fresh, err = s.db.MarkSeen(ctx, conv.Platform, seenKey("msg:", msg.MessageID), seenKey("evt:", msg.EventID))
		if err == nil && !fresh {
			err = ErrDuplicate
		}
	}
	if err != nil {
		if len(q.jobs) == 0 && !q.running {
			delete(s.queues, conv)
		}
		s.mu.Unlock()
		return Ticket{}, err
	}
	q.jobs = append(q.jobs, job{ctx: ctx, msg: msg, sessionID: sessionID, h: h})
	start := !q.running
	q.running = true
	s.mu.Unlock()

	if start {
		go s.drain(conv, q)
	}
	return Ticket{SessionID: sessionID, Ahead: ahead}, nil
}

// Handle submits msg and waits for its turn to end, streaming its events to
// emit. Cancelling ctx cancels the turn (or drops it while it waits).
func (s *Service) Handle(ctx context.Context, msg Message, emit agent.EmitFunc) (*agent.Result, error) {
	type outcome struct {
		res *agent.Result
		err error
	}
	done := make(chan outcome, 1)
	_, err := s.Submit(ctx, msg, Handler{Event: emit, Done: func(r *agent.Result, err error) { done <- outcome{r, err} }})
	if err != nil {
		return nil, err
	}
	o := <-done
	return o.res, o.err
}

func seenKey(prefix, id string) string {
	if id == "" {
		return ""
	}
	return prefix + id
}

// resolve returns the session conv continues, binding it to want when set
// and to a new session when it has none.
func (s *Service) resolve(ctx context.Context, conv Conversation, want string) (string, error) {
	if want != "" {
		return want, s.db.BindConversation(ctx, conv, want)
	}
	id, err := s.db.ConversationSession(ctx, conv)
	if err != nil || id != "" {
		return id, err
	}
	id = chat.NewSessionID()
	return id, s.db.BindConversation(ctx, conv, id)
}

// drain runs q's turns in order until it is empty.
func (s *Service) drain(conv Conversation, q *queue) {
	for {
		s.mu.Lock()
		q.busy = false
		if len(q.jobs) == 0 {
			q.running = false
			delete(s.queues, conv)
			s.mu.Unlock()
			return
		}
		j := q.jobs[0]
		q.jobs = q.jobs[1:]
		q.busy = true
		s.mu.Unlock()
		s.run(j)
	}
}

func (s *Service) run(j job) {
	msgs := j.msg.Messages
	if len(msgs) == 0 {
		msgs = []llm.Message{{Role: llm.RoleUser, Content: j.msg.Text}}
	}
	var res *agent.Result
	err := j.ctx.Err()
	if err == nil {
		res, err = s.chat.Stream(j.ctx, chat.Request{
			SessionID: j.sessionID,
			Source:    j.msg.Conversation.Platform,
			Messages:  msgs,
			Exec: tools.ExecutionContext{
				SessionID:       j.sessionID,
				Source:          j.msg.Conversation.Platform,
				AgentContext:    tools.AgentPrimary,
				TrustedMetadata: j.msg.TrustedMetadata,
				Confirmer:       j.msg.Confirmer,
			},
			ExternalMemory: j.msg.ExternalMemory,
			Params:         j.msg.Params,
		}, func(e agent.Event) {
			if j.h.Event != nil {
				j.h.Event(e)
			}
		})
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		s.opts.Log.Warn("gateway: turn did not run", "platform", j.msg.Conversation.Platform, "session", j.sessionID, "err", err)
	}
	if j.h.Done != nil {
		j.h.Done(res, err)
	}
}

// Session returns the session conv continues, or "" when it has none.
func (s *Service) Session(ctx context.Context, conv Conversation) (string, error) {
	return s.db.ConversationSession(ctx, conv)
}

// Bind makes conv continue sessionID (resuming a stored session), or a new
// session when sessionID is empty. It returns the session now bound.
func (s *Service) Bind(ctx context.Context, conv Conversation, sessionID string) (string, error) {
	if sessionID == "" {
		sessionID = chat.NewSessionID()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return sessionID, s.db.BindConversation(ctx, conv, sessionID)
}

// ForgetSeen drops delivery records older than age.
func (s *Service) ForgetSeen(ctx context.Context, age time.Duration) error {
	_, err := s.db.ForgetSeen(ctx, time.Now().Add(-age))
	return err
}

// seenRetention is how long delivery records are kept; platforms stop
// redelivering within hours (Feishu: minutes).
const seenRetention = 7 * 24 * time.Hour

// forgetOldSeen drops delivery records past seenRetention, at most once an
// hour, so that the table does not grow without bound. Callers hold s.mu.
func (s *Service) forgetOldSeen(ctx context.Context) {
	if time.Since(s.prunedSeen) < time.Hour {
		return
	}
	s.prunedSeen = time.Now()
	if err := s.ForgetSeen(ctx, seenRetention); err != nil {
		s.opts.Log.Warn("gateway: dropping old delivery records failed; retrying in an hour", "err", err)
	}
}
