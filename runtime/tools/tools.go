// Package tools owns the Action domain: tool definitions, call requests and
// results, the ToolService that validates, authorises and routes a call, and
// the CompositeToolExecutor that dispatches it to the executor of its source.
package tools

import (
	"context"
	"encoding/json"
	"time"
)

// SourceType says where a tool comes from.
type SourceType string

// Tool sources. Dynamic sources register their definitions in slots.
const (
	SourceBuiltin   SourceType = "builtin"
	SourceSkill     SourceType = "skill"
	SourceKnowledge SourceType = "knowledge"
	SourceMCP       SourceType = "mcp"
	SourcePlugin    SourceType = "plugin"
	SourceAgent     SourceType = "agent"
)

// RiskLevel grades what a tool can do to the world.
type RiskLevel string

// Risk levels, from harmless to needing a human's confirmation.
const (
	RiskSafe   RiskLevel = "safe"
	RiskLow    RiskLevel = "low"
	RiskMedium RiskLevel = "medium"
	RiskHigh   RiskLevel = "high"
)

// ToolDefinition describes one tool to the model and to the policy.
type ToolDefinition struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"` // JSON Schema of the arguments object
	RiskLevel   RiskLevel       `json:"risk_level"`
	SourceType  SourceType      `json:"source_type"`
	// Managed tools must be listed in the run's permitted_managed_tools.
	Managed bool `json:"managed"`
	// Disabled tools are never exposed or run.
	Disabled bool `json:"disabled,omitempty"`
}

// ToolCallRequest is one call the model asked for.
type ToolCallRequest struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // raw JSON text from the model
}

// Status is the outcome of one tool call.
type Status string

// Tool call outcomes.
const (
	StatusSuccess Status = "success"
	StatusError   Status = "error"
	StatusDenied  Status = "denied"
)

// ToolResult is the outcome of one call, fed back to the model as a role=tool message.
type ToolResult struct {
	ToolCallID string `json:"tool_call_id"`
	ToolName   string `json:"name"`
	Status     Status `json:"status"`
	// Content is the JSON or text the model sees.
	Content    string `json:"content"`
	DurationMS int64  `json:"duration_ms"`
	// Error is a short description for error and denied results.
	Error string `json:"error,omitempty"`
}

// Executor runs calls for the tools routed to it.
type Executor interface {
	// Execute runs one call whose arguments have already been validated.
	// A returned error becomes ToolResult(status=error); content is the
	// model-visible result (JSON or plain text).
	Execute(ctx context.Context, call ToolCallRequest, ec ExecutionContext) (content string, err error)
}

// ExecutorFunc adapts a function to Executor.
type ExecutorFunc func(ctx context.Context, call ToolCallRequest, ec ExecutionContext) (string, error)

// Execute calls f.
func (f ExecutorFunc) Execute(ctx context.Context, call ToolCallRequest, ec ExecutionContext) (string, error) {
	return f(ctx, call, ec)
}

// Agent contexts: who is driving the run. They decide which tools are seen
// and who may write external memory.
const (
	AgentPrimary    = "primary"
	AgentSubagent   = "subagent"
	AgentCron       = "cron"
	AgentUnattended = "unattended"
)

// Tool exposure policies.
const (
	ExposureDefault  = "default"
	ExposureSafeOnly = "safe_only"
)

// ExecutionContext is the Execution Context layer of the frame: who runs,
// under which policy. It never reaches the provider.
type ExecutionContext struct {
	SessionID            string         `json:"session_id"`
	Source               string         `json:"source"`
	AgentContext         string         `json:"agent_context"`
	ToolExposurePolicy   string         `json:"tool_exposure_policy"`
	ExecutionContextMode string         `json:"execution_context_mode,omitempty"`
	TrustedMetadata      map[string]any `json:"trusted_metadata,omitempty"`
	// PermittedManagedTools lists the managed tools this run may use.
	PermittedManagedTools []string `json:"permitted_managed_tools,omitempty"`
	// Confirmer asks a human when the policy says confirm; nil means no human
	// can answer, and a confirm becomes a denial.
	Confirmer Confirmer `json:"-"`
}

// Phase is when a policy decision is taken.
type Phase string

// Policy phases.
const (
	PhaseExpose Phase = "expose"
	PhaseCall   Phase = "call"
)

// PolicyInput is what the policy decides on.
type PolicyInput struct {
	Phase Phase
	Tool  ToolDefinition
	Args  json.RawMessage // only in PhaseCall
	Exec  ExecutionContext
	Time  time.Time
}

// Decision is a policy's verdict on one tool at one phase.
type Decision struct {
	Allow       bool           `json:"allow"`
	Confirm     bool           `json:"confirm"`
	Reasons     []string       `json:"reasons"`
	Constraints map[string]any `json:"constraints,omitempty"`
}

// Policy decides whether a tool is exposed and whether a call may run.
// An error is treated as a denial (fail closed).
type Policy interface {
	Decide(ctx context.Context, in PolicyInput) (Decision, error)
}

// Confirmer is the port through which an entry channel asks a human to
// approve a call the policy marked confirm.
type Confirmer interface {
	Confirm(ctx context.Context, call ToolCallRequest, def ToolDefinition, reasons []string) (bool, error)
}
