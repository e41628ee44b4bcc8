package tui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nagent/nagent/runtime/agent"
	"github.com/nagent/nagent/runtime/app"
	"github.com/nagent/nagent/runtime/gateway"
	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/store"
)

// Backend is what the terminal UI needs from the runtime. The App-backed
// implementation routes turns through the GatewayService; tests use fakes.
type Backend interface {
	// Turn runs one turn and streams its events to emit; cancelling ctx
	// cancels the turn.
	Turn(ctx context.Context, t Turn, emit agent.EmitFunc) (*agent.Result, error)
	// Bind makes the terminal's conversation continue sessionID, or a new
	// session when it is empty, and returns the session bound.
	Bind(ctx context.Context, sessionID string) (string, error)
	// Sessions lists stored sessions, most recently updated first.
	Sessions(ctx context.Context) ([]*store.Session, error)
	// History returns a stored session's messages and tool-call records.
	History(ctx context.Context, sessionID string) ([]*store.Message, []*store.ToolCall, error)
	// Tools lists the tool definitions a run in sessionID may see.
	Tools(ctx context.Context, sessionID string) []tools.ToolDefinition
	// Memory describes the external memory snapshot (memory.md, user.md).
	Memory(ctx context.Context) string
	// Policy describes the active policy revision.
	Policy() string
	// Models lists the models the picker offers, the configured one first.
	Models() []string
}

// Turn is one message typed in the terminal.
type Turn struct {
	SessionID string
	Text      string
	// Model, when set, replaces the configured model for this turn.
	Model     string
	Confirmer tools.Confirmer
}

// appBackend is Backend over a wired App: turns go through a.Gateway as
// platform "cli" under one conversation per terminal user.
type appBackend struct {
	a    *app.App
	conv gateway.Conversation
}

var _ Backend = (*appBackend)(nil)

// NewAppBackend returns the Backend of a wired App: turns go through
// a.Gateway under the conversation "tui:<user>" of platform "cli".
func NewAppBackend(a *app.App) Backend { return newAppBackend(a) }

// newAppBackend returns the backend of a, whose conversation is named after
// the terminal's user (chat id "tui:<user>").
func newAppBackend(a *app.App) *appBackend {
	user := os.Getenv("USER")
	if user == "" {
		user = "local"
	}
	return &appBackend{a: a, conv: gateway.Conversation{Platform: gateway.PlatformCLI, ChatID: "tui:" + user}}
}

func (b *appBackend) Turn(ctx context.Context, t Turn, emit agent.EmitFunc) (*agent.Result, error) {
	return b.a.Gateway.Handle(ctx, gateway.Message{
		Conversation: b.conv,
		SessionID:    t.SessionID,
		Text:         t.Text,
		Confirmer:    t.Confirmer,
		Params:       llm.GenerationParams{Model: t.Model},
	}, emit)
}

func (b *appBackend) Bind(ctx context.Context, sessionID string) (string, error) {
	return b.a.Gateway.Bind(ctx, b.conv, sessionID)
}

// lastSession is the session the terminal's conversation continues, or "".
func (b *appBackend) lastSession(ctx context.Context) (string, error) {
	return b.a.Gateway.Session(ctx, b.conv)
}

func (b *appBackend) Sessions(ctx context.Context) ([]*store.Session, error) {
	return b.a.DB.ListSessions(ctx, store.SessionFilter{Limit: 200})
}

func (b *appBackend) History(ctx context.Context, sessionID string) ([]*store.Message, []*store.ToolCall, error) {
	msgs, err := b.a.DB.ListMessages(ctx, sessionID)
	if err != nil {
		return nil, nil, err
	}
	calls, err := b.a.DB.ListToolCalls(ctx, sessionID)
	return msgs, calls, err
}

func (b *appBackend) Tools(ctx context.Context, sessionID string) []tools.ToolDefinition {
	return b.a.Tools.Definitions(ctx, tools.ExecutionContext{
		SessionID: sessionID, Source: gateway.PlatformCLI, AgentContext: tools.AgentPrimary,
	})
}

func (b *appBackend) Memory(context.Context) string {
	return describeMemory(b.a.Config.MemoryDir(), b.a.Config.ExternalMemory.Enabled)
}

func (b *appBackend) Policy() string {
	e := b.a.Policy
	var sb strings.Builder
	fmt.Fprintf(&sb, "revision %s\nstatus   %s\n", e.Revision(), e.Status())
	sb.WriteString("files:\n")
	for _, f := range e.Files() {
		sb.WriteString("  " + f + "\n")
	}
	return strings.TrimRight(sb.String(), "\n")
}

func (b *appBackend) Models() []string {
	out := []string{b.a.Config.LLM.Model}
	for _, m := range b.a.Config.LLM.Models {
		if m != "" && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// describeMemory summarises the builtin external memory files in dir: the
// size and first lines of memory.md and user.md.
func describeMemory(dir string, enabled []string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "external memory enabled for new sessions: %s\n", strings.Join(enabled, ", "))
	for _, name := range []string{"memory.md", "user.md"} {
		path := filepath.Join(dir, name)
		data, err := os.ReadFile(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			fmt.Fprintf(&sb, "\n%s: empty (no file yet)\n", name)
			continue
		case err != nil:
			fmt.Fprintf(&sb, "\n%s: not readable: %v\n", name, err)
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		fmt.Fprintf(&sb, "\n%s: %d bytes, %d lines\n", name, len(data), len(lines))
		for i, l := range lines {
			if i == 12 {
				fmt.Fprintf(&sb, "  … %d more lines in %s\n", len(lines)-i, path)
				break
			}
			sb.WriteString("  " + l + "\n")
		}
	}
	return strings.TrimRight(sb.String(), "\n")
}
