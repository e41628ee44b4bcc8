package scheduler

import (
	"context"

	"github.com/nagent/nagent/runtime/agent"
	"github.com/nagent/nagent/runtime/chat"
	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/store"
)

// SourceCron is the session source of scheduled runs.
const SourceCron = "cron"

// Executor runs the agent for one occurrence of a schedule in the given
// session and returns the turn's result.
type Executor interface {
	Execute(ctx context.Context, s store.Schedule, runID, sessionID string) (*agent.Result, error)
}

// ScheduledAgentExecutor runs a schedule's prompt as one turn of
// ChatCompletionService in a fresh session, with source cron,
// agent_context cron and tool exposure safe_only. It sets no Confirmer: no
// human watches a scheduled run, so a confirm decision is a denial.
type ScheduledAgentExecutor struct {
	Chat *chat.ChatCompletionService
}

var _ Executor = (*ScheduledAgentExecutor)(nil)

// Execute runs the schedule's prompt.
func (e *ScheduledAgentExecutor) Execute(ctx context.Context, s store.Schedule, runID, sessionID string) (*agent.Result, error) {
	return e.Chat.Complete(ctx, chat.Request{
		SessionID: sessionID,
		Source:    SourceCron,
		Messages:  []llm.Message{{Role: llm.RoleUser, Content: s.Prompt}},
		Exec:      CronExecutionContext(s, runID),
	})
}

// CronExecutionContext is the execution context of a scheduled run.
func CronExecutionContext(s store.Schedule, runID string) tools.ExecutionContext {
	return tools.ExecutionContext{
		AgentContext:       tools.AgentCron,
		ToolExposurePolicy: tools.ExposureSafeOnly,
		TrustedMetadata:    map[string]any{"schedule_id": s.ID, "schedule_name": s.Name, "schedule_run_id": runID},
		// Confirmer stays nil: confirmation is denied.
	}
}
