package openai

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/nagent/nagent/runtime/agent"
	"github.com/nagent/nagent/runtime/chat"
	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/memory"
)

// decodeBody reads a JSON body of at most MaxBodyBytes into v, turning every
// failure into the error OpenAI would give.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) *apiError {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return newAPIError(http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large",
				"request body is larger than %d bytes", mbe.Limit)
		}
		return invalid("", "could not read the request body: %v", err)
	}
	return decodeJSON(body, v)
}

// decodeJSON parses a request body, naming the field of a type error.
func decodeJSON(body []byte, v any) *apiError {
	if len(body) == 0 {
		return invalid("", "the request body is empty; send a JSON object")
	}
	if err := json.Unmarshal(body, v); err != nil {
		var typeErr *json.UnmarshalTypeError
		var syntaxErr *json.SyntaxError
		switch {
		case errors.As(err, &typeErr) && typeErr.Field != "":
			return invalid(typeErr.Field, "Invalid type for '%s': expected %s, but got %s.", typeErr.Field, typeErr.Type, typeErr.Value)
		case errors.As(err, &syntaxErr):
			return invalid("", "We could not parse the JSON body of your request: %v (at byte %d).", err, syntaxErr.Offset)
		}
		return invalid("", "We could not parse the JSON body of your request: %v", err)
	}
	return nil
}

// turnRequest is a decoded, validated chat-completions request.
type turnRequest struct {
	chat         chat.Request
	model        string
	stream       bool
	includeUsage bool
}

// parseChatRequest validates the body and binds it to a session.
func (s *Server) parseChatRequest(ctx context.Context, r *http.Request, body *ChatCompletionRequest) (*turnRequest, *apiError) {
	if e := s.resolveModel(body.Model); e != nil {
		return nil, e
	}
	if len(body.Messages) == 0 {
		return nil, invalid("messages", "messages must be a non-empty array")
	}
	if body.N != nil && *body.N != 1 {
		return nil, invalid("n", "n=%d is not supported; N-Agent returns exactly one choice", *body.N)
	}
	msgs, e := toMessages(body.Messages)
	if e != nil {
		return nil, e
	}
	tools, e := toolSpecs(body.Tools)
	if e != nil {
		return nil, e
	}
	choice, e := toolChoice(body.ToolChoice)
	if e != nil {
		return nil, e
	}
	stop, e := stopSequences(body.Stop)
	if e != nil {
		return nil, e
	}
	params := llm.GenerationParams{
		Temperature: body.Temperature, TopP: body.TopP, MaxTokens: body.MaxTokens, Stop: stop, Seed: body.Seed,
		PresencePenalty: body.PresencePenalty, FrequencyPenalty: body.FrequencyPenalty, ReasoningEffort: body.ReasoningEffort,
	}
	if body.MaxCompletionTokens != nil {
		params.MaxTokens = body.MaxCompletionTokens
	}

	sessionID := r.Header.Get("X-Session-Id")
	if sessionID == "" {
		sessionID = body.Metadata["session_id"]
	}
	input, e := s.sessionInput(ctx, sessionID, msgs, "messages")
	if e != nil {
		return nil, e
	}
	if sessionID == "" {
		sessionID = chat.NewSessionID()
	}
	tr := &turnRequest{
		chat: chat.Request{
			SessionID: sessionID, Source: "api", Messages: input,
			ClientTools: tools, Params: params, ToolChoice: choice,
			ExternalMemory: externalMemory(body.Metadata),
		},
		model:  body.Model,
		stream: body.Stream,
	}
	if body.StreamOptions != nil {
		tr.includeUsage = body.StreamOptions.IncludeUsage
	}
	return tr, nil
}

// sessionInput picks the messages a turn appends. A request without a
// session is stateless: its messages are the whole history. A request bound
// to an existing session appends only its new messages: those after the
// last assistant message. param names the request field that carried msgs.
func (s *Server) sessionInput(ctx context.Context, sessionID string, msgs []llm.Message, param string) ([]llm.Message, *apiError) {
	if sessionID == "" {
		return msgs, nil
	}
	if len(sessionID) > 128 {
		return nil, invalid("X-Session-Id", "session id is longer than 128 characters")
	}
	if _, err := s.app.DB.GetSession(ctx, sessionID); errs.Code(err) == errs.ENOTFOUND {
		return msgs, nil
	} else if err != nil {
		return nil, fromError(s.log, err)
	}
	i := len(msgs)
	for i > 0 && msgs[i-1].Role != llm.RoleAssistant {
		i--
	}
	if i == len(msgs) {
		return nil, invalid(param, "the last %s item is from the assistant; send a user message or tool results to continue the session", param)
	}
	return msgs[i:], nil
}

func (s *Server) handleChatCompletions(w http.ResponseWriter, r *http.Request) {
	var body ChatCompletionRequest
	if e := decodeBody(w, r, &body); e != nil {
		writeError(w, e)
		return
	}
	tr, e := s.parseChatRequest(r.Context(), r, &body)
	if e != nil {
		writeError(w, e)
		return
	}
	release, e := s.acquireTurn()
	if e != nil {
		writeError(w, e)
		return
	}
	defer release()
	w.Header().Set("X-Session-Id", tr.chat.SessionID)
	ctx, cancel := s.turnContext(r)
	defer cancel()
	if tr.stream {
		s.streamChat(ctx, w, tr)
		return
	}
	res, err := s.app.Chat.Complete(ctx, tr.chat)
	if err != nil {
		writeError(w, fromError(s.log, err))
		return
	}
	if e := turnError(res); e != nil {
		writeError(w, e)
		return
	}
	content := res.Content
	msg := ResponseMessage{Role: "assistant", Content: &content, ReasoningContent: res.ReasoningContent, ToolCalls: res.ClientToolCalls}
	if len(res.ClientToolCalls) > 0 && content == "" {
		msg.Content = nil
	}
	writeJSON(w, http.StatusOK, ChatCompletion{
		ID: newID("chatcmpl-"), Object: "chat.completion", Created: s.now().Unix(), Model: tr.model,
		Choices: []ChoiceResult{{Index: 0, Message: msg, FinishReason: finishReason(res)}},
		Usage:   wireUsage(res.Usage),
	})
}

