// Package agent owns the Loop: the AgentGraphRunner state machine that moves
// a turn through load_context → call_llm → execute_tools → update_memory →
// finalize, emits an event for every step, and decides when the turn ends.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nagent/nagent/runtime/core"
	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/memory"
	"github.com/nagent/nagent/runtime/tools"
)

// ToolRunner is what the loop needs of the Action domain.
type ToolRunner interface {
	Definitions(ctx context.Context, ec tools.ExecutionContext) []tools.ToolDefinition
	Execute(ctx context.Context, call tools.ToolCallRequest, ec tools.ExecutionContext) tools.ToolResult
}

// AgentGraphRunner runs turns. It is safe for concurrent use: turns of one
// session queue in order, turns of different sessions run in parallel.
type AgentGraphRunner struct {
	Core   *core.AgentCore
	Tools  ToolRunner
	Memory *memory.MemoryStore
	// External routes external memory (snapshot, prefetch, sync) to the
	// providers each session enabled; nil means no external memory.
	External *memory.ExternalMemoryManager
	// Compressor keeps each request's history within its token budget; nil
	// means no compression.
	Compressor *memory.HistoryCompressor
	// MaxIterations bounds the model calls of one turn (default 30).
	MaxIterations int
	// MaxQueuedPerSession bounds the turns waiting behind a running one;
	// 0 means unbounded.
	MaxQueuedPerSession int
	// TurnTimeout bounds a whole turn; 0 means only the caller's context.
	TurnTimeout time.Duration
	// MaxParallelTools bounds concurrent tool calls of one round (default 4).
	MaxParallelTools int
	Log              *slog.Logger
	// observe, set with SetObserver, sees every event of every run.
	observe atomic.Pointer[func(source string, e Event)]

	locks sessionLocks
}

// RunInput is one turn's request.
type RunInput struct {
	SessionID string
	Source    string
	// Input holds the turn's new messages: user messages, or the results of
	// client-side tools the previous turn handed back.
	Input          []llm.Message
	ExternalMemory []string
	Exec           tools.ExecutionContext
	// ClientTools are tools the caller declared; calls to them end the turn
	// and are handed back in Result.ClientToolCalls.
	ClientTools []llm.ToolSpec
	// Params override the configured generation parameters for this turn.
	Params llm.GenerationParams
	// ToolChoice is passed to the provider.
	ToolChoice string
	// Stream asks the provider to stream, so that deltas are emitted.
	Stream bool
}

// EmitFunc receives the run's events in order. It is called from the run's
// goroutine and must not block for long.
type EmitFunc func(Event)

// Run executes one turn. Failures inside the loop (provider errors, the
// iteration limit, cancellation) end in finalize and come back as a Result
// with status failed or cancelled; the error return is for a turn that could
// not start (bad input, a full queue, an unavailable store).
func (r *AgentGraphRunner) Run(ctx context.Context, in RunInput, emit EmitFunc) (*Result, error) {
	if in.SessionID == "" {
		return nil, errs.Errorf(errs.EINVALID, "a session id is required")
	}
	if emit == nil {
		emit = func(Event) {}
	}
	release, err := r.locks.acquire(ctx, in.SessionID, r.MaxQueuedPerSession)
	if err != nil {
		return nil, err
	}
	defer release()

	if r.TurnTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, r.TurnTimeout, errTurnTimeout)
		defer cancel()
	}
	in.Exec.SessionID, in.Exec.Source = in.SessionID, in.Source
	if in.Exec.AgentContext == "" {
		in.Exec.AgentContext = tools.AgentPrimary
	}
	if in.Exec.ToolExposurePolicy == "" {
		in.Exec.ToolExposurePolicy = tools.ExposureDefault
	}
	if in.ExternalMemory == nil && r.External != nil {
		in.ExternalMemory = r.External.Defaults()
	}
	enabled, err := r.Memory.BeginTurn(context.WithoutCancel(ctx), memory.TurnStart{
		SessionID: in.SessionID, Source: in.Source, ExternalMemory: in.ExternalMemory, Input: in.Input,
	})
	if err != nil {
		return nil, err
	}

	run := &run{r: r, in: in, emit: emit, log: r.logger().With("session_id", in.SessionID), enabled: enabled}
	state := StateLoadContext
	for state != "" {
		run.event(Event{Type: EventState, State: state})
		state = run.step(ctx, state)
	}
	return run.result, nil
}

var errTurnTimeout = errors.New("turn timeout")

// SetObserver makes f see every event of every run (with the run's source)
// besides the run's own emit; the dashboard's websocket hub uses it. f is
// called on the run's goroutine and must never block. nil removes it; it
// may be called while turns run.
func (r *AgentGraphRunner) SetObserver(f func(source string, e Event)) {
	if f == nil {
		r.observe.Store(nil)
		return
	}
	r.observe.Store(&f)
}

