package openai

// The Responses API: POST /v1/responses and GET /v1/responses/{id}.
//
// Responses map onto N-Agent sessions. A response belongs to the session its
// turn ran in; previous_response_id continues that session, appending only
// the request's new input. X-Session-Id or metadata.session_id bind a session
// as for chat completions; without any of the three, each request starts a
// new session and its input is the whole conversation (stateless clients
// echo earlier output items back as input). Every answer carries the
// session in the X-Session-Id header.
//
// Decisions where N-Agent differs from OpenAI, or had to choose a mapping:
//   - instructions become a system message at the start of the turn's input
//     and are stored in the session like any message, so they stay in force
//     for later turns. A chained request whose instructions equal those of
//     its previous response does not store them again.
//   - A turn stopped by the iteration limit (agent.max_iterations) answers
//     status "incomplete" with incomplete_details.reason "max_output_tokens",
//     the closest reason OpenAI defines: the turn ran out of its output
//     budget, counted in model calls. Its message explains the limit. A model
//     answer cut by the provider's own length limit maps the same way, and
//     one stopped by a content filter to "content_filter".
//   - A turn that fails (provider error, timeout) answers the HTTP error chat
//     completions answer. Streaming, after the stream started, it ends with an
//     "error" event; the response is then stored with status "failed" (or
//     "cancelled") so that GET shows what happened to the id the client saw.
//   - Text the model streams before calling tools in a later model call of
//     the same turn is part of the streamed message item (separated by a
//     blank line, as for chat). The non-streaming answer, like chat's, holds
//     the final answer only.
//   - Responses with store:false are not saved: GET answers 404 for them and
//     previous_response_id cannot name them (the session itself is kept, as
//     for every turn, and X-Session-Id still continues it).
//   - Hosted tools (web search, file search…), background mode, conversations
//     and structured output formats are refused with a 400 naming the param.

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/nagent/nagent/runtime/agent"
	"github.com/nagent/nagent/runtime/chat"
	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/memory"
)

// responseRequest is a decoded, validated POST /v1/responses request.
type responseRequest struct {
	chat   chat.Request
	stream bool
	// template holds the fields a response echoes from its request.
	template Response
}

