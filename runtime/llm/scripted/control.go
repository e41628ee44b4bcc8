package scripted

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/nagent/nagent/runtime/llm"
)

// Paths of the control endpoint, which lets a test in another process (a
// Node or Python client suite, say) script the model over HTTP. Control
// requests are not recorded and take no reply.
const (
	// RepliesPath takes POST with a JSON array of ReplySpec to enqueue, and
	// DELETE to clear the replies not used yet.
	RepliesPath = "/_scripted/replies"
	// RequestsPath answers GET with the recorded requests as a JSON array of
	// RequestSpec, in arrival order.
	RequestsPath = "/_scripted/requests"

	controlPrefix = "/_scripted/"
)

// ReplySpec is the JSON form of a Reply. Durations are whole milliseconds
// and tool calls take OpenAI's shape:
//
//	{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}
type ReplySpec struct {
	Content          string            `json:"content"`
	Reasoning        string            `json:"reasoning"`
	ToolCalls        []llm.ToolCall    `json:"tool_calls"`
	FinishReason     string            `json:"finish_reason"`
	Usage            *llm.Usage        `json:"usage"`
	Status           int               `json:"status"`
	ErrorMessage     string            `json:"error_message"`
	Header           map[string]string `json:"header"`
	DelayMS          int               `json:"delay_ms"`
	ChunkDelayMS     int               `json:"chunk_delay_ms"`
	ChunkSize        int               `json:"chunk_size"`
	StreamErrorAfter int               `json:"stream_error_after"`
	DropConnection   bool              `json:"drop_connection"`
}

// Reply converts the spec.
func (s ReplySpec) Reply() Reply {
	return Reply{
		Content:          s.Content,
		Reasoning:        s.Reasoning,
		ToolCalls:        s.ToolCalls,
		FinishReason:     s.FinishReason,
		Usage:            s.Usage,
		Status:           s.Status,
		ErrorMessage:     s.ErrorMessage,
		Header:           s.Header,
		Delay:            time.Duration(s.DelayMS) * time.Millisecond,
		ChunkDelay:       time.Duration(s.ChunkDelayMS) * time.Millisecond,
		ChunkSize:        s.ChunkSize,
		StreamErrorAfter: s.StreamErrorAfter,
		DropConnection:   s.DropConnection,
	}
}

// RequestSpec is the JSON form of a RecordedRequest, without its headers
// and raw body.
type RequestSpec struct {
	Path     string         `json:"path"`
	Stream   bool           `json:"stream"`
	Model    string         `json:"model"`
	Messages []llm.Message  `json:"messages"`
	Tools    []llm.ToolSpec `json:"tools"`
}

// controlRoutes serves the control endpoint on mux.
func (s *Server) controlRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST "+RepliesPath, s.handleEnqueue)
	mux.HandleFunc("DELETE "+RepliesPath, s.handleClearReplies)
	mux.HandleFunc("GET "+RequestsPath, s.handleListRequests)
	mux.HandleFunc(controlPrefix, func(w http.ResponseWriter, r *http.Request) {
		openaiDialect{}.writeError(w, http.StatusNotFound, fmt.Sprintf(
			"scripted control: no route for %s %s; use POST or DELETE %s, or GET %s",
			r.Method, r.URL.Path, RepliesPath, RequestsPath))
	})
}

func (s *Server) handleEnqueue(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		openaiDialect{}.writeError(w, http.StatusBadRequest, "scripted control: read request body: "+err.Error())
		return
	}
	specs, err := decodeReplySpecs(body)
	if err != nil {
		openaiDialect{}.writeError(w, http.StatusBadRequest, "scripted control: "+err.Error())
		return
	}
	replies := make([]Reply, len(specs))
	for i, spec := range specs {
		replies[i] = spec.Reply()
	}
	s.mu.Lock()
	s.queue = append(s.queue, replies...)
	pending := len(s.queue)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]int{"queued": len(replies), "pending": pending})
}

// decodeReplySpecs reads a JSON array of replies, refusing unknown fields
// so that a misspelt option fails the test that sent it.
func decodeReplySpecs(body []byte) ([]ReplySpec, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, fmt.Errorf("the body must be a JSON array of replies: %w", err)
	}
	specs := make([]ReplySpec, len(raw))
	for i, item := range raw {
		dec := json.NewDecoder(bytes.NewReader(item))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&specs[i]); err != nil {
			return nil, fmt.Errorf("replies[%d]: %w", i, err)
		}
	}
	return specs, nil
}

func (s *Server) handleClearReplies(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	cleared := len(s.queue)
	s.queue = nil
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]int{"cleared": cleared})
}

func (s *Server) handleListRequests(w http.ResponseWriter, r *http.Request) {
	recs := s.Requests()
	out := make([]RequestSpec, len(recs))
	for i, rec := range recs {
		out[i] = RequestSpec{Path: rec.Path, Stream: rec.Stream, Model: rec.Model, Messages: rec.Messages, Tools: rec.Tools}
		if out[i].Messages == nil {
			out[i].Messages = []llm.Message{}
		}
		if out[i].Tools == nil {
			out[i].Tools = []llm.ToolSpec{}
		}
	}
	writeJSON(w, http.StatusOK, out)
}