func (r *AgentGraphRunner) logger() *slog.Logger {
	if r.Log != nil {
		return r.Log
	}
	return slog.Default()
}

func (r *AgentGraphRunner) maxIterations() int {
	if r.MaxIterations > 0 {
		return r.MaxIterations
	}
	return 30
}

// run is the state of one turn as it moves through the graph.
type run struct {
	r    *AgentGraphRunner
	in   RunInput
	emit EmitFunc
	log  *slog.Logger
	mu   sync.Mutex // serialises emit: tool calls of one round run concurrently

	frame     core.Frame
	summary   string
	enabled   []string // the session's external-memory selection
	turnStart int      // index in frame.History of this turn's first input message
	fixed     int      // estimated tokens of the request besides its history
	compress  memory.Compression
	freeze    *memory.SnapshotFreeze // a snapshot taken this turn, frozen at finalize
	iteration int
	usage     llm.Usage
	model     string

	out         *core.Output    // the latest inference
	partial     strings.Builder // streamed content of the inference in flight
	serverCalls []llm.ToolCall
	clientCalls []llm.ToolCall
	round       *memory.ToolRound // the tool round awaiting update_memory

	// set on the way to finalize
	status     string
	reason     string
	errMessage string
	final      *llm.Message
	finalMark  string
	result     *Result
}

func (s *run) event(e Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.SessionID, e.Iteration = s.in.SessionID, s.iteration
	s.emit(e)
	if o := s.r.observe.Load(); o != nil {
		(*o)(s.in.Source, e)
	}
}

// step runs one state and returns the next ("" when the turn is over).
func (s *run) step(ctx context.Context, state string) string {
	switch state {
	case StateLoadContext:
		return s.loadContext(ctx)
	case StateCallLLM:
		return s.callLLM(ctx)
	case StateExecuteTools:
		return s.executeTools(ctx)
	case StateUpdateMemory:
		return s.updateMemory(ctx)
	case StateFinalize:
		s.finalize(ctx)
	}
	return ""
}

func (s *run) loadContext(ctx context.Context) string {
	history, summary, err := s.r.Memory.History(ctx, s.in.SessionID)
	if err != nil {
		return s.fail(ctx, ReasonStore, "loading the session failed", err)
	}
	s.summary = summary
	s.turnStart = max(0, len(history)-len(s.in.Input))
	defs := s.r.Tools.Definitions(ctx, s.in.Exec)
	if len(s.in.ClientTools) > 0 {
		defs = withoutNames(defs, s.in.ClientTools)
	}
	var snapshot, retrieved string
	if ext := s.r.External; ext != nil {
		defs = ext.FilterTools(defs, s.enabled)
		var fails []memory.Failure
		snapshot, s.freeze, fails = ext.Snapshot(ctx, s.in.SessionID, s.enabled)
		s.warn(fails)
		retrieved, fails = ext.PrefetchAll(ctx, s.in.SessionID, s.enabled, userText(s.in.Input))
		s.warn(fails)
	}
	s.frame = core.Frame{
		System:     core.SystemPrompt(s.in.Source, snapshot),
		Tools:      defs,
		ExtraTools: s.in.ClientTools,
		History:    history,
		Params:     s.in.Params,
		ToolChoice: s.in.ToolChoice,
		Retrieved:  retrieved,
	}
	if s.r.Compressor != nil {
		s.fixed = frameTokens(&s.frame)
	}
	return StateCallLLM
}

// warn reports external-memory failures as warning events; the manager has
// logged and counted them already.
func (s *run) warn(fails []memory.Failure) {
	for _, f := range fails {
		s.event(Event{Type: EventWarning, Message: f.Error()})
	}
}

// requestFrame is the frame of the next inference: the turn's frame with
// its history compressed when it passes the token budget.
func (s *run) requestFrame(ctx context.Context) *core.Frame {
	if s.r.Compressor == nil {
		return &s.frame
	}
	view, fails := s.r.Compressor.View(ctx, memory.CompressInput{
		SessionID: s.in.SessionID, Enabled: s.enabled, Fixed: s.fixed, History: s.frame.History, State: &s.compress,
	})
	s.warn(fails)
	if len(view) == len(s.frame.History) {
		return &s.frame
	}
	f := s.frame
	f.History = view
	return &f
}

// frameTokens estimates the tokens of a frame's request besides its history.
func frameTokens(f *core.Frame) int {
	n := memory.EstimateTextTokens(f.System) + memory.EstimateTextTokens(f.Retrieved)
	for _, d := range f.Tools {
		n += memory.EstimateTextTokens(d.Name) + memory.EstimateTextTokens(d.Description) + memory.EstimateTextTokens(string(d.Parameters))
	}
	for _, t := range f.ExtraTools {
		n += memory.EstimateTextTokens(t.Name) + memory.EstimateTextTokens(t.Description) + memory.EstimateTextTokens(string(t.Parameters))
	}
	return n
}