// parseResponseRequest validates the body and binds it to a session.
func (s *Server) parseResponseRequest(ctx context.Context, r *http.Request, body *ResponseCreateRequest) (*responseRequest, *apiError) {
	if e := s.resolveModel(body.Model); e != nil {
		return nil, e
	}
	switch {
	case body.Background:
		return nil, invalid("background", "background responses are not supported; omit background or set it to false")
	case len(body.Conversation) > 0 && string(body.Conversation) != "null":
		return nil, invalid("conversation", "conversations are not supported; chain responses with previous_response_id, or bind a session with the X-Session-Id header")
	case body.Text != nil && body.Text.Format.Type != "" && body.Text.Format.Type != "text":
		return nil, invalid("text.format.type", "text format %q is not supported; N-Agent answers plain text", body.Text.Format.Type)
	}
	msgs, e := inputMessages(body.Input)
	if e != nil {
		return nil, e
	}
	tools, e := responseToolSpecs(body.Tools)
	if e != nil {
		return nil, e
	}
	choice, choiceEcho, e := responseToolChoice(body.ToolChoice)
	if e != nil {
		return nil, e
	}
	params := llm.GenerationParams{Temperature: body.Temperature, TopP: body.TopP, MaxTokens: body.MaxOutputTokens}
	if body.Reasoning != nil {
		params.ReasoningEffort = body.Reasoning.Effort
	}

	sessionID := r.Header.Get("X-Session-Id")
	if sessionID == "" {
		sessionID = body.Metadata["session_id"]
	}
	var previous *Response
	if id := body.PreviousResponseID; id != "" {
		prevSession, prevBody, err := s.app.DB.GetResponse(ctx, id)
		if errs.Code(err) == errs.ENOTFOUND {
			e := invalid("previous_response_id", "Previous response with id '%s' not found.", id)
			e.Code = strPtr("previous_response_not_found")
			return nil, e
		} else if err != nil {
			return nil, fromError(s.log, err)
		}
		if sessionID != "" && sessionID != prevSession {
			return nil, invalid("previous_response_id", "previous response %q belongs to session %q, not to session %q", id, prevSession, sessionID)
		}
		sessionID = prevSession
		previous = new(Response)
		if err := json.Unmarshal(prevBody, previous); err != nil {
			s.log.Warn("stored response is unreadable", "response_id", id, "error", err)
		}
	}
	input, e := s.sessionInput(ctx, sessionID, msgs, "input")
	if e != nil {
		return nil, e
	}
	if body.Instructions != "" && (previous == nil || previous.Instructions == nil || *previous.Instructions != body.Instructions) {
		input = append([]llm.Message{{Role: llm.RoleSystem, Content: body.Instructions}}, input...)
	}
	if sessionID == "" {
		sessionID = chat.NewSessionID()
	}

	rr := &responseRequest{
		chat: chat.Request{
			SessionID: sessionID, Source: "api", Messages: input,
			ClientTools: tools, Params: params, ToolChoice: choice,
			ExternalMemory: externalMemory(body.Metadata),
		},
		stream: body.Stream,
		template: Response{
			Object: "response", Model: body.Model, Output: []OutputItem{},
			ParallelToolCalls: true, Store: body.Store == nil || *body.Store,
			Temperature: body.Temperature, TopP: body.TopP, MaxOutputTokens: body.MaxOutputTokens,
			ToolChoice: choiceEcho, Tools: body.Tools, Truncation: "disabled", Metadata: body.Metadata,
		},
	}
	t := &rr.template
	t.Text.Format.Type = "text"
	if body.Instructions != "" {
		t.Instructions = &body.Instructions
	}
	if body.PreviousResponseID != "" {
		t.PreviousResponseID = &body.PreviousResponseID
	}
	if params.ReasoningEffort != "" {
		t.Reasoning.Effort = &params.ReasoningEffort
	}
	if t.Tools == nil {
		t.Tools = []ResponseTool{}
	}
	if t.Metadata == nil {
		t.Metadata = map[string]string{}
	}
	return rr, nil
}

// newResponse starts the response of this request, in progress.
func (rr *responseRequest) newResponse(created int64) *Response {
	resp := rr.template
	resp.ID, resp.CreatedAt, resp.Status = newID("resp_"), created, statusInProgress
	return &resp
}

// finish sets the response's outcome from the turn's result.
func (resp *Response) finish(res *agent.Result) {
	resp.Status, resp.IncompleteDetails, resp.Error = responseStatus(res)
	resp.Usage = responseUsage(res.Usage)
}

// responseStatus maps a turn's result to a response status, with the reason
// of an incomplete response or the error of a failed one.
func responseStatus(res *agent.Result) (string, *IncompleteDetails, *ResponseError) {
	switch {
	case res.Reason == agent.ReasonIterationLimit:
		return statusIncomplete, &IncompleteDetails{Reason: "max_output_tokens"}, nil
	case res.Status == memory.StatusCompleted && res.FinishReason == llm.FinishLength:
		return statusIncomplete, &IncompleteDetails{Reason: "max_output_tokens"}, nil
	case res.Status == memory.StatusCompleted && res.FinishReason == llm.FinishContentFilter:
		return statusIncomplete, &IncompleteDetails{Reason: "content_filter"}, nil
	case res.Status == memory.StatusCompleted:
		return statusCompleted, nil, nil
	case res.Reason == agent.ReasonCancelled:
		return statusCancelled, nil, nil
	}
	return statusFailed, nil, &ResponseError{Code: "server_error", Message: res.Error}
}

// itemStatus is the status of a finished message item in a response with
// the given status.
func itemStatus(responseStatus string) string {
	if responseStatus == statusCompleted {
		return statusCompleted
	}
	return statusIncomplete
}

