// Package chat owns ChatCompletionService, the application entry to the agent
// runtime: it names the session, fills in run defaults and runs one turn,
// either at once or as a stream of loop events.
package chat

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"github.com/nagent/nagent/runtime/agent"
	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/tools"
)

// Request is one conversation turn as an entry adapter sees it.
type Request struct {
	// SessionID continues a session; empty starts a new one.
	SessionID string
	// Source tags the entry channel: cli, api, dashboard, feishu, acp, cron.
	Source string
	// Messages are the turn's new messages.
	Messages       []llm.Message
	ExternalMemory []string
	Exec           tools.ExecutionContext
	ClientTools    []llm.ToolSpec
	// Params override the configured generation parameters for this turn.
	Params     llm.GenerationParams
	ToolChoice string
}

// ChatCompletionService runs conversation turns.
type ChatCompletionService struct {
	Runner *agent.AgentGraphRunner
}

// Complete runs one turn and returns its result.
func (s *ChatCompletionService) Complete(ctx context.Context, req Request) (*agent.Result, error) {
	return s.run(ctx, req, false, nil)
}

// Stream runs one turn, streaming model output, and delivers every loop
// event to emit before returning the result.
func (s *ChatCompletionService) Stream(ctx context.Context, req Request, emit agent.EmitFunc) (*agent.Result, error) {
	return s.run(ctx, req, true, emit)
}

func (s *ChatCompletionService) run(ctx context.Context, req Request, stream bool, emit agent.EmitFunc) (*agent.Result, error) {
	if len(req.Messages) == 0 {
		return nil, errs.Errorf(errs.EINVALID, "a turn needs at least one message")
	}
	for i, m := range req.Messages {
		switch m.Role {
		case llm.RoleUser, llm.RoleTool, llm.RoleAssistant, llm.RoleSystem:
		default:
			return nil, errs.Errorf(errs.EINVALID, "messages[%d]: unknown role %q; use user, assistant, tool or system", i, m.Role)
		}
	}
	if req.SessionID == "" {
		req.SessionID = NewSessionID()
	}
	if req.Source == "" {
		req.Source = "api"
	}
	return s.Runner.Run(ctx, agent.RunInput{
		SessionID: req.SessionID, Source: req.Source, Input: req.Messages,
		ExternalMemory: req.ExternalMemory, Exec: req.Exec, ClientTools: req.ClientTools,
		Params: req.Params, ToolChoice: req.ToolChoice, Stream: stream,
	}, emit)
}

// NewSessionID returns a fresh random session id.
func NewSessionID() string {
	var b [12]byte
	rand.Read(b[:])
	return "sess_" + hex.EncodeToString(b[:])
}
