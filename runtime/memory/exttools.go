package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/store"
)

// Tool names of the external-memory tools.
const (
	ExternalMemoryTool      = "external_memory"
	MultiExternalMemoryTool = "multi_external_memory"
)

// MemoryWriteInput is what the write policy decides on: one write to
// external memory (package nagent.memory in Rego).
type MemoryWriteInput struct {
	// Operation is add, replace, remove or sync.
	Operation string
	// Provider is "builtin", "project:<name>" or a retrieval provider's name.
	Provider string
	// Target is the file written: memory.md, user.md; empty for a sync.
	Target       string
	AgentContext string
	SessionID    string
	Source       string
	Trusted      map[string]any
	Time         time.Time
}

// WritePolicy decides whether a write to external memory may happen. An
// error is a denial (fail closed).
type WritePolicy interface {
	DecideWrite(ctx context.Context, in MemoryWriteInput) (allowed bool, reasons []string, err error)
}

// DefaultWritePolicy is the built-in write policy, used until a Rego engine
// is wired in: a subagent or a cron run cannot write builtin memory, since
// what the agent remembers about the user is written while a human is in
// the loop. Everything else is allowed.
type DefaultWritePolicy struct{}

// DecideWrite implements WritePolicy.
func (DefaultWritePolicy) DecideWrite(_ context.Context, in MemoryWriteInput) (bool, []string, error) {
	if in.Provider == BuiltinProvider && (in.AgentContext == tools.AgentSubagent || in.AgentContext == tools.AgentCron) {
		return false, []string{fmt.Sprintf("a %s run cannot write builtin memory", in.AgentContext)}, nil
	}
	return true, nil, nil
}

// Editor is a provider whose Markdown files the memory tools edit.
type Editor interface {
	Edit(ctx context.Context, e Edit) (EditResult, error)
}

// Edit is one memory-tool operation on a provider's files.
type Edit struct {
	// Action is read, add, replace or remove.
	Action string
	// Target is "memory" (memory.md) or "user" (user.md).
	Target string
	// Content is the entry to add, or the replacement.
	Content string
	// OldText identifies the one entry to replace or remove (a substring of it).
	OldText string
	Time    time.Time
}

// EditResult is what a memory tool returns to the model.
type EditResult struct {
	Target   string   `json:"target"`
	Entries  []string `json:"entries,omitempty"`
	Count    int      `json:"entry_count"`
	Chars    int      `json:"chars"`
	MaxChars int      `json:"max_chars"`
	Message  string   `json:"message,omitempty"`
}

// Edit actions and targets.
const (
	ActionRead    = "read"
	ActionAdd     = "add"
	ActionReplace = "replace"
	ActionRemove  = "remove"
	TargetMemory  = "memory"
	TargetUser    = "user"
)

// TargetFile is the file of an edit target.
func TargetFile(target string) string {
	if target == TargetUser {
		return "user.md"
	}
	return "memory.md"
}

// ProviderTool is one tool a provider exposes, ready for ToolService.Register.
type ProviderTool struct {
	Definition tools.ToolDefinition
	Executor   tools.Executor
	// Write, when set, marks a tool that writes memory: the manager asks the
	// write policy before each call and records the call, as it does for
	// external_memory.
	Write *ToolWrite
}

// ToolWrite says what a writing provider tool writes, for the write policy.
type ToolWrite struct {
	Operation string
	Target    string
}

const memoryToolDescription = `Read or edit your persistent memory, which lasts across sessions. ` +
	`target "memory" is memory.md: stable knowledge about the environment, projects, conventions and lessons learned; ` +
	`target "user" is user.md: the user's preferences and habits. ` +
	`Actions: read; add (content: one short, self-contained entry); replace (old_text: a unique part of one entry, content: its new text); remove (old_text). ` +
	`Save what will still matter in a later session; do not save one-off task details. Memory is shown to you when a new session starts.`

var memoryToolParameters = json.RawMessage(`{
	"type": "object",
	"properties": {
		"action": {"type": "string", "enum": ["read", "add", "replace", "remove"]},
		"target": {"type": "string", "enum": ["memory", "user"], "description": "memory: memory.md (stable knowledge); user: user.md (user preferences)"},
		"content": {"type": "string", "description": "the entry to add, or the replacement text"},
		"old_text": {"type": "string", "description": "a unique part of the entry to replace or remove"}
	},
	"required": ["action", "target"],
	"additionalProperties": false
}`)

var multiMemoryToolParameters = json.RawMessage(`{
	"type": "object",
	"properties": {
		"project": {"type": "string", "description": "the project whose memory to use; one of the projects enabled for this session"},
		"action": {"type": "string", "enum": ["read", "add", "replace", "remove"]},
		"target": {"type": "string", "enum": ["memory", "user"], "description": "memory: the project's memory.md; user: its user.md"},
		"content": {"type": "string", "description": "the entry to add, or the replacement text"},
		"old_text": {"type": "string", "description": "a unique part of the entry to replace or remove"}
	},
	"required": ["project", "action", "target"],
	"additionalProperties": false
}`)