// userText is the text of a turn's user messages, the query of prefetch_all.
func userText(msgs []llm.Message) string {
	var parts []string
	for _, m := range msgs {
		if m.Role == llm.RoleUser && strings.TrimSpace(m.Content) != "" {
			parts = append(parts, m.Content)
		}
	}
	return strings.Join(parts, "\n")
}

func (s *run) callLLM(ctx context.Context) string {
	s.iteration++
	s.partial.Reset()
	var onDelta llm.DeltaFunc
	if s.in.Stream {
		onDelta = func(d llm.Delta) {
			s.partial.WriteString(d.Content)
			s.event(Event{Type: EventDelta, Content: d.Content, ReasoningContent: d.ReasoningContent})
		}
	}
	out, err := s.r.Core.Infer(ctx, s.requestFrame(ctx), onDelta)
	if err != nil {
		if ctx.Err() != nil {
			return s.interrupted(ctx)
		}
		return s.fail(ctx, ReasonProvider, "the model provider failed", err)
	}
	s.out = out
	s.usage.Add(out.Usage)
	if out.Model != "" {
		s.model = out.Model
	}
	s.serverCalls, s.clientCalls = splitCalls(out.ToolCalls, s.in.ClientTools)
	if len(s.serverCalls) > 0 {
		return StateExecuteTools
	}
	return StateUpdateMemory
}

func (s *run) executeTools(ctx context.Context) string {
	calls := s.serverCalls
	results := make([]tools.ToolResult, len(calls))
	limit := s.r.MaxParallelTools
	if limit <= 0 {
		limit = 4
	}
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			s.event(Event{Type: EventToolStarted, Tool: &ToolEvent{ID: c.ID, Name: c.Name, Arguments: c.Arguments}})
			res := s.r.Tools.Execute(ctx, tools.ToolCallRequest{ID: c.ID, Name: c.Name, Arguments: c.Arguments}, s.in.Exec)
			results[i] = res
			s.event(Event{Type: EventToolFinished, Tool: &ToolEvent{
				ID: c.ID, Name: c.Name, Status: string(res.Status), Content: res.Content, DurationMS: res.DurationMS,
			}})
		}()
	}
	wg.Wait()

	round := &memory.ToolRound{SessionID: s.in.SessionID, Assistant: s.out.Message, Iteration: s.iteration}
	for i, res := range results {
		round.Records = append(round.Records, memory.ToolRecord{
			ID: calls[i].ID, Name: calls[i].Name, Arguments: calls[i].Arguments,
			Status: string(res.Status), Result: res.Content, Error: res.Error, DurationMS: res.DurationMS,
		})
		round.Results = append(round.Results, llm.Message{
			Role: llm.RoleTool, Content: res.Content, ToolCallID: calls[i].ID, Name: calls[i].Name,
		})
	}
	s.round = round
	return StateUpdateMemory
}

func (s *run) updateMemory(ctx context.Context) string {
	if s.round == nil { // the model answered without tool calls
		s.status, s.final = memory.StatusCompleted, &s.out.Message
		return StateFinalize
	}
	round := s.round
	s.round = nil
	s.frame.History = append(s.frame.History, round.Assistant)
	s.frame.History = append(s.frame.History, round.Results...)
	round.History, round.PreviousSummary = s.frame.History, s.summary
	summary, err := s.r.Memory.SaveToolRound(context.WithoutCancel(ctx), *round)
	if err != nil {
		return s.fail(ctx, ReasonStore, "saving the tool results failed", err)
	}
	s.summary = summary
	s.event(Event{Type: EventMemoryUpdated})

	switch {
	case len(s.clientCalls) > 0:
		s.status = memory.StatusCompleted
		return StateFinalize
	case ctx.Err() != nil:
		return s.interrupted(ctx)
	case s.iteration >= s.r.maxIterations():
		s.status, s.reason = memory.StatusFailed, ReasonIterationLimit
		s.errMessage = fmt.Sprintf("iteration limit reached (%d model calls)", s.r.maxIterations())
		s.final = &llm.Message{Role: llm.RoleAssistant, Content: fmt.Sprintf(
			"I stopped because this turn reached the iteration limit of %d model calls without a final answer. "+
				"Ask me to continue, or raise agent.max_iterations.", s.r.maxIterations())}
		s.finalMark = "error"
		return StateFinalize
	}
	return StateCallLLM
}

