package agent

import (
	"context"
	"sync"

	"github.com/nagent/nagent/runtime/errs"
)

// sessionLocks serialises turns per session while letting different
// sessions run in parallel. Waiters queue in arrival order.
type sessionLocks struct {
	mu    sync.Mutex
	slots map[string]*sessionSlot
}

type sessionSlot struct {
	token   chan struct{} // holds one token while the session is free
	holders int           // running + waiting turns
}

// acquire waits for the session's turn. maxWaiting bounds how many turns
// may wait behind a running one (0: unbounded); past it the call fails
// with EBUSY at once. The returned func releases the turn.
func (l *sessionLocks) acquire(ctx context.Context, id string, maxWaiting int) (func(), error) {
	l.mu.Lock()
	if l.slots == nil {
		l.slots = make(map[string]*sessionSlot)
	}
	s := l.slots[id]
	if s == nil {
		s = &sessionSlot{token: make(chan struct{}, 1)}
		s.token <- struct{}{}
		l.slots[id] = s
	}
	if maxWaiting > 0 && s.holders > maxWaiting {
		l.mu.Unlock()
		return nil, errs.Errorf(errs.EBUSY, "session %q already has %d turns queued; retry later", id, maxWaiting)
	}
	s.holders++
	l.mu.Unlock()

	select {
	case <-s.token:
		return func() { l.release(id, s, true) }, nil
	case <-ctx.Done():
		l.release(id, s, false)
		return nil, ctx.Err()
	}
}

func (l *sessionLocks) release(id string, s *sessionSlot, held bool) {
	if held {
		s.token <- struct{}{}
	}
	l.mu.Lock()
	s.holders--
	if s.holders == 0 {
		delete(l.slots, id)
	}
	l.mu.Unlock()
}
