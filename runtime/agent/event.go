package agent

import "github.com/nagent/nagent/runtime/llm"

// Loop states.
const (
	StateLoadContext  = "load_context"
	StateCallLLM      = "call_llm"
	StateExecuteTools = "execute_tools"
	StateUpdateMemory = "update_memory"
	StateFinalize     = "finalize"
)

// Event types. Every adapter (SSE, websocket, ACP, CLI) renders this stream.
const (
	EventState         = "state"          // a state was entered
	EventDelta         = "delta"          // streamed model output
	EventToolStarted   = "tool_started"   // a tool call began
	EventToolFinished  = "tool_finished"  // a tool call ended
	EventMemoryUpdated = "memory_updated" // a step's records were committed
	EventRunFinished   = "run_finished"   // the turn ended; Result is set
	EventWarning       = "warning"        // something degraded but the run goes on
)

// Event is one observable step of a run.
type Event struct {
	Type      string `json:"type"`
	SessionID string `json:"session_id"`
	// Iteration is the number of model calls made so far in this turn.
	Iteration int    `json:"iteration"`
	State     string `json:"state,omitempty"`
	// Content and ReasoningContent carry a delta.
	Content          string `json:"content,omitempty"`
	ReasoningContent string `json:"reasoning_content,omitempty"`
	// Tool describes the call for tool events.
	Tool *ToolEvent `json:"tool,omitempty"`
	// Message explains a warning.
	Message string `json:"message,omitempty"`
	// Result is set on run_finished.
	Result *Result `json:"result,omitempty"`
}

// ToolEvent describes one tool call in an event.
type ToolEvent struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Arguments  string `json:"arguments,omitempty"`
	Status     string `json:"status,omitempty"`
	Content    string `json:"content,omitempty"`
	DurationMS int64  `json:"duration_ms,omitempty"`
}

// Result is the outcome of one turn.
type Result struct {
	SessionID string `json:"session_id"`
	// Status is the final task status: completed, failed or cancelled.
	Status string `json:"status"`
	// Content is the final assistant answer, or the error explanation.
	Content          string `json:"content"`
	ReasoningContent string `json:"reasoning_content,omitempty"`
	// FinishReason is the model's last finish reason ("stop", "length",
	// "tool_calls" when client-side tool calls are handed back).
	FinishReason string `json:"finish_reason,omitempty"`
	// ClientToolCalls are calls for the client's own tools, to be answered
	// by the client in its next request.
	ClientToolCalls []llm.ToolCall `json:"client_tool_calls,omitempty"`
	Iterations      int            `json:"iterations"`
	Usage           llm.Usage      `json:"usage"`
	Error           string         `json:"error,omitempty"`
	// Reason says why a turn did not complete (one of the Reason constants).
	Reason string `json:"reason,omitempty"`
	Model  string `json:"model,omitempty"`
}

// Reasons a turn ended without completing.
const (
	ReasonProvider       = "provider_error"
	ReasonIterationLimit = "iteration_limit"
	ReasonTurnTimeout    = "turn_timeout"
	ReasonStore          = "store_error"
	ReasonCancelled      = "cancelled"
)
