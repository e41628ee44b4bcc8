package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nagent/nagent/runtime/tools"
)

// modelStreamBytes caps stdout and stderr, each, in the result the model
// sees (head and tail kept); the full capture is Limits.OutputBytes.
const modelStreamBytes = 12 << 10

var executeCodeParameters = json.RawMessage(`{
	"type": "object",
	"properties": {
		"code": {
			"type": "string",
			"description": "Python 3 source to run. Print what you want to see."
		},
		"timeout_seconds": {
			"type": "integer",
			"minimum": 1,
			"maximum": 600,
			"description": "Wall-clock limit for this run; defaults to the configured limit."
		}
	},
	"required": ["code"],
	"additionalProperties": false
}`)

// ToolDefinition is the execute_code tool. Its source is agent, so that
// safe_only runs never see it, and the policy's built-in rules keep it from
// cron and unattended runs.
func (m *Manager) ToolDefinition() tools.ToolDefinition {
	var b strings.Builder
	b.WriteString("Run Python 3 code in an isolated sandbox that belongs to this conversation and is reused across calls. ")
	b.WriteString("There is no network. /workspace is read-only; each call gets a fresh writable working directory /scratch; /tmp is private. ")
	b.WriteString("Print results to stdout. ")
	if len(m.opts.AllowedTools) > 0 {
		fmt.Fprintf(&b, "The code can call these tools with `import nagent_tools; nagent_tools.<name>(**arguments)`: %s (at most %d calls per run; a refused call raises nagent_tools.ToolError). ",
			strings.Join(m.opts.AllowedTools, ", "), m.opts.MaxToolCalls)
	}
	fmt.Fprintf(&b, "Default time limit %s.", m.opts.Timeout)
	if m.Unisolated() {
		b.WriteString(" WARNING: this runtime has no sandbox; the code runs as a plain process on the server.")
	}
	return tools.ToolDefinition{
		Name:        tools.ExecuteCodeTool,
		Description: b.String(),
		Parameters:  executeCodeParameters,
		RiskLevel:   tools.RiskMedium,
		SourceType:  tools.SourceAgent,
	}
}

// Tool returns the execute_code definition and its executor, ready for
// ToolService.Register.
func (m *Manager) Tool() (tools.ToolDefinition, tools.Executor) {
	return m.ToolDefinition(), tools.ExecutorFunc(m.executeTool)
}

// toolResult is the content execute_code returns to the model.
type toolResult struct {
	ExitReason ExitReason   `json:"exit_reason"`
	ExitCode   int          `json:"exit_code"`
	Stdout     string       `json:"stdout"`
	Stderr     string       `json:"stderr,omitempty"`
	DurationMS int64        `json:"duration_ms"`
	Sandbox    string       `json:"sandbox"`
	Reused     bool         `json:"reused"`
	ToolCalls  []CalledTool `json:"tool_calls,omitempty"`
	Warning    string       `json:"warning,omitempty"`
}

// executeTool runs one execute_code call. Every failure is an error (a
// ToolResult with status error for the model); it never panics the loop.
func (m *Manager) executeTool(ctx context.Context, call tools.ToolCallRequest, ec tools.ExecutionContext) (string, error) {
	var args struct {
		Code           string `json:"code"`
		TimeoutSeconds int    `json:"timeout_seconds"`
	}
	if err := json.Unmarshal([]byte(call.Arguments), &args); err != nil {
		return "", fmt.Errorf("invalid arguments: %v", err)
	}
	if strings.TrimSpace(args.Code) == "" {
		return "", errors.New("code is empty; send Python source in the code argument")
	}
	if ec.SessionID == "" {
		return "", errors.New("no session: execute_code needs a conversation session")
	}
	timeout := time.Duration(args.TimeoutSeconds) * time.Second
	if timeout <= 0 {
		timeout = m.opts.Timeout
	}
	// Finish inside the tool call's own deadline, so that a timeout is
	// reported as the code's, with its output.
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl) - time.Second; left < timeout {
			timeout = max(left, 100*time.Millisecond)
		}
	}
	res, err := m.Execute(ctx, ExecuteRequest{SessionID: ec.SessionID, Code: args.Code, Exec: ec, Timeout: timeout})
	if err != nil {
		return "", err
	}
	out := toolResult{
		ExitReason: res.ExitReason, ExitCode: res.ExitCode,
		Stdout: truncateMiddle(res.Stdout, modelStreamBytes), Stderr: truncateMiddle(res.Stderr, modelStreamBytes),
		DurationMS: res.DurationMS, Sandbox: res.Backend, Reused: res.Reused, ToolCalls: res.CalledTools, Warning: res.Warning,
	}
	data, err := json.Marshal(out)
	if err != nil {
		return "", err
	}
	if res.ExitReason != ExitOK {
		return "", errors.New(string(data))
	}
	return string(data), nil
}
