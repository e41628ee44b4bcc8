// Package scripted owns a fake model server for tests and benchmarks: it
// answers the OpenAI-compatible POST /v1/chat/completions and the Anthropic
// POST /v1/messages over real HTTP with scripted replies, and records every
// request it receives.
//
// A test starts a Server with the replies it expects to be asked for, points
// an adapter at URL, and inspects Requests afterwards:
//
//	srv := scripted.Start(scripted.Reply{Content: "hello"})
//	defer srv.Close()
//	p := openai.New(openai.Config{BaseURL: srv.URL()})
//
// Replies are consumed in order, one per request, whichever endpoint asks.
// When the script runs out, the responder set with SetResponder answers; with
// none, the server answers HTTP 500 "scripted model: no reply left for
// request N" so that a test which asks more than it scripted fails loudly.
//
// Tests in another process script the same server over HTTP through the
// control endpoint under /_scripted/ (see RepliesPath and RequestsPath).
package scripted

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/nagent/nagent/runtime/llm"
)

// Paths the server answers.
const (
	ChatCompletionsPath = "/v1/chat/completions"
	MessagesPath        = "/v1/messages"
)

// Reply is one scripted answer. The zero Reply is an empty assistant message
// that finishes with "stop".
type Reply struct {
	Content   string
	Reasoning string
	ToolCalls []llm.ToolCall // an empty ID becomes a deterministic one
	// FinishReason is in OpenAI's vocabulary; the default is "tool_calls"
	// when ToolCalls is set, else "stop". The Anthropic endpoint maps it to
	// a stop_reason.
	FinishReason string
	// Usage defaults to a small deterministic count of about one token per
	// four characters of the request's and the reply's text.
	Usage *llm.Usage
	// Status, when non-zero, answers this HTTP status with an error body in
	// the endpoint's format instead of a completion.
	Status int
	// ErrorMessage is the message of the error body (Status) or of the
	// in-stream error (StreamErrorAfter); it defaults to the status text or
	// "scripted stream error".
	ErrorMessage string
	// Header holds extra response headers, e.g. Retry-After.
	Header map[string]string
	// Delay is a wait before answering; a client that gives up ends it.
	Delay time.Duration
	// ChunkDelay is a wait between streamed chunks.
	ChunkDelay time.Duration
	// ChunkSize is how many runes of content, reasoning or tool arguments go
	// into one streamed chunk; the default is 3.
	ChunkSize int
	// StreamErrorAfter, when positive and the request streams, sends an
	// in-stream error event after this many events and ends the response.
	StreamErrorAfter int
	// DropConnection closes the connection without answering.
	DropConnection bool
}

// RecordedRequest is one request the server received.
type RecordedRequest struct {
	Path   string
	Header http.Header
	Body   []byte
	Stream bool
	Model  string
	// Messages are the conversation in provider-neutral form. For
	// /v1/messages the top-level system prompt becomes a leading system
	// message, tool_use blocks become ToolCalls and each tool_result block
	// becomes a tool message.
	Messages []llm.Message
	Tools    []llm.ToolSpec
}

// Server is a running scripted model server. It is safe for concurrent use.
type Server struct {
	srv  *httptest.Server
	done chan struct{} // closed by Close to release delayed handlers
	once sync.Once

	mu        sync.Mutex
	queue     []Reply
	responder func(RecordedRequest) Reply
	requests  []RecordedRequest
}

// Start starts a server on 127.0.0.1 with an ephemeral port, scripted with
// replies. The caller must Close it.
func Start(replies ...Reply) *Server {
	s := &Server{done: make(chan struct{}), queue: append([]Reply(nil), replies...)}
	mux := http.NewServeMux()
	s.controlRoutes(mux)
	mux.HandleFunc("/", s.serveHTTP)
	s.srv = httptest.NewServer(mux)
	return s
}

// URL returns the base URL ending in /v1, e.g. http://127.0.0.1:1234/v1. It
// is the BaseURL for the OpenAI adapter (which appends /chat/completions) and
// also for the Anthropic adapter, which accepts a base with or without the
// /v1 suffix; RootURL is the base without it.
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// RootURL returns the server's root URL, e.g. http://127.0.0.1:1234.
func (s *Server) RootURL() string { return s.srv.URL }

