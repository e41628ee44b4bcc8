package openai

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// sseWriter writes Server-Sent Events and flushes each one. The headers go
// out with the first event, so an error found before then can still be a
// plain JSON error response. Write errors (a client that went away) are
// remembered and later writes are skipped; the request context cancels the
// run.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
	failed  bool
	buf     bytes.Buffer
}

func newSSE(w http.ResponseWriter) *sseWriter {
	return &sseWriter{w: w, rc: http.NewResponseController(w)}
}

func (s *sseWriter) begin() {
	if s.started {
		return
	}
	s.started = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
}

func (s *sseWriter) flush() {
	if s.failed {
		s.buf.Reset()
		return
	}
	if _, err := s.w.Write(s.buf.Bytes()); err != nil {
		s.failed = true
	} else if err := s.rc.Flush(); err != nil {
		s.failed = true
	}
	s.buf.Reset()
}

func (s *sseWriter) marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return bytes.TrimRight(b.Bytes(), "\n")
}

// data writes one "data:" event.
func (s *sseWriter) data(v any) {
	s.begin()
	s.buf.WriteString("data: ")
	s.buf.Write(s.marshal(v))
	s.buf.WriteString("\n\n")
	s.flush()
}

// event writes a named event.
func (s *sseWriter) event(name string, v any) {
	s.begin()
	s.buf.WriteString("event: ")
	s.buf.WriteString(name)
	s.buf.WriteString("\ndata: ")
	s.buf.Write(s.marshal(v))
	s.buf.WriteString("\n\n")
	s.flush()
}

// comment writes an N-Agent extension event as a comment line, which SSE
// clients ignore: ": nagent {json}".
func (s *sseWriter) comment(v any) {
	s.begin()
	s.buf.WriteString(": nagent ")
	s.buf.Write(s.marshal(v))
	s.buf.WriteString("\n\n")
	s.flush()
}

// done writes the terminating "data: [DONE]".
func (s *sseWriter) done() {
	s.begin()
	s.buf.WriteString("data: [DONE]\n\n")
	s.flush()
}
