package acp

import (
	"context"
	"encoding/json"

	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/store"
)

// loadSession replays a stored session as session/update notifications and
// makes it the editor's again, with the MCP servers the editor passes now.
func (a *Agent) loadSession(ctx context.Context, p loadSessionParams) (struct{}, error) {
	if _, err := a.opts.History.GetSession(ctx, p.SessionID); err != nil {
		return struct{}{}, notFound(p.SessionID, err)
	}
	msgs, err := a.opts.History.ListMessages(ctx, p.SessionID)
	if err != nil {
		return struct{}{}, err
	}
	calls, err := a.opts.History.ListToolCalls(ctx, p.SessionID)
	if err != nil {
		return struct{}{}, err
	}
	if old := a.session(p.SessionID); old != nil { // loaded twice: drop the first one's servers
		if err := a.closeSession(ctx, p.SessionID); err != nil {
			return struct{}{}, err
		}
	}
	sites, err := a.pool.attach(ctx, p.MCPServers)
	if err != nil {
		return struct{}{}, err
	}
	r := &renderer{conn: a.conn, sessionID: p.SessionID, log: a.opts.Log}
	replay(r, msgs, calls)
	a.adopt(p.SessionID, p.Cwd, sites)
	a.opts.Log.Info("acp: session loaded", "session_id", p.SessionID, "messages", len(msgs), "mcp_sites", sites)
	return struct{}{}, nil
}

// replay sends a session's stored history: user and assistant messages as
// chunks, each stored tool call as tool_call then tool_call_update with its
// recorded status and result.
func replay(r *renderer, msgs []*store.Message, calls []*store.ToolCall) {
	records := make(map[string]*store.ToolCall, len(calls))
	for _, c := range calls {
		records[c.ID] = c
	}
	answered := map[string]bool{}
	var open []string // calls announced and not yet answered
	for _, m := range msgs {
		switch llm.Role(m.Role) {
		case llm.RoleUser:
			if m.Content != "" {
				r.update(chunkUpdate{SessionUpdate: updateUserChunk, Content: textBlock(m.Content)})
			}
		case llm.RoleAssistant:
			if m.ReasoningContent != "" {
				r.update(chunkUpdate{SessionUpdate: updateThoughtChunk, Content: textBlock(m.ReasoningContent)})
			}
			if m.Content != "" {
				r.update(chunkUpdate{SessionUpdate: updateAgentChunk, Content: textBlock(m.Content)})
			}
			var tcs []llm.ToolCall
			if len(m.ToolCalls) > 0 && json.Unmarshal(m.ToolCalls, &tcs) == nil {
				for _, tc := range tcs {
					r.update(toolStarted(tc.ID, tc.Name, tc.Arguments))
					open = append(open, tc.ID)
				}
			}
		case llm.RoleTool:
			status := "success"
			if rec := records[m.ToolCallID]; rec != nil {
				status = rec.Status
			}
			r.update(toolFinished(m.ToolCallID, status, m.Content))
			answered[m.ToolCallID] = true
		}
	}
	// A call whose result was never stored (the turn was cancelled) ends
	// as its record says, or as failed.
	for _, id := range open {
		if answered[id] {
			continue
		}
		status, content := "error", "no result was recorded"
		if rec := records[id]; rec != nil {
			status, content = rec.Status, rec.Result
		}
		r.update(toolFinished(id, status, content))
	}
}
