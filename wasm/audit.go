package wasm

import (
	"context"
	"sync"

	"github.com/nagent/nagent/store"
)

// auditBatch is a call's audit records, or (with done) a request to signal
// once everything queued before it is stored.
type auditBatch struct {
	recs []store.PluginHostCall
	done chan struct{}
}

// auditor stores host-call audit records in the background, batching the
// records of concurrent calls into one transaction, so that a call does not
// wait for a database write.
type auditor struct {
	h      *Host
	mu     sync.RWMutex // guards closed against sends on a closed queue
	closed bool
	queue  chan auditBatch
	done   chan struct{}
}

func newAuditor(h *Host) *auditor {
	a := &auditor{h: h, queue: make(chan auditBatch, 256), done: make(chan struct{})}
	go a.loop()
	return a
}

func (a *auditor) loop() {
	defer close(a.done)
	for b := range a.queue {
		recs, signals := b.recs, []chan struct{}{b.done}
	more:
		for len(recs) < 1000 {
			select {
			case next, ok := <-a.queue:
				if !ok {
					break more
				}
				recs = append(recs, next.recs...)
				signals = append(signals, next.done)
			default:
				break more
			}
		}
		a.write(recs)
		for _, s := range signals {
			if s != nil {
				close(s)
			}
		}
	}
}

func (a *auditor) write(recs []store.PluginHostCall) {
	if len(recs) == 0 {
		return
	}
	if err := a.h.opts.Store.SavePluginHostCalls(context.Background(), recs); err != nil {
		a.h.opts.Log.Error("cannot audit plugin host calls", "calls", len(recs), "err", err)
	}
}

// add queues recs; after close, or when the queue is full, it writes them
// itself.
func (a *auditor) add(recs []store.PluginHostCall) {
	a.mu.RLock()
	if !a.closed {
		select {
		case a.queue <- auditBatch{recs: recs}:
			a.mu.RUnlock()
			return
		default:
		}
	}
	a.mu.RUnlock()
	a.write(recs)
}

// sync waits until every record queued so far is stored.
func (a *auditor) sync(ctx context.Context) {
	done := make(chan struct{})
	a.mu.RLock()
	if a.closed {
		a.mu.RUnlock()
		return
	}
	a.queue <- auditBatch{done: done}
	a.mu.RUnlock()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// close stores what is queued and stops the writer.
func (a *auditor) close() {
	a.mu.Lock()
	if !a.closed {
		a.closed = true
		close(a.queue)
	}
	a.mu.Unlock()
	<-a.done
}
