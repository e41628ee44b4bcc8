package web

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nagent/nagent/runtime/errs"
)

// Fixed topics; a session's run events go to "session:<id>".
const (
	TopicSessions = "sessions"
	TopicSandbox  = "sandbox"
	TopicPolicy   = "policy"
	TopicWarnings = "warnings"
	sessionPrefix = "session:"
)

// SessionTopic is the topic of a session's run events.
func SessionTopic(sessionID string) string { return sessionPrefix + sessionID }

var sessionIDPattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,128}$`)

// validTopic checks a topic name a client asked for.
func validTopic(t string) error {
	switch t {
	case TopicSessions, TopicSandbox, TopicPolicy, TopicWarnings, TopicInbox:
		return nil
	}
	if id, ok := strings.CutPrefix(t, sessionPrefix); ok && sessionIDPattern.MatchString(id) {
		return nil
	}
	return errs.Errorf(errs.EINVALID, "unknown topic %q; topics are sessions, sandbox, policy, warnings, inbox and session:<id>", t)
}

// Hub fans events out to websocket clients by topic. Publishing never
// blocks: a client whose send queue is full is dropped. Each topic keeps a
// ring of its recent events so that a reconnecting client can resume.
type Hub struct {
	serverID string
	startID  int64
	lastID   atomic.Int64
	ringSize int
	idle     time.Duration
	now      func() time.Time

	mu      sync.RWMutex
	topics  map[string]*topic
	clients map[*client]struct{}
	closed  bool

	dropped atomic.Int64 // clients dropped for a full queue

	// Publishing only appends to pending and wakes the fan-out goroutine:
	// a run pays the same for an event whether 0 or 200 clients watch.
	pmu     sync.Mutex // guards pending; taken by publishers
	pending []envelope // published, not yet fanned out, in id order
	wake    chan struct{}
	quit    chan struct{}
	fanDone chan struct{}
}

// topic is one topic's subscribers and recent events.
type topic struct {
	name       string
	mu         sync.Mutex
	subs       map[*client]struct{}
	ring       []envelope // circular, len ≤ ringSize
	head       int        // index of the oldest entry when full
	evicted    int64      // the largest id dropped from the ring
	lastActive time.Time
	persistent bool
}

func (h *Hub) newTopic(name string, persistent bool) *topic {
	return &topic{name: name, subs: map[*client]struct{}{}, lastActive: h.now(), persistent: persistent}
}

// fanOut moves published events, in id order, into their topic's ring and
// their subscribers' queues. One goroutine does it for every topic, so a
// client receives events in id order across topics too, which makes one
// last_event_id enough to resume.
func (h *Hub) fanOut() {
	defer close(h.fanDone)
	var batch []envelope
	for {
		select {
		case <-h.quit:
			return
		case <-h.wake:
		}
		h.pmu.Lock()
		batch, h.pending = h.pending, batch[:0]
		h.pmu.Unlock()
		for _, env := range batch {
			t := env.topic
			t.mu.Lock()
			if len(t.ring) < h.ringSize {
				t.ring = append(t.ring, env)
			} else {
				t.evicted = t.ring[t.head].id
				t.ring[t.head] = env
				t.head = (t.head + 1) % len(t.ring)
			}
			for c := range t.subs {
				if !c.enqueue(env.msg) {
					h.drop(c)
				}
			}
			t.lastActive = h.now()
			t.mu.Unlock()
		}
		clear(batch)
	}
}

// envelope is one published event, already encoded as its wire message.
type envelope struct {
	id    int64
	msg   []byte
	topic *topic
}

func newHub(ringSize int, idle time.Duration, now func() time.Time) *Hub {
	h := &Hub{serverID: newID("srv_"), ringSize: ringSize, idle: idle, now: now, topics: map[string]*topic{}, clients: map[*client]struct{}{},
		wake: make(chan struct{}, 1), quit: make(chan struct{}), fanDone: make(chan struct{})}
	h.startID = now().UnixMicro()
	h.lastID.Store(h.startID)
	for _, t := range []string{TopicSessions, TopicSandbox, TopicPolicy, TopicWarnings, TopicInbox} {
		h.topics[t] = h.newTopic(t, true)
	}
	go h.fanOut()
	return h
}

// LastEventID is the id of the latest published event.
func (h *Hub) LastEventID() int64 { return h.lastID.Load() }

// Dropped counts clients dropped because their send queue was full.
func (h *Hub) Dropped() int64 { return h.dropped.Load() }

// Ensure creates a topic if missing, so that it keeps events before anyone
// subscribes (a dashboard run's session).
func (h *Hub) Ensure(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ensureLocked(name)
}

func (h *Hub) ensureLocked(name string) *topic {
	t := h.topics[name]
	if t == nil {
		t = h.newTopic(name, false)
		h.topics[name] = t
	}
	return t
}

// Publish sends event to the topic's subscribers and keeps it in the
// topic's ring, through the hub's fan-out goroutine. A session topic
// nobody subscribed to (and nobody ensured) drops the event at once. It
// never blocks on a client, and costs the same whatever the subscribers.
func (h *Hub) Publish(name string, event any) { h.publish(name, event) }

// publish is Publish returning the wire message, or nil when dropped.
func (h *Hub) publish(name string, event any) []byte {
	h.mu.RLock()
	t := h.topics[name]
	closed := h.closed
	h.mu.RUnlock()
	if t == nil || closed {
		return nil
	}
	payload, err := json.Marshal(event)
	if err != nil {
		return nil
	}
	h.pmu.Lock()
	id := h.lastID.Add(1) // under pmu, so pending stays in id order
	msg := encodeEvent(id, name, h.now(), payload)
	h.pending = append(h.pending, envelope{id: id, msg: msg, topic: t})
	h.pmu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default: // the fan-out is already due to run
	}
	return msg
}

// encodeEvent builds {"type":"event","id":…,"topic":…,"time":…,"event":…}.
func encodeEvent(id int64, topicName string, at time.Time, payload []byte) []byte {
	b := make([]byte, 0, len(payload)+96+len(topicName))
	b = append(b, `{"type":"event","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"topic":`...)
	b = strconv.AppendQuote(b, topicName)
	b = append(b, `,"time":"`...)
	b = at.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","event":`...)
	b = append(b, payload...)
	return append(b, '}')
}