// Enqueue appends replies to the script.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, replies...)
}

// SetResponder sets the function that answers when the script is empty, e.g.
// Echo for load tests. It may be called concurrently and must be safe for
// that; nil removes it.
func (s *Server) SetResponder(f func(req RecordedRequest) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.responder = f
}

// Pending returns how many scripted replies have not been used yet.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Requests returns every request received so far, in arrival order.
func (s *Server) Requests() []RecordedRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]RecordedRequest(nil), s.requests...)
}

// Close ends delayed and streaming answers, shuts the server down and waits
// for its handlers to return.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.done)
		s.srv.Close()
	})
}

// Echo is a responder that answers "echo: " followed by the last user
// message, for load tests.
func Echo(req RecordedRequest) Reply {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == llm.RoleUser {
			return Reply{Content: "echo: " + req.Messages[i].Content}
		}
	}
	return Reply{Content: "echo:"}
}

// dialect is one wire format the server speaks.
type dialect interface {
	// parse fills rec's parsed fields from rec.Body.
	parse(rec *RecordedRequest) (streamOpts, error)
	writeError(w http.ResponseWriter, status int, msg string)
	writeReply(w http.ResponseWriter, n int, rec *RecordedRequest, r *Reply)
	writeStream(sw *sseWriter, n int, rec *RecordedRequest, r *Reply, opts streamOpts)
}

// streamOpts are request options that shape a streamed answer.
type streamOpts struct{ includeUsage bool }

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	rec := RecordedRequest{Path: r.URL.Path, Header: r.Header.Clone(), Body: body}

	var d dialect
	switch r.URL.Path {
	case ChatCompletionsPath:
		d = openaiDialect{}
	case MessagesPath:
		d = anthropicDialect{}
	default:
		s.record(rec)
		openaiDialect{}.writeError(w, http.StatusNotFound, fmt.Sprintf("scripted model: no route for %s %s", r.Method, r.URL.Path))
		return
	}
	if r.Method != http.MethodPost {
		s.record(rec)
		d.writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("scripted model: %s needs POST, got %s", r.URL.Path, r.Method))
		return
	}
	if err != nil {
		s.record(rec)
		d.writeError(w, http.StatusBadRequest, "scripted model: read request body: "+err.Error())
		return
	}
	opts, err := d.parse(&rec)
	if err != nil {
		s.record(rec)
		d.writeError(w, http.StatusBadRequest, "scripted model: invalid request body: "+err.Error())
		return
	}

	n, reply, ok := s.next(rec)
	if !ok {
		d.writeError(w, http.StatusInternalServerError, fmt.Sprintf("scripted model: no reply left for request %d", n))
		return
	}
	if !s.wait(r.Context(), reply.Delay) {
		return
	}
	if reply.DropConnection {
		dropConnection(w)
		return
	}
	for k, v := range reply.Header {
		w.Header().Set(k, v)
	}
	if reply.Status != 0 {
		msg := reply.ErrorMessage
		if msg == "" {
			msg = http.StatusText(reply.Status)
		}
		d.writeError(w, reply.Status, msg)
		return
	}
	reply.fillDefaults(n, &rec)
	if rec.Stream {
		d.writeStream(s.newSSEWriter(r.Context(), w, &reply), n, &rec, &reply, opts)
		return
	}
	d.writeReply(w, n, &rec, &reply)
}

// record appends a request that gets no scripted reply.
func (s *Server) record(rec RecordedRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, rec)
}

// next records rec and takes its reply: n is the request's 1-based number.
func (s *Server) next(rec RecordedRequest) (n int, r Reply, ok bool) {
	s.mu.Lock()
	s.requests = append(s.requests, rec)
	n = len(s.requests)
	if len(s.queue) > 0 {
		r = s.queue[0]
		s.queue = s.queue[1:]
		s.mu.Unlock()
		return n, r, true
	}
	f := s.responder
	s.mu.Unlock()
	if f == nil {
		return n, Reply{}, false
	}
	return n, f(rec), true
}

// wait sleeps for d unless the client leaves or the server closes first.
func (s *Server) wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-s.done:
	}
	return false
}

