package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/nagent/nagent/runtime/tools"
)

// Keys of the input and decision documents, built once.
var (
	kPhase                = ast.StringTerm("phase")
	kTool                 = ast.StringTerm("tool")
	kName                 = ast.StringTerm("name")
	kSourceType           = ast.StringTerm("source_type")
	kRiskLevel            = ast.StringTerm("risk_level")
	kManaged              = ast.StringTerm("managed")
	kDisabled             = ast.StringTerm("disabled")
	kArgs                 = ast.StringTerm("args")
	kSession              = ast.StringTerm("session")
	kID                   = ast.StringTerm("id")
	kSource               = ast.StringTerm("source")
	kAgentContext         = ast.StringTerm("agent_context")
	kToolExposurePolicy   = ast.StringTerm("tool_exposure_policy")
	kExecutionContextMode = ast.StringTerm("execution_context_mode")
	kTrustedMetadata      = ast.StringTerm("trusted_metadata")
	kPermittedManaged     = ast.StringTerm("permitted_managed_tools")
	kTime                 = ast.StringTerm("time")
	kOperation            = ast.StringTerm("operation")
	kProvider             = ast.StringTerm("provider")
	kTarget               = ast.StringTerm("target")

	kAllow       = ast.StringTerm("allow")
	kConfirm     = ast.StringTerm("confirm")
	kReasons     = ast.StringTerm("reasons")
	kConstraints = ast.StringTerm("constraints")
)

// interned holds the terms of the values most inputs share. Input terms are
// only read during evaluation, so they can be shared between evaluations.
var interned = func() map[string]*ast.Term {
	m := map[string]*ast.Term{}
	for _, s := range []string{
		"", string(tools.PhaseExpose), string(tools.PhaseCall),
		tools.AgentPrimary, tools.AgentSubagent, tools.AgentCron, tools.AgentUnattended,
		tools.ExposureDefault, tools.ExposureSafeOnly,
		"api", "cli", "dashboard", "feishu", "acp", "cron",
	} {
		m[s] = ast.StringTerm(s)
	}
	return m
}()

// str returns the term of s, interned when it is a common value.
func str(s string) *ast.Term {
	if t, ok := interned[s]; ok {
		return t
	}
	return ast.StringTerm(s)
}

// toolKey is what input.tool holds.
type toolKey struct {
	name, source, risk string
	managed, disabled  bool
}

// toolTerms caches the input.tool term of each definition seen, since the
// same tools are decided on again and again.
var toolTerms struct {
	sync.RWMutex
	m map[toolKey]*ast.Term
}

const maxToolTerms = 4096

func toolTerm(t tools.ToolDefinition) *ast.Term {
	k := toolKey{t.Name, string(t.SourceType), string(t.RiskLevel), t.Managed, t.Disabled}
	toolTerms.RLock()
	term, ok := toolTerms.m[k]
	toolTerms.RUnlock()
	if ok {
		return term
	}
	term = ast.ObjectTerm(
		ast.Item(kName, ast.StringTerm(t.Name)),
		ast.Item(kSourceType, ast.StringTerm(string(t.SourceType))),
		ast.Item(kRiskLevel, ast.StringTerm(string(t.RiskLevel))),
		ast.Item(kManaged, ast.BooleanTerm(t.Managed)),
		ast.Item(kDisabled, ast.BooleanTerm(t.Disabled)),
	)
	toolTerms.Lock()
	if toolTerms.m == nil || len(toolTerms.m) >= maxToolTerms {
		toolTerms.m = make(map[toolKey]*ast.Term)
	}
	toolTerms.m[k] = term
	toolTerms.Unlock()
	return term
}

// toolInput builds the input document of a tool decision (see README.md)
// directly as a Rego value, without a JSON round trip. Keys no rule of the
// policy set reads (see inputUse) are left out: no rule can tell, and the
// arguments in particular are costly to convert.
func toolInput(in tools.PolicyInput, use *inputUse) (ast.Value, error) {
	ec := in.Exec
	items := make([][2]*ast.Term, 0, 10)
	items = append(items,
		ast.Item(kPhase, str(string(in.Phase))),
		ast.Item(kTool, toolTerm(in.Tool)),
		ast.Item(kAgentContext, str(ec.AgentContext)),
		ast.Item(kToolExposurePolicy, str(ec.ToolExposurePolicy)),
		ast.Item(kExecutionContextMode, str(ec.ExecutionContextMode)),
	)
	if use.reads("session") {
		items = append(items, ast.Item(kSession, ast.ObjectTerm(ast.Item(kID, ast.StringTerm(ec.SessionID)), ast.Item(kSource, str(ec.Source)))))
	}
	if use.reads("trusted_metadata") {
		meta, err := metadataValue(ec.TrustedMetadata)
		if err != nil {
			return nil, err
		}
		items = append(items, ast.Item(kTrustedMetadata, ast.NewTerm(meta)))
	}
	if use.reads("permitted_managed_tools") {
		permitted := make([]*ast.Term, len(ec.PermittedManagedTools))
		for i, name := range ec.PermittedManagedTools {
			permitted[i] = ast.StringTerm(name)
		}
		items = append(items, ast.Item(kPermittedManaged, ast.ArrayTerm(permitted...)))
	}
	if use.reads("time") {
		items = append(items, ast.Item(kTime, ast.StringTerm(formatTime(in.Time))))
	}
	if in.Phase == tools.PhaseCall && use.reads("args") {
		args, err := argsValue(in.Args)
		if err != nil {
			return nil, err
		}
		items = append(items, ast.Item(kArgs, ast.NewTerm(args)))
	}
	return ast.NewObject(items...), nil
}