// saveResponse stores resp unless the request said store:false. A failure
// is logged: the turn itself is recorded in its session either way.
func (s *Server) saveResponse(ctx context.Context, rr *responseRequest, resp *Response) {
	if !resp.Store {
		return
	}
	body, err := marshalJSON(resp)
	if err == nil {
		err = s.app.DB.SaveResponse(context.WithoutCancel(ctx), resp.ID, rr.chat.SessionID, body)
	}
	if err != nil {
		s.log.Error("saving the response failed", "response_id", resp.ID, "session_id", rr.chat.SessionID, "error", err)
	}
}

func (s *Server) handleCreateResponse(w http.ResponseWriter, r *http.Request) {
	var body ResponseCreateRequest
	if e := decodeBody(w, r, &body); e != nil {
		writeError(w, e)
		return
	}
	rr, e := s.parseResponseRequest(r.Context(), r, &body)
	if e != nil {
		writeError(w, e)
		return
	}
	w.Header().Set("X-Session-Id", rr.chat.SessionID)
	release, e := s.acquireTurn()
	if e != nil {
		writeError(w, e)
		return
	}
	defer release()
	ctx, cancel := s.turnContext(r)
	defer cancel()
	if rr.stream {
		s.streamResponse(ctx, w, rr)
		return
	}
	resp := rr.newResponse(s.now().Unix())
	res, err := s.app.Chat.Complete(ctx, rr.chat)
	if err != nil {
		writeError(w, fromError(s.log, err))
		return
	}
	if e := turnError(res); e != nil {
		writeError(w, e)
		return
	}
	resp.finish(res)
	if res.Content != "" || len(res.ClientToolCalls) == 0 {
		resp.Output = append(resp.Output, messageItem(itemStatus(resp.Status), res.Content))
	}
	for _, c := range res.ClientToolCalls {
		resp.Output = append(resp.Output, functionCallItem(statusCompleted, c))
	}
	s.saveResponse(ctx, rr, resp)
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) handleGetResponse(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if r.URL.Query().Get("stream") == "true" {
		writeError(w, invalid("stream", "streaming a stored response is not supported; retrieve it without stream"))
		return
	}
	sessionID, body, err := s.app.DB.GetResponse(r.Context(), id)
	if errs.Code(err) == errs.ENOTFOUND {
		writeError(w, newAPIError(http.StatusNotFound, "invalid_request_error", "", "Response with id '%s' not found.", id))
		return
	} else if err != nil {
		writeError(w, fromError(s.log, err))
		return
	}
	w.Header().Set("X-Session-Id", sessionID)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(append(body, '\n'))
}

// streamResponse runs the turn and writes Responses stream events.
func (s *Server) streamResponse(ctx context.Context, w http.ResponseWriter, rr *responseRequest) {
	st := &responseStream{sse: newSSE(w), resp: rr.newResponse(s.now().Unix()), msg: -1}
	res, err := s.app.Chat.Stream(ctx, rr.chat, st.onEvent)
	if err != nil {
		if !st.sse.started {
			writeError(w, fromError(s.log, err))
			return
		}
		st.error(fromError(s.log, err))
		return
	}
	st.start()
	if e := turnError(res); e != nil {
		st.closeMessage(statusIncomplete)
		st.resp.finish(res)
		s.saveResponse(ctx, rr, st.resp)
		st.error(e)
		return
	}
	if res.Reason == agent.ReasonIterationLimit {
		st.textDelta(st.text.last(res.Content))
	}
	st.resp.finish(res)
	if st.msg < 0 && len(res.ClientToolCalls) == 0 {
		st.openMessage()
	}
	st.closeMessage(itemStatus(st.resp.Status))
	for _, c := range res.ClientToolCalls {
		st.functionCall(c)
	}
	s.saveResponse(ctx, rr, st.resp)
	final := "response.completed"
	if st.resp.Status == statusIncomplete {
		final = "response.incomplete"
	}
	st.emit(final, map[string]any{"response": st.resp})
}

// responseStream renders loop events as Responses stream events, each
// numbered by sequence_number. Model text goes to one message output item,
// opened at the first delta; calls of client tools follow as function_call
// items when the turn ends. Agent events that are not model output travel as
// SSE comment lines (": nagent {...}"), as for chat completions.
type responseStream struct {
	sse  *sseWriter
	seq  int
	resp *Response
	text textJoiner
	msg  int // output index of the open message item, or -1
	body strings.Builder
}