// dropConnection closes the client's connection without an answer.
func dropConnection(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("scripted: response writer cannot be hijacked")
	}
	conn, _, err := hj.Hijack()
	if err == nil {
		conn.Close()
	}
}

// fillDefaults settles the reply's defaults for request n.
func (r *Reply) fillDefaults(n int, rec *RecordedRequest) {
	if r.ChunkSize <= 0 {
		r.ChunkSize = 3
	}
	if r.FinishReason == "" {
		r.FinishReason = llm.FinishStop
		if len(r.ToolCalls) > 0 {
			r.FinishReason = llm.FinishToolCalls
		}
	}
	calls := make([]llm.ToolCall, len(r.ToolCalls))
	for i, c := range r.ToolCalls {
		if c.ID == "" {
			c.ID = fmt.Sprintf("call_scripted_%d_%d", n, i)
		}
		calls[i] = c
	}
	r.ToolCalls = calls
	if r.Usage == nil {
		r.Usage = defaultUsage(rec, r)
	}
}

// defaultUsage counts about one token per four characters.
func defaultUsage(rec *RecordedRequest, r *Reply) *llm.Usage {
	prompt := 0
	for _, m := range rec.Messages {
		prompt += tokens(m.Content)
		for _, c := range m.ToolCalls {
			prompt += tokens(c.Arguments)
		}
	}
	reasoning := tokens(r.Reasoning)
	completion := tokens(r.Content) + reasoning
	for _, c := range r.ToolCalls {
		completion += tokens(c.Name) + tokens(c.Arguments)
	}
	prompt, completion = max(prompt, 1), max(completion, 1)
	return &llm.Usage{
		PromptTokens:     prompt,
		CompletionTokens: completion,
		TotalTokens:      prompt + completion,
		ReasoningTokens:  reasoning,
	}
}

func tokens(s string) int { return (utf8.RuneCountInString(s) + 3) / 4 }

// splitRunes cuts s into pieces of at most n runes; "" yields no pieces.
func splitRunes(s string, n int) []string {
	var out []string
	for s != "" {
		i, k := 0, 0
		for i < len(s) && k < n {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			k++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

// sseWriter writes server-sent events, pacing them and injecting the
// scripted in-stream error.
type sseWriter struct {
	w       http.ResponseWriter
	flusher http.Flusher
	ctx     context.Context
	server  *Server
	reply   *Reply
	sent    int
	stopped bool
	// errorEvent writes the dialect's in-stream error.
	errorEvent func(sw *sseWriter, msg string)
}

func (s *Server) newSSEWriter(ctx context.Context, w http.ResponseWriter, r *Reply) *sseWriter {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sseWriter{w: w, flusher: f, ctx: ctx, server: s, reply: r}
}

// event writes one event (name may be empty) with v as JSON data. It reports
// false once the stream has stopped: the client left, the server closed, or
// the scripted error was sent.
func (sw *sseWriter) event(name string, v any) bool {
	if sw.stopped {
		return false
	}
	if sw.sent > 0 && !sw.server.wait(sw.ctx, sw.reply.ChunkDelay) {
		sw.stopped = true
		return false
	}
	if sw.ctx.Err() != nil {
		sw.stopped = true
		return false
	}
	if lim := sw.reply.StreamErrorAfter; lim > 0 && sw.sent == lim {
		msg := sw.reply.ErrorMessage
		if msg == "" {
			msg = "scripted stream error"
		}
		sw.errorEvent(sw, msg)
		sw.stopped = true
		return false
	}
	data, err := json.Marshal(v)
	if err != nil {
		panic("scripted: marshal event: " + err.Error())
	}
	sw.raw(name, string(data))
	sw.sent++
	return true
}

// raw writes one event without pacing or counting.
func (sw *sseWriter) raw(name, data string) {
	var b strings.Builder
	if name != "" {
		b.WriteString("event: " + name + "\n")
	}
	b.WriteString("data: " + data + "\n\n")
	io.WriteString(sw.w, b.String())
	if sw.flusher != nil {
		sw.flusher.Flush()
	}
}

// textOf reads message content that is a string, null, or an array of
// parts with text fields.
func textOf(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("content is neither a string nor an array of parts: %w", err)
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String(), nil
}