// Tools returns the external-memory tools to register: external_memory
// when a builtin provider is configured, multi_external_memory when
// multi-project memory is, and the tools of the active retrieval provider
// and of extra providers. FilterTools later hides the ones a session did
// not enable.
func (m *ExternalMemoryManager) Tools() []ProviderTool {
	var out []ProviderTool
	if _, ok := m.opts.Builtin.(Editor); ok {
		out = append(out, ProviderTool{
			Definition: tools.ToolDefinition{
				Name: ExternalMemoryTool, Description: memoryToolDescription, Parameters: memoryToolParameters,
				RiskLevel: tools.RiskLow, SourceType: tools.SourceBuiltin,
			},
			Executor: m.bounded(BuiltinProvider, tools.ExecutorFunc(func(ctx context.Context, call tools.ToolCallRequest, ec tools.ExecutionContext) (string, error) {
				return m.runMemoryTool(ctx, call, ec, false)
			})),
		})
	}
	if m.opts.Projects != nil {
		out = append(out, ProviderTool{
			Definition: tools.ToolDefinition{
				Name: MultiExternalMemoryTool, Parameters: multiMemoryToolParameters,
				Description: `The same as external_memory, for the memory of a named project (its memory.md and user.md). ` +
					`Only projects enabled for this session can be used.`,
				RiskLevel: tools.RiskLow, SourceType: tools.SourceBuiltin,
			},
			Executor: m.bounded("multi-project", tools.ExecutorFunc(func(ctx context.Context, call tools.ToolCallRequest, ec tools.ExecutionContext) (string, error) {
				return m.runMemoryTool(ctx, call, ec, true)
			})),
		})
	}
	for _, p := range m.toolProviders() {
		for _, t := range p.(ToolProvider).Tools() {
			if t.Write != nil {
				t.Executor = m.guardWrite(p.Name(), *t.Write, t.Executor)
			}
			t.Executor = m.bounded(p.Name(), t.Executor)
			out = append(out, t)
		}
	}
	return out
}

// bounded runs a memory tool under the provider's tool timeout; a call that
// runs out of time is logged and counted like any provider failure (the
// model sees the error as the tool's result).
func (m *ExternalMemoryManager) bounded(provider string, exec tools.Executor) tools.Executor {
	return tools.ExecutorFunc(func(ctx context.Context, call tools.ToolCallRequest, ec tools.ExecutionContext) (string, error) {
		m.stat(provider, OpTool).calls.Add(1)
		d := m.timeout(provider, OpTool)
		cctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		out, err := exec.Execute(cctx, call, ec)
		if err != nil && ctx.Err() == nil && cctx.Err() != nil {
			m.fail(provider, OpTool, fmt.Errorf("%s timed out after %s", call.Name, d), true, ec.SessionID)
			return "", fmt.Errorf("%s timed out after %s", call.Name, d)
		}
		return out, err
	})
}

// guardWrite puts the write policy and the write record around a provider
// tool that writes memory.
func (m *ExternalMemoryManager) guardWrite(provider string, w ToolWrite, exec tools.Executor) tools.Executor {
	return tools.ExecutorFunc(func(ctx context.Context, call tools.ToolCallRequest, ec tools.ExecutionContext) (string, error) {
		allowed, reasons, err := m.opts.Policy.DecideWrite(ctx, MemoryWriteInput{
			Operation: w.Operation, Provider: provider, Target: w.Target, AgentContext: ec.AgentContext,
			SessionID: ec.SessionID, Source: ec.Source, Trusted: ec.TrustedMetadata, Time: m.opts.Now(),
		})
		if err != nil {
			reasons = append(reasons, "policy evaluation failed: "+err.Error())
			allowed = false
		}
		rec := store.MemoryWrite{
			SessionID: ec.SessionID, ToolCallID: call.ID, Provider: provider, Target: w.Target, Operation: w.Operation,
			Content: call.Arguments, AgentContext: ec.AgentContext, Allowed: allowed, Reasons: reasons,
		}
		if !allowed {
			m.record(rec)
			return "", fmt.Errorf("writing %s %s was denied by the memory policy: %s", provider, w.Target, strings.Join(reasons, "; "))
		}
		out, err := exec.Execute(ctx, call, ec)
		if err != nil {
			rec.Error = err.Error()
		}
		m.record(rec)
		return out, err
	})
}

func (m *ExternalMemoryManager) toolProviders() []Provider {
	var ps []Provider
	if r := m.opts.Retrieval; r != nil {
		ps = append(ps, r)
	}
	ps = append(ps, m.opts.Extra...)
	var out []Provider
	for _, p := range ps {
		if _, ok := p.(ToolProvider); ok {
			out = append(out, p)
		}
	}
	return out
}