// start writes response.created and response.in_progress once.
func (st *responseStream) start() {
	if st.sse.started {
		return
	}
	st.emit("response.created", map[string]any{"response": st.resp})
	st.emit("response.in_progress", map[string]any{"response": st.resp})
}

// emit writes one event of type typ with fields, adding type and sequence_number.
func (st *responseStream) emit(typ string, fields map[string]any) {
	fields["type"] = typ
	fields["sequence_number"] = st.seq
	st.seq++
	st.sse.event(typ, fields)
}

func (st *responseStream) onEvent(e agent.Event) {
	st.start()
	switch e.Type {
	case agent.EventDelta:
		st.textDelta(st.text.next(e.Iteration, e.Content))
	case agent.EventToolStarted, agent.EventToolFinished, agent.EventWarning:
		st.sse.comment(e)
	}
}

// openMessage adds the message item and its output_text part.
func (st *responseStream) openMessage() {
	item := OutputItem{Type: itemMessage, ID: newID("msg_"), Status: statusInProgress, Role: "assistant", Content: []OutputText{}}
	st.msg = len(st.resp.Output)
	st.resp.Output = append(st.resp.Output, item)
	st.emit("response.output_item.added", map[string]any{"output_index": st.msg, "item": item})
	st.emit("response.content_part.added", map[string]any{
		"item_id": item.ID, "output_index": st.msg, "content_index": 0, "part": outputText(""),
	})
}

// textDelta streams a piece of the message text.
func (st *responseStream) textDelta(delta string) {
	if delta == "" {
		return
	}
	if st.msg < 0 {
		st.openMessage()
	}
	st.body.WriteString(delta)
	st.emit("response.output_text.delta", map[string]any{
		"item_id": st.resp.Output[st.msg].ID, "output_index": st.msg, "content_index": 0,
		"delta": delta, "logprobs": []json.RawMessage{},
	})
}

// closeMessage finishes the open message item, if any, with status.
func (st *responseStream) closeMessage(status string) {
	if st.msg < 0 {
		return
	}
	item := &st.resp.Output[st.msg]
	part := outputText(st.body.String())
	item.Status, item.Content = status, []OutputText{part}
	st.emit("response.output_text.done", map[string]any{
		"item_id": item.ID, "output_index": st.msg, "content_index": 0, "text": part.Text, "logprobs": []json.RawMessage{},
	})
	st.emit("response.content_part.done", map[string]any{
		"item_id": item.ID, "output_index": st.msg, "content_index": 0, "part": part,
	})
	st.emit("response.output_item.done", map[string]any{"output_index": st.msg, "item": *item})
	st.msg = -1
}

// functionCall streams one call of a client tool as a function_call item.
func (st *responseStream) functionCall(c llm.ToolCall) {
	item := functionCallItem(statusInProgress, llm.ToolCall{ID: c.ID, Name: c.Name})
	index := len(st.resp.Output)
	st.emit("response.output_item.added", map[string]any{"output_index": index, "item": item})
	st.emit("response.function_call_arguments.delta", map[string]any{
		"item_id": item.ID, "output_index": index, "delta": c.Arguments,
	})
	st.emit("response.function_call_arguments.done", map[string]any{
		"item_id": item.ID, "output_index": index, "name": c.Name, "arguments": c.Arguments,
	})
	item.Arguments, item.Status = c.Arguments, statusCompleted
	st.resp.Output = append(st.resp.Output, item)
	st.emit("response.output_item.done", map[string]any{"output_index": index, "item": item})
}

// error ends the stream with an error event: the published schema's flat
// code, message and param, and the error object nested as OpenAI's own
// server sends it, which makes the openai clients' stream iterators throw it.
func (st *responseStream) error(e *apiError) {
	st.emit("error", map[string]any{"code": e.Code, "message": e.Message, "param": e.Param, "error": e})
}