// subscribe adds c to the topics and replays, per topic, the kept events
// after lastID (when lastID > 0), preceded by a gap message when some may
// be gone.
func (h *Hub) subscribe(c *client, names []string, lastID int64) bool {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return false
	}
	ts := make([]*topic, len(names))
	for i, n := range names {
		ts[i] = h.ensureLocked(n)
	}
	h.mu.Unlock()
	for i, t := range ts {
		t.mu.Lock()
		t.subs[c] = struct{}{}
		t.lastActive = h.now()
		ok := true
		if lastID > 0 {
			if lastID < t.evicted || lastID < h.startID {
				ok = c.enqueue(mustJSON(map[string]any{"type": "gap", "topic": names[i],
					"message": "some events after " + strconv.FormatInt(lastID, 10) + " are gone; reload this topic's state over /api"}))
			}
			n := len(t.ring)
			for k := 0; k < n && ok; k++ {
				e := t.ring[(t.head+k)%n]
				if e.id > lastID {
					ok = c.enqueue(e.msg)
				}
			}
		}
		t.mu.Unlock()
		if !ok {
			h.drop(c)
			return false
		}
	}
	return true
}

// unsubscribe removes c from the topics.
func (h *Hub) unsubscribe(c *client, names []string) {
	h.mu.RLock()
	ts := make([]*topic, 0, len(names))
	for _, n := range names {
		if t := h.topics[n]; t != nil {
			ts = append(ts, t)
		}
	}
	h.mu.RUnlock()
	for _, t := range ts {
		t.mu.Lock()
		delete(t.subs, c)
		t.lastActive = h.now()
		t.mu.Unlock()
	}
}

// add registers a connected client; false once the hub is closed.
func (h *Hub) add(c *client) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.clients[c] = struct{}{}
	return true
}

// Clients is the number of connected websocket clients.
func (h *Hub) Clients() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.clients)
}

// remove takes c out of every topic.
func (h *Hub) remove(c *client) {
	h.mu.Lock()
	delete(h.clients, c)
	ts := make([]*topic, 0, len(h.topics))
	for _, t := range h.topics {
		ts = append(ts, t)
	}
	h.mu.Unlock()
	for _, t := range ts {
		t.mu.Lock()
		delete(t.subs, c)
		t.mu.Unlock()
	}
}

// drop disconnects a client whose queue is full.
func (h *Hub) drop(c *client) {
	if c.kill("send queue full") {
		h.dropped.Add(1)
	}
}

// sweep forgets session topics that have had no subscriber for the idle
// time.
func (h *Hub) sweep() {
	cutoff := h.now().Add(-h.idle)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	for name, t := range h.topics {
		if t.persistent {
			continue
		}
		t.mu.Lock()
		idle := len(t.subs) == 0 && t.lastActive.Before(cutoff)
		t.mu.Unlock()
		if idle {
			delete(h.topics, name)
		}
	}
}

// close disconnects every client; later publishes are dropped.
func (h *Hub) close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	close(h.quit)
	cs := make([]*client, 0, len(h.clients))
	for c := range h.clients {
		cs = append(cs, c)
	}
	h.mu.Unlock()
	<-h.fanDone
	for _, c := range cs {
		c.kill("server shutting down")
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