// formatTime renders t as RFC 3339 in UTC, with a fraction when there is one.
func formatTime(t time.Time) string {
	if t.IsZero() {
		t = time.Now()
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// argsValue parses a call's JSON arguments; empty means {}.
func argsValue(raw json.RawMessage) (ast.Value, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return ast.NewObject(), nil
	}
	v, err := ast.ValueFromReader(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("arguments are not valid JSON: %w", err)
	}
	return v, nil
}

// metadataValue converts trusted metadata; nil means {}.
func metadataValue(m map[string]any) (ast.Value, error) {
	if len(m) == 0 {
		return ast.NewObject(), nil
	}
	v, err := ast.InterfaceToValue(m)
	if err != nil {
		return nil, fmt.Errorf("trusted_metadata: %w", err)
	}
	return v, nil
}

// InputDocument returns the input document the engine evaluates for in, as
// JSON. Admins write Rego against this shape; README.md documents it.
func InputDocument(in tools.PolicyInput) ([]byte, error) {
	v, err := toolInput(in, &readsAll)
	if err != nil {
		return nil, err
	}
	x, err := ast.JSON(v)
	if err != nil {
		return nil, err
	}
	return json.Marshal(x)
}

// exposeKey identifies an expose input by the fields the policy set reads,
// leaving out input.time and input.session.id (a set that reads those is
// not cached at all; see inputUse.cacheable).
// It appends to b, so that the caller can keep the key on its stack.
func exposeKey(b []byte, in tools.PolicyInput, use *inputUse) ([]byte, error) {
	t, ec := in.Tool, in.Exec
	for _, s := range [...]string{t.Name, string(t.SourceType), string(t.RiskLevel), ec.AgentContext, ec.ToolExposurePolicy, ec.ExecutionContextMode} {
		b = append(b, s...)
		b = append(b, 0)
	}
	b = append(b, flag(t.Managed), flag(t.Disabled), 0)
	if use.reads("session") {
		b = append(b, ec.Source...)
		b = append(b, 0)
	}
	if use.reads("permitted_managed_tools") {
		for _, name := range ec.PermittedManagedTools {
			b = append(b, name...)
			b = append(b, 0)
		}
		b = append(b, 0)
	}
	if use.reads("trusted_metadata") && len(ec.TrustedMetadata) > 0 {
		meta, err := json.Marshal(ec.TrustedMetadata) // map keys sorted: canonical
		if err != nil {
			return nil, err
		}
		b = append(b, meta...)
	}
	return b, nil
}

func flag(b bool) byte {
	if b {
		return '1'
	}
	return '0'
}

// MemoryWrite is one write to external memory, the input of a memory-write
// decision (package nagent.memory; README.md documents the document).
type MemoryWrite struct {
	// Operation is add, replace, remove or sync.
	Operation string
	// Provider is "builtin", "project:<name>" or a retrieval provider's name.
	Provider string
	// Target is the file written, memory.md or user.md; empty for a sync.
	Target       string
	AgentContext string
	SessionID    string
	Source       string
	// Trusted is the run's trusted_metadata.
	Trusted map[string]any
	Time    time.Time
}

// memoryInput builds the input document of a memory-write decision.
func memoryInput(w MemoryWrite) (ast.Value, error) {
	meta, err := metadataValue(w.Trusted)
	if err != nil {
		return nil, err
	}
	return ast.NewObject(
		ast.Item(kOperation, ast.StringTerm(w.Operation)),
		ast.Item(kProvider, ast.StringTerm(w.Provider)),
		ast.Item(kTarget, ast.StringTerm(w.Target)),
		ast.Item(kAgentContext, ast.StringTerm(w.AgentContext)),
		ast.Item(kSession, ast.ObjectTerm(ast.Item(kID, ast.StringTerm(w.SessionID)), ast.Item(kSource, ast.StringTerm(w.Source)))),
		ast.Item(kTrustedMetadata, ast.NewTerm(meta)),
		ast.Item(kTime, ast.StringTerm(formatTime(w.Time))),
	), nil
}