// turnError maps a turn that did not complete to an API error. A turn that
// hit the iteration limit is not an error: it answers with its explanation
// and finish_reason "length".
func turnError(res *agent.Result) *apiError {
	if res.Status == memory.StatusCompleted || res.Reason == agent.ReasonIterationLimit {
		return nil
	}
	switch res.Reason {
	case agent.ReasonProvider:
		return newAPIError(http.StatusBadGateway, "server_error", "provider_error", "%s", res.Error)
	case agent.ReasonTurnTimeout:
		return newAPIError(http.StatusGatewayTimeout, "server_error", "turn_timeout", "%s", res.Error)
	case agent.ReasonCancelled:
		e := newAPIError(http.StatusServiceUnavailable, "server_error", "cancelled", "the turn was cancelled (the server is shutting down or the client went away)")
		e.RetryAfter = 1
		return e
	}
	return newAPIError(http.StatusInternalServerError, "server_error", "internal_error", "internal error")
}

func finishReason(res *agent.Result) string {
	if res.Reason == agent.ReasonIterationLimit {
		return llm.FinishLength
	}
	if res.FinishReason == "" {
		return llm.FinishStop
	}
	return res.FinishReason
}

// streamChat runs the turn and writes chat.completion.chunk events.
func (s *Server) streamChat(ctx context.Context, w http.ResponseWriter, tr *turnRequest) {
	sw := &chunkStream{sse: newSSE(w), id: newID("chatcmpl-"), created: s.now().Unix(), model: tr.model}
	res, err := s.app.Chat.Stream(ctx, tr.chat, sw.onEvent)
	if err != nil {
		if !sw.sse.started {
			writeError(w, fromError(s.log, err))
			return
		}
		sw.sse.event("error", map[string]any{"error": fromError(s.log, err)})
		return
	}
	if e := turnError(res); e != nil {
		sw.start()
		sw.sse.event("error", map[string]any{"error": e})
		return
	}
	sw.start()
	if res.Reason == agent.ReasonIterationLimit {
		sw.content(sw.text.last(res.Content))
	}
	for i, c := range res.ClientToolCalls {
		tc := ChunkToolCall{Index: i, ID: c.ID, Type: "function"}
		tc.Function.Name, tc.Function.Arguments = c.Name, c.Arguments
		sw.chunk(ChunkDelta{ToolCalls: []ChunkToolCall{tc}}, nil, nil)
	}
	fr := finishReason(res)
	sw.chunk(ChunkDelta{}, &fr, nil)
	if tr.includeUsage {
		sw.chunk(ChunkDelta{}, nil, wireUsage(res.Usage))
	}
	sw.sse.done()
}

// chunkStream renders loop events as chat.completion.chunk events. Agent
// events that are not model output travel as SSE comment lines
// (": nagent {...}"), which every SSE client skips.
type chunkStream struct {
	sse       *sseWriter
	id, model string
	created   int64
	text      textJoiner
}

func (c *chunkStream) start() {
	if !c.sse.started {
		c.chunk(ChunkDelta{Role: "assistant", Content: new(string)}, nil, nil)
	}
}

func (c *chunkStream) chunk(d ChunkDelta, finish *string, usage *WireUsage) {
	ch := ChatCompletionChunk{ID: c.id, Object: "chat.completion.chunk", Created: c.created, Model: c.model, Usage: usage}
	if usage == nil {
		ch.Choices = []ChunkChoice{{Index: 0, Delta: d, FinishReason: finish}}
	} else {
		ch.Choices = []ChunkChoice{}
	}
	c.sse.data(ch)
}

func (c *chunkStream) content(s string) {
	c.chunk(ChunkDelta{Content: &s}, nil, nil)
}

func (c *chunkStream) onEvent(e agent.Event) {
	c.start()
	switch e.Type {
	case agent.EventDelta:
		if text := c.text.next(e.Iteration, e.Content); text != "" {
			c.content(text)
		}
		if e.ReasoningContent != "" {
			c.chunk(ChunkDelta{ReasoningContent: e.ReasoningContent}, nil, nil)
		}
	case agent.EventToolStarted, agent.EventToolFinished, agent.EventWarning:
		c.sse.comment(e)
	}
}

// textJoiner joins the streamed text of a turn's successive model calls,
// separating the text of one call from the next by a blank line.
type textJoiner struct {
	iteration int
	spoke     bool // the current model call has streamed text
	any       bool // some text was streamed
}

// next returns the delta to stream for content from model call iteration.
func (j *textJoiner) next(iteration int, content string) string {
	if iteration != j.iteration {
		if j.spoke && content != "" {
			content = "\n\n" + content
		}
		j.iteration, j.spoke = iteration, false
	}
	if content != "" {
		j.spoke, j.any = true, true
	}
	return content
}

// last returns the delta for text the turn adds after its model calls, such
// as the iteration-limit explanation.
func (j *textJoiner) last(content string) string {
	if j.any && content != "" {
		content = "\n\n" + content
	}
	if content != "" {
		j.spoke, j.any = true, true
	}
	return content
}

// newID returns prefix followed by random hex.
func newID(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