// fail routes a failure to finalize with an assistant message explaining it.
func (s *run) fail(ctx context.Context, reason, what string, err error) string {
	if ctx.Err() != nil {
		return s.interrupted(ctx)
	}
	s.log.Error("turn failed", "state_error", what, "error", err)
	s.status, s.reason = memory.StatusFailed, reason
	s.errMessage = what + ": " + errs.MessageOrError(err)
	s.final = &llm.Message{Role: llm.RoleAssistant, Content: "Sorry, I could not finish this turn: " + s.errMessage + "."}
	s.finalMark = "error"
	return StateFinalize
}

// interrupted routes a cancelled or timed-out turn to finalize, keeping any
// partial streamed output marked as such.
func (s *run) interrupted(ctx context.Context) string {
	if errors.Is(context.Cause(ctx), errTurnTimeout) {
		s.status, s.reason = memory.StatusFailed, ReasonTurnTimeout
		s.errMessage = fmt.Sprintf("the turn timed out after %s", s.r.TurnTimeout)
		s.finalMark = "error"
	} else {
		s.status, s.reason = memory.StatusCancelled, ReasonCancelled
		s.errMessage = "cancelled"
		s.finalMark = "cancelled"
	}
	if s.partial.Len() > 0 {
		s.final = &llm.Message{Role: llm.RoleAssistant, Content: core.ScrubMemoryContext(s.partial.String())}
	} else if s.status == memory.StatusFailed {
		s.final = &llm.Message{Role: llm.RoleAssistant, Content: "Sorry, I could not finish this turn: " + s.errMessage + "."}
	}
	return StateFinalize
}

func (s *run) finalize(ctx context.Context) {
	if s.final != nil && s.status == memory.StatusCompleted {
		s.frame.History = append(s.frame.History, *s.final)
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	history := s.frame.History
	if s.final != nil && s.status != memory.StatusCompleted {
		history = append(history, *s.final)
	}
	// sync_all runs next to the final transaction: they write different stores.
	var syncFails []memory.Failure
	var synced sync.WaitGroup
	if ext := s.r.External; ext != nil && s.status == memory.StatusCompleted && s.final != nil {
		turn := memory.SyncTurn{
			SessionID: s.in.SessionID, Source: s.in.Source, AgentContext: s.in.Exec.AgentContext,
			User: userText(s.in.Input), Assistant: s.final.Content, Messages: s.frame.History[min(s.turnStart, len(s.frame.History)):],
		}
		synced.Go(func() { syncFails = ext.SyncAll(wctx, s.enabled, turn) })
	}
	err := s.r.Memory.Finalize(wctx, memory.TurnEnd{
		SessionID: s.in.SessionID, Final: s.final, MessageStatus: s.finalMark,
		Status: s.status, Iteration: s.iteration, Error: s.errMessage,
		History: history, PreviousSummary: s.summary, Freeze: s.freeze,
	})
	if err != nil {
		s.log.Error("finalize failed", "error", err)
		s.event(Event{Type: EventWarning, Message: "the turn's final records could not be saved: " + err.Error()})
	}
	synced.Wait()
	s.warn(syncFails)
	res := &Result{
		SessionID: s.in.SessionID, Status: s.status, Iterations: s.iteration,
		Usage: s.usage, Error: s.errMessage, Reason: s.reason, Model: s.model,
	}
	if s.final != nil {
		res.Content = s.final.Content
		res.ReasoningContent = s.final.ReasoningContent
	}
	if s.out != nil && s.status == memory.StatusCompleted {
		res.FinishReason = s.out.FinishReason
	}
	if len(s.clientCalls) > 0 {
		res.ClientToolCalls = s.clientCalls
		res.FinishReason = llm.FinishToolCalls
	}
	s.result = res
	s.event(Event{Type: EventRunFinished, Result: res})
}

// splitCalls separates calls to the client's tools from the server's.
func splitCalls(calls []llm.ToolCall, client []llm.ToolSpec) (server, clientCalls []llm.ToolCall) {
	if len(client) == 0 {
		return calls, nil
	}
	names := make(map[string]bool, len(client))
	for _, t := range client {
		names[t.Name] = true
	}
	for _, c := range calls {
		if names[c.Name] {
			clientCalls = append(clientCalls, c)
		} else {
			server = append(server, c)
		}
	}
	return server, clientCalls
}

// withoutNames hides server tools shadowed by a client tool of the same name.
func withoutNames(defs []tools.ToolDefinition, client []llm.ToolSpec) []tools.ToolDefinition {
	names := make(map[string]bool, len(client))
	for _, t := range client {
		names[t.Name] = true
	}
	out := defs[:0:0]
	for _, d := range defs {
		if !names[d.Name] {
			out = append(out, d)
		}
	}
	return out
}
