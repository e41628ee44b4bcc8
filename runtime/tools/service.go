package tools

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Errors returned by ToolService registration, to be matched with errors.Is.
var (
	// ErrInvalidDefinition: a bad name, a parameters schema that is not a JSON
	// Schema object, a source mismatch, or a slot for a static source.
	ErrInvalidDefinition = errors.New("invalid tool definition")
	// ErrToolExists: the name is already taken by another tool.
	ErrToolExists = errors.New("tool name already taken")
)

// Defaults for Options.
const (
	DefaultMaxResultBytes = 32 << 10
	DefaultTimeout        = 60 * time.Second
)

// slotOrder is the fixed order in which dynamic slots follow the static tools
// in Definitions. A stable order keeps the provider's prompt cache warm.
var slotOrder = []SourceType{SourceSkill, SourceKnowledge, SourceMCP, SourcePlugin, SourceAgent}

// Options tunes a ToolService. Zero fields take their defaults.
type Options struct {
	// MaxResultBytes caps the content fed back to the model (default 32 KiB).
	// A policy's max_output_bytes constraint can only lower it.
	MaxResultBytes int
	// DefaultTimeout bounds one call unless the policy's timeout_ms
	// constraint sets another (default 60s).
	DefaultTimeout time.Duration
	// Now is the clock used for policy input and durations (default time.Now).
	Now func() time.Time
	// Fallback runs calls for tools registered without an executor; in the
	// design this is the MCP executor. Nil means such calls fail.
	Fallback Executor
	// Logger receives policy failures and executor panics (default slog.Default()).
	Logger *slog.Logger
}

// ToolService owns the tool surface of the runtime: the static (builtin)
// definitions, the dynamic slots, and the common path every call takes:
// look up, validate arguments, ask the policy, route, bound, cap.
//
// All methods are safe for concurrent use.
type ToolService struct {
	policy Policy
	opts   Options
	exec   *CompositeToolExecutor

	mu      sync.RWMutex
	tools   map[string]*registered
	static  []*registered                // registration order
	dynamic map[SourceType][]*registered // each slot in its given order
}

// registered is one definition with its compiled schema. It is immutable
// once stored.
type registered struct {
	def    ToolDefinition
	schema *jsonschema.Schema
	slot   SourceType // "" for a static tool
}

// NewToolService returns an empty service deciding with policy. A nil policy
// means RiskPolicy{}.
func NewToolService(policy Policy, opts Options) *ToolService {
	if policy == nil {
		policy = RiskPolicy{}
	}
	if opts.MaxResultBytes <= 0 {
		opts.MaxResultBytes = DefaultMaxResultBytes
	}
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = DefaultTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &ToolService{
		policy:  policy,
		opts:    opts,
		exec:    NewCompositeToolExecutor(opts.Fallback),
		tools:   make(map[string]*registered),
		dynamic: make(map[SourceType][]*registered),
	}
}

