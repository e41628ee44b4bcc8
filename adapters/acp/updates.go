package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/nagent/nagent/runtime/agent"
	"github.com/nagent/nagent/runtime/memory"
	"github.com/nagent/nagent/runtime/tools"
)

// renderer turns one turn's loop events into session/update notifications.
type renderer struct {
	conn      *Conn
	sessionID string
	log       *slog.Logger
	streamed  strings.Builder // the answer text sent so far
}

func (r *renderer) update(u any) {
	if err := r.conn.Notify("session/update", sessionNotification{SessionID: r.sessionID, Update: u}); err != nil {
		r.log.Warn("acp: session/update not sent", "session_id", r.sessionID, "err", err)
	}
}

func (r *renderer) emit(e agent.Event) {
	switch e.Type {
	case agent.EventDelta:
		if e.ReasoningContent != "" {
			r.update(chunkUpdate{SessionUpdate: updateThoughtChunk, Content: textBlock(e.ReasoningContent)})
		}
		if e.Content != "" {
			r.streamed.WriteString(e.Content)
			r.update(chunkUpdate{SessionUpdate: updateAgentChunk, Content: textBlock(e.Content)})
		}
	case agent.EventToolStarted:
		if e.Tool != nil {
			r.update(toolStarted(e.Tool.ID, e.Tool.Name, e.Tool.Arguments))
		}
	case agent.EventToolFinished:
		if e.Tool != nil {
			r.update(toolFinished(e.Tool.ID, e.Tool.Status, e.Tool.Content))
		}
	case agent.EventWarning:
		r.log.Warn("acp: turn warning", "session_id", r.sessionID, "warning", e.Message)
	}
}

// finish shows the answer of a turn that failed without streaming it: the
// loop's explanation (an iteration limit, a provider error) is the final
// message, not a delta.
func (r *renderer) finish(res *agent.Result) {
	if res == nil || res.Status == memory.StatusCompleted || res.Content == "" {
		return
	}
	if strings.HasSuffix(r.streamed.String(), res.Content) {
		return
	}
	text := res.Content
	if r.streamed.Len() > 0 {
		text = "\n\n" + text
	}
	r.update(chunkUpdate{SessionUpdate: updateAgentChunk, Content: textBlock(text)})
}

// toolStarted is the tool_call update for a call that began.
func toolStarted(id, name, args string) toolCall {
	return toolCall{
		SessionUpdate: updateToolCall, ToolCallID: id, Title: toolTitle(name, args),
		Kind: ToolKind(name), Status: toolInProgress, RawInput: rawArgs(args),
	}
}

// toolFinished is the tool_call_update for a call that ended with status
// (a tools.Status).
func toolFinished(id, status, content string) toolCall {
	st := toolCompleted
	if status != string(tools.StatusSuccess) {
		st = toolFailed
	}
	u := toolCall{SessionUpdate: updateToolCallPatch, ToolCallID: id, Status: st}
	if content != "" {
		u.Content = []toolCallContent{{Type: "content", Content: textBlock(content)}}
	}
	return u
}

// toolTitle is the call as the editor shows it: the tool and its arguments,
// clipped.
func toolTitle(name, args string) string {
	args = strings.TrimSpace(args)
	if args == "" || args == "{}" {
		return name
	}
	const max = 80
	if len(args) > max {
		args = args[:max] + "…"
	}
	return name + " " + args
}

// rawArgs is the call's arguments as JSON, or nothing when they are not.
func rawArgs(args string) json.RawMessage {
	if args == "" || !json.Valid([]byte(args)) {
		return nil
	}
	return json.RawMessage(args)
}

// toolKinds maps a word of a tool's name onto an ACP tool kind; the first
// word that matches, reading the name from the left, wins.
var toolKinds = map[string]string{
	"read": "read", "get": "read", "view": "read", "list": "read", "show": "read", "open": "read", "cat": "read", "time": "read",
	"write": "edit", "edit": "edit", "add": "edit", "update": "edit", "set": "edit", "create": "edit", "save": "edit", "patch": "edit", "append": "edit", "memory": "edit",
	"delete": "delete", "remove": "delete", "rm": "delete", "drop": "delete",
	"move": "move", "rename": "move", "mv": "move",
	"search": "search", "find": "search", "grep": "search", "query": "search", "lookup": "search",
	"execute": "execute", "exec": "execute", "run": "execute", "shell": "execute", "bash": "execute", "code": "execute", "eval": "execute",
	"fetch": "fetch", "http": "fetch", "download": "fetch", "browse": "fetch", "web": "fetch", "url": "fetch",
	"think": "think", "plan": "think", "reason": "think",
}

// ToolKind maps a tool name onto the ACP tool kinds (read, edit, delete,
// move, search, execute, think, fetch, other) by the words of its name:
// get_current_time and skill_view read, search_knowledge searches,
// execute_code executes, fact_add edits. An MCP tool (mcp_<site>_<tool>)
// is judged by its remote name.
func ToolKind(name string) string {
	if rest, ok := strings.CutPrefix(name, "mcp_"); ok {
		if _, remote, ok := strings.Cut(rest, "_"); ok {
			name = remote
		}
	}
	words := strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return r == '_' || r == '-' || r == '.' || r == '/' })
	for _, w := range words {
		if k, ok := toolKinds[w]; ok {
			return k
		}
	}
	return "other"
}

// confirmer asks the editor about calls the policy marked confirm.
type confirmer struct {
	a *Agent
	s *session
}

var _ tools.Confirmer = (*confirmer)(nil)

// Confirm sends session/request_permission and waits for the answer. A
// tool approved with allow_always is approved without asking for the rest
// of the session. A cancelled turn or outcome is a rejection.
func (c *confirmer) Confirm(ctx context.Context, call tools.ToolCallRequest, def tools.ToolDefinition, reasons []string) (bool, error) {
	c.s.mu.Lock()
	always := c.s.allowed[def.Name]
	c.s.mu.Unlock()
	if always {
		return true, nil
	}
	tc := toolCall{ToolCallID: call.ID, Title: toolTitle(call.Name, call.Arguments), Kind: ToolKind(call.Name),
		Status: toolPending, RawInput: rawArgs(call.Arguments)}
	if len(reasons) > 0 {
		tc.Content = []toolCallContent{{Type: "content", Content: textBlock("Needs your approval: " + strings.Join(reasons, "; "))}}
	}
	raw, err := c.a.conn.Call(ctx, "session/request_permission", permissionParams{SessionID: c.s.id, ToolCall: tc, Options: permissionOptions})
	if err != nil {
		if ctx.Err() != nil {
			return false, nil // cancelled: the pending request counts as answered "cancelled"
		}
		return false, fmt.Errorf("acp: session/request_permission: %w", err)
	}
	var res permissionResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return false, fmt.Errorf("acp: session/request_permission answer: %w", err)
	}
	if res.Outcome.Outcome != "selected" {
		return false, nil
	}
	switch res.Outcome.OptionID {
	case optAllowAlways:
		c.s.mu.Lock()
		c.s.allowed[def.Name] = true
		c.s.mu.Unlock()
		return true, nil
	case optAllowOnce:
		return true, nil
	}
	return false, nil
}