// FilterTools hides the external-memory tools whose provider the session
// did not enable: external_memory without builtin, multi_external_memory
// without a project, a retrieval provider's tools without that provider.
// Other tools pass through in order.
func (m *ExternalMemoryManager) FilterTools(defs []tools.ToolDefinition, enabled []string) []tools.ToolDefinition {
	owner := make(map[string]string)
	for _, p := range m.toolProviders() {
		for _, t := range p.(ToolProvider).Tools() {
			owner[t.Definition.Name] = p.Name()
		}
	}
	hasProject := false
	for _, e := range enabled {
		if _, ok := ProjectName(e); ok && !slices.ContainsFunc(m.opts.Extra, func(p Provider) bool { return p.Name() == e }) {
			hasProject = true
		}
	}
	out := defs[:0:0]
	for _, d := range defs {
		keep := true
		switch d.Name {
		case ExternalMemoryTool:
			keep = slices.Contains(enabled, BuiltinProvider)
		case MultiExternalMemoryTool:
			keep = hasProject
		default:
			if o, ok := owner[d.Name]; ok {
				keep = slices.Contains(enabled, o)
			}
		}
		if keep {
			out = append(out, d)
		}
	}
	return out
}

// EnabledFor returns the session's external-memory selection.
func (m *ExternalMemoryManager) EnabledFor(ctx context.Context, sessionID string) ([]string, error) {
	m.mu.Lock()
	e, ok := m.enabled.get(sessionID)
	m.mu.Unlock()
	if ok {
		return e, nil
	}
	if m.opts.DB == nil {
		return m.Defaults(), nil
	}
	s, err := m.opts.DB.GetSession(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.enabled.put(sessionID, s.ExternalMemoryEnabled)
	m.mu.Unlock()
	return s.ExternalMemoryEnabled, nil
}

type memoryToolArgs struct {
	Project string `json:"project"`
	Action  string `json:"action"`
	Target  string `json:"target"`
	Content string `json:"content"`
	OldText string `json:"old_text"`
}

// runMemoryTool runs external_memory (project false) or
// multi_external_memory. Every write is decided by the write policy and
// recorded, allowed or not.
func (m *ExternalMemoryManager) runMemoryTool(ctx context.Context, call tools.ToolCallRequest, ec tools.ExecutionContext, project bool) (string, error) {
	var a memoryToolArgs
	if strings.TrimSpace(call.Arguments) != "" {
		if err := json.Unmarshal([]byte(call.Arguments), &a); err != nil {
			return "", fmt.Errorf("invalid arguments: %v", err)
		}
	}
	enabled, err := m.EnabledFor(ctx, ec.SessionID)
	if err != nil {
		return "", fmt.Errorf("cannot read the session's external memory selection: %v", err)
	}
	entry, provider := BuiltinProvider, BuiltinProvider
	if project {
		name, ok := ProjectName(a.Project)
		if !ok {
			return "", fmt.Errorf("%q is not a valid project name", a.Project)
		}
		if !slices.Contains(enabled, name) && !slices.Contains(enabled, ProjectPrefix+name) {
			return "", fmt.Errorf("project %q is not enabled for this session; enabled: %s", name, strings.Join(enabled, ", "))
		}
		entry, provider = name, ProjectPrefix+name
	} else if !slices.Contains(enabled, BuiltinProvider) {
		return "", errors.New("builtin memory is not enabled for this session")
	}
	p, err := m.resolve(entry)
	if err != nil {
		return "", err
	}
	ed, ok := p.(Editor)
	if !ok {
		return "", fmt.Errorf("%s has no editable memory files", provider)
	}
	edit := Edit{Action: a.Action, Target: a.Target, Content: a.Content, OldText: a.OldText, Time: m.opts.Now()}
	if a.Action != ActionRead {
		allowed, reasons, err := m.opts.Policy.DecideWrite(ctx, MemoryWriteInput{
			Operation: a.Action, Provider: provider, Target: TargetFile(a.Target), AgentContext: ec.AgentContext,
			SessionID: ec.SessionID, Source: ec.Source, Trusted: ec.TrustedMetadata, Time: edit.Time,
		})
		if err != nil {
			reasons = append(reasons, "policy evaluation failed: "+err.Error())
			allowed = false
		}
		rec := store.MemoryWrite{
			SessionID: ec.SessionID, ToolCallID: call.ID, Provider: provider, Target: TargetFile(a.Target),
			Operation: a.Action, Content: a.Content, OldText: a.OldText, AgentContext: ec.AgentContext,
			Allowed: allowed, Reasons: reasons,
		}
		if !allowed {
			m.record(rec)
			return "", fmt.Errorf("writing %s %s was denied by the memory policy: %s", provider, TargetFile(a.Target), strings.Join(reasons, "; "))
		}
		res, err := ed.Edit(ctx, edit)
		if err != nil {
			rec.Error = err.Error()
		}
		m.record(rec)
		if err != nil {
			return "", err
		}
		return marshalResult(res)
	}
	res, err := ed.Edit(ctx, edit)
	if err != nil {
		return "", err
	}
	return marshalResult(res)
}

func (m *ExternalMemoryManager) record(w store.MemoryWrite) {
	if m.opts.DB == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.opts.DB.RecordMemoryWrite(ctx, w); err != nil {
		m.opts.Log.Error("memory write not recorded", "provider", w.Provider, "session_id", w.SessionID, "error", err)
	}
}

func marshalResult(res EditResult) (string, error) {
	b, err := json.Marshal(res)
	return string(b), err
}
