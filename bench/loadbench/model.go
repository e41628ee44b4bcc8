package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/nagent/nagent/runtime/llm/scripted"
)

// model is the scripted model behind a timing proxy. The proxy measures how
// long each model call takes, from the request's arrival to the end of the
// answer, keyed by the bench id in the user message, and counts the
// connections the server opens to the model.
type model struct {
	scripted  *scripted.Server
	srv       *http.Server
	ln        net.Listener
	transport *http.Transport // the proxy's, to the scripted model
	conns     atomic.Int64

	mu    sync.Mutex
	calls map[int64]*modelCall
}

type modelCall struct {
	took time.Duration
	done chan struct{}
}

func startModel(delay time.Duration) (*model, error) {
	sm := scripted.Start()
	sm.SetResponder(func(req scripted.RecordedRequest) scripted.Reply { return pacedReply(req, delay) })
	target, err := url.Parse(sm.RootURL())
	if err != nil {
		sm.Close()
		return nil, fmt.Errorf("loadbench: scripted model URL: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		sm.Close()
		return nil, fmt.Errorf("loadbench: model proxy: %w", err)
	}
	m := &model{scripted: sm, ln: ln, calls: map[int64]*modelCall{}, transport: &http.Transport{
		MaxIdleConns: 10000, MaxIdleConnsPerHost: 10000,
		IdleConnTimeout: 90 * time.Second, DisableCompression: true,
	}}
	proxy := &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		Transport: m.transport,
		ErrorLog:  log.New(io.Discard, "", 0),
	}
	m.srv = &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { m.serve(proxy, w, r) }),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				m.conns.Add(1)
			}
		},
	}
	go m.srv.Serve(ln)
	return m, nil
}

// url is the base URL the server is given, ending in /v1.
func (m *model) url() string { return "http://" + m.ln.Addr().String() + "/v1" }

func (m *model) serve(proxy http.Handler, w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if id, ok := benchID(body); ok {
		// Deferred because the proxy aborts the handler with a panic when
		// the server hangs up as soon as it has read data: [DONE].
		defer m.record(id, start)
	}
	proxy.ServeHTTP(w, r) // returns once the whole answer is relayed
}

// record notes that the model call of request id, begun at start, is over.
func (m *model) record(id int64, start time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.call(id)
	c.took += time.Since(start)
	select {
	case <-c.done:
	default:
		close(c.done)
	}
}

// call returns the record of id's model call, creating it; m.mu is held.
func (m *model) call(id int64) *modelCall {
	c := m.calls[id]
	if c == nil {
		c = &modelCall{done: make(chan struct{})}
		m.calls[id] = c
	}
	return c
}

// take returns and forgets the model time of request id. The proxy may
// finish its bookkeeping just after the client saw [DONE], so it waits a
// little for it.
func (m *model) take(ctx context.Context, id int64) (time.Duration, bool) {
	m.mu.Lock()
	c := m.call(id)
	m.mu.Unlock()
	t := time.NewTimer(time.Second)
	defer t.Stop()
	measured := true
	select {
	case <-c.done:
	case <-t.C:
		measured = false
	case <-ctx.Done():
		measured = false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.calls, id)
	return c.took, measured
}

func (m *model) close() {
	m.srv.Close()
	m.transport.CloseIdleConnections()
	m.scripted.Close()
}

// pacedReply answers with replyText so that the model's whole answer takes
// about total: half before the first byte, the rest spread over the chunks.
func pacedReply(req scripted.RecordedRequest, total time.Duration) scripted.Reply {
	r := scripted.Reply{Content: replyText, ChunkSize: replyChunk}
	if !req.Stream {
		r.Delay = total
		return r
	}
	// The stream is a role chunk, the content chunks, a finish chunk and,
	// when asked for, a usage chunk, with ChunkDelay between two of them.
	events := 2 + (utf8.RuneCountInString(replyText)+replyChunk-1)/replyChunk
	if bytes.Contains(req.Body, []byte(`"include_usage":true`)) {
		events++
	}
	r.Delay = total / 2
	r.ChunkDelay = (total - r.Delay) / time.Duration(events-1)
	return r
}

func benchID(body []byte) (int64, bool) {
	_, rest, ok := bytes.Cut(body, []byte(idMarker))
	if !ok {
		return 0, false
	}
	end := bytes.IndexByte(rest, ']')
	if end < 0 {
		return 0, false
	}
	id, err := strconv.ParseInt(string(rest[:end]), 10, 64)
	return id, err == nil
}

// serverProc is a running `nagent serve`.