// Register adds a static tool. An empty SourceType becomes builtin; nil
// parameters become an empty object schema. The schema is compiled once,
// here. A nil exec leaves the tool to Options.Fallback.
func (s *ToolService) Register(def ToolDefinition, exec Executor) error {
	def, schema, err := validateDefinition(def, SourceBuiltin)
	if err != nil {
		return fmt.Errorf("tools.Register: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.tools[def.Name]; ok {
		return fmt.Errorf("tools.Register: %w: %s is already registered as %s", ErrToolExists, def.Name, old.owner())
	}
	r := &registered{def: def, schema: schema}
	s.tools[def.Name] = r
	s.static = append(s.static, r)
	s.exec.Route(def.Name, exec)
	return nil
}

// SetSlot replaces every definition of one dynamic source (skill, knowledge,
// mcp, plugin or agent) with defs, routing each to exec, in one step: either
// all of defs are in place afterwards, or, on error, the slot is unchanged.
// A definition's empty SourceType becomes source; another one is an error.
// A name taken by a static tool or another slot is an error naming both.
// A nil exec leaves the tools to Options.Fallback.
func (s *ToolService) SetSlot(source SourceType, defs []ToolDefinition, exec Executor) error {
	if !slices.Contains(slotOrder, source) {
		return fmt.Errorf("tools.SetSlot %s: %w: %q is not a dynamic source", source, ErrInvalidDefinition, source)
	}
	// Compile outside the lock: schemas from remote servers can be large.
	slot := make([]*registered, 0, len(defs))
	names := make(map[string]bool, len(defs))
	for _, def := range defs {
		def, schema, err := validateDefinition(def, source)
		if err != nil {
			return fmt.Errorf("tools.SetSlot %s: %w", source, err)
		}
		if def.SourceType != source {
			return fmt.Errorf("tools.SetSlot %s: %w: tool %s has source_type %s", source, ErrInvalidDefinition, def.Name, def.SourceType)
		}
		if names[def.Name] {
			return fmt.Errorf("tools.SetSlot %s: %w: %s appears twice in the slot", source, ErrToolExists, def.Name)
		}
		names[def.Name] = true
		slot = append(slot, &registered{def: def, schema: schema, slot: source})
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range slot {
		if old, ok := s.tools[r.def.Name]; ok && old.slot != source {
			return fmt.Errorf("tools.SetSlot %s: %w: %s from slot %s is already registered as %s", source, ErrToolExists, r.def.Name, source, old.owner())
		}
	}
	// Unroute only the names that leave the slot: a name that stays is
	// routed to exec in one step, so a call that already looked up its
	// definition never finds the name without an executor.
	for _, r := range s.dynamic[source] {
		if !names[r.def.Name] {
			delete(s.tools, r.def.Name)
			s.exec.Unroute(r.def.Name)
		}
	}
	delete(s.dynamic, source)
	for _, r := range slot {
		s.tools[r.def.Name] = r
		s.exec.Route(r.def.Name, exec)
	}
	if len(slot) > 0 {
		s.dynamic[source] = slot
	}
	return nil
}

// ClearSlot removes every definition of one dynamic source.
func (s *ToolService) ClearSlot(source SourceType) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clearSlotLocked(source)
}

func (s *ToolService) clearSlotLocked(source SourceType) {
	for _, r := range s.dynamic[source] {
		delete(s.tools, r.def.Name)
		s.exec.Unroute(r.def.Name)
	}
	delete(s.dynamic, source)
}

// owner says who registered r, for clash errors.
func (r *registered) owner() string {
	if r.slot == "" {
		return fmt.Sprintf("a static %s tool", r.def.SourceType)
	}
	return fmt.Sprintf("a tool of slot %s", r.slot)
}

// Lookup returns the definition registered under name, with its defaults
// filled in. Like the definitions Definitions returns, it shares its
// Parameters with the service: read it, do not modify it.
func (s *ToolService) Lookup(name string) (ToolDefinition, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.tools[name]
	if !ok {
		return ToolDefinition{}, false
	}
	return r.def, true
}

// all returns every registration in Definitions order: static tools in
// registration order, then the slots in slotOrder, each in its given order.
func (s *ToolService) all() []*registered {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*registered, 0, len(s.tools))
	out = append(out, s.static...)
	for _, src := range slotOrder {
		out = append(out, s.dynamic[src]...)
	}
	return out
}

// Definitions returns the tools exposed to the model in ec: every enabled
// definition whose PhaseExpose decision allows it. A confirm decision still
// exposes the tool, since confirmation happens per call; a denial or a
// policy error hides it. The order is stable across calls (see all), so the
// provider's prompt cache keeps working. The policy is not asked under the
// lock.
func (s *ToolService) Definitions(ctx context.Context, ec ExecutionContext) []ToolDefinition {
	now := s.opts.Now()
	var out []ToolDefinition
	for _, r := range s.all() {
		if r.def.Disabled {
			continue
		}
		d, err := s.policy.Decide(ctx, PolicyInput{Phase: PhaseExpose, Tool: r.def, Exec: ec, Time: now})
		if err != nil {
			s.opts.Logger.WarnContext(ctx, "tool policy failed; tool hidden",
				"phase", PhaseExpose, "tool", r.def.Name, "session_id", ec.SessionID, "err", err)
			continue
		}
		if d.Allow {
			out = append(out, r.def)
		}
	}
	return out
}
