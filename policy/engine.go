// Package policy wraps OPA: it owns the Rego policies that decide which tools
// a run may see and call, under which constraints, and who may write
// external memory, and the audit trail of those decisions.
//
// The Engine loads the embedded defaults (policy/rego/) plus an admin's
// files, compiles them once into prepared queries shared by every goroutine,
// reloads them when the files change, and fails closed: a policy set that
// does not compile is never activated, and a decision that cannot be taken
// is a denial. README.md is the contract admins write against.
package policy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"

	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/store"
)

// DefaultDebounce is how long the watcher lets files settle before a reload.
const DefaultDebounce = 200 * time.Millisecond

// Options configure an Engine. Zero fields take their defaults.
type Options struct {
	// Dir holds the admin's *.rego files and data.json / data.yaml documents,
	// usually $NAGENT_HOME/policies. It need not exist. Empty means the
	// embedded defaults only.
	Dir string
	// Log receives reloads, load errors and evaluation failures
	// (default slog.Default()).
	Log *slog.Logger
	// Audit stores every call decision; nil keeps no audit trail.
	Audit DecisionRecorder
	// Debounce is how long Start's watcher waits for the files to settle
	// before it reloads (default DefaultDebounce).
	Debounce time.Duration
}

// Engine takes tool and memory-write decisions with the active policy set.
// All methods are safe for concurrent use.
type Engine struct {
	opts  Options
	set   atomic.Pointer[policySet]
	err   atomic.Pointer[LoadError] // the last load's error; nil after a good load
	audit *auditLog

	loadMu sync.Mutex // serialises loads
	// onReload is called after every reload attempt (see OnReload).
	onReload atomic.Pointer[func(revision string, err *LoadError)]

	mu     sync.Mutex // guards watch and closed
	watch  *watcher
	closed bool
}

var _ tools.Policy = (*Engine)(nil)

// policySet is one compiled, immutable policy set. Reloads swap the whole
// set, so a decision never sees half of one.
type policySet struct {
	revision string
	files    []string
	tools    rego.PreparedEvalQuery
	memory   rego.PreparedEvalQuery
	// use is what the rules read of the input; toolInput builds no more.
	use *inputUse
	// cacheable: no rule reads input.time, input.session.id, the whole
	// input or a nondeterministic built-in, so expose decisions can be cached.
	cacheable bool
	cache     decisionCache
}

// New loads the embedded defaults and the files under opts.Dir. A broken
// admin file does not fail New: the engine starts with the embedded defaults
// alone, logs the problem and reports it through LastError until a reload
// succeeds. New fails only if the embedded defaults do not compile.
func New(ctx context.Context, opts Options) (*Engine, error) {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultDebounce
	}
	e := &Engine{opts: opts}
	if err := e.Reload(ctx); err != nil {
		set, berr := load(ctx, builtinSources())
		if berr != nil {
			return nil, fmt.Errorf("policy.New: embedded defaults: %w", berr)
		}
		e.set.Store(set)
		e.opts.Log.Warn("policy: serving the embedded defaults only", "revision", set.revision)
	}
	if opts.Audit != nil {
		e.audit = newAuditLog(opts.Audit, opts.Log)
	}
	return e, nil
}

// Reload reads and compiles the policy files again and, if they compile,
// activates them atomically. On error the active set stays in force, and
// the error (each problem with file and line) is logged and kept for
// LastError. Reloading unchanged files is cheap.
func (e *Engine) Reload(ctx context.Context) error {
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	defer e.notifyReload()
	srcs, err := e.sources()
	if err == nil {
		cur := e.set.Load()
		if cur != nil && cur.revision == revision(runtimeSources(srcs)) {
			e.err.Store(nil)
			return nil
		}
		var set *policySet
		if set, err = load(ctx, srcs); err == nil {
			e.set.Store(set)
			e.err.Store(nil)
			e.opts.Log.Info("policy: loaded", "revision", set.revision, "files", len(set.files), "expose_cache", set.cacheable)
			return nil
		}
	}
	le := problems(err)
	e.err.Store(le)
	active := "none"
	if cur := e.set.Load(); cur != nil {
		active = cur.revision
	}
	e.opts.Log.Error("policy: load failed; the last good policy set stays active", "err", le.Error(), "active_revision", active)
	return fmt.Errorf("policy.Load: %w", le)
}

// sources lists the embedded defaults and the admin's files.
func (e *Engine) sources() ([]source, error) {
	admin, err := readDir(e.opts.Dir)
	if err != nil {
		return nil, err
	}
	return append(builtinSources(), admin...), nil
}

// runtimeSources drops the test files, which never affect a decision.
func runtimeSources(srcs []source) []source {
	out := make([]source, 0, len(srcs))
	for _, s := range srcs {
		if !s.test {
			out = append(out, s)
		}
	}
	return out
}

// load compiles srcs and prepares the decision queries.
func load(ctx context.Context, srcs []source) (*policySet, error) {
	c, err := compile(ctx, srcs, compileOptions{})
	if err != nil {
		return nil, err
	}
	use := analyseInput(c.compiler)
	set := &policySet{revision: c.revision, files: c.files, use: use, cacheable: use.cacheable()}
	for q, pq := range map[string]*rego.PreparedEvalQuery{toolsQuery: &set.tools, memoryQuery: &set.memory} {
		*pq, err = rego.New(
			rego.Query(q),
			rego.Compiler(c.compiler),
			rego.Store(c.store),
			rego.StrictBuiltinErrors(true),
		).PrepareForEval(ctx)
		if err != nil {
			return nil, fmt.Errorf("prepare %s: %w", q, err)
		}
	}
	return set, nil
}

// Revision identifies the active policy set: a hash of its files' names and
// contents (test files excluded).
func (e *Engine) Revision() string { return e.set.Load().revision }

// Files lists the files of the active policy set, embedded defaults first.
func (e *Engine) Files() []string { return e.set.Load().files }

// CachesExposeDecisions reports whether the active policy set lets the
// engine cache expose decisions (see README.md, "Caching").
func (e *Engine) CachesExposeDecisions() bool { return e.set.Load().cacheable }

// LastError returns the error of the last load, or nil if it succeeded.
// While it is set, the last good policy set is in force.
func (e *Engine) LastError() error {
	if le := e.err.Load(); le != nil {
		return le
	}
	return nil
}

// Status summarises the engine for health checks: "ok" or the load error,
// with the active revision.
func (e *Engine) Status() string {
	if err := e.LastError(); err != nil {
		return fmt.Sprintf("error: %v (serving last good revision %s)", err, e.Revision())
	}
	return "ok (revision " + e.Revision() + ")"
}

// Decide takes the decision data.nagent.tools.decision for in. It implements
// tools.Policy. An evaluation error or an undefined decision is a denial:
// Decide returns a deny Decision together with the error, and logs it.
// Every PhaseCall decision is recorded in the audit trail. PhaseExpose
// decisions are cached per policy revision when the policy allows it
// (see README.md); the returned Decision must not be modified.
func (e *Engine) Decide(ctx context.Context, in tools.PolicyInput) (tools.Decision, error) {
	set := e.set.Load()
	if in.Phase == tools.PhaseExpose && set.cacheable {
		var buf [256]byte
		if key, err := exposeKey(buf[:0], in, set.use); err == nil {
			if d, ok := set.cache.get(key); ok {
				return d, nil
			}
			d, err := e.decide(ctx, set, in)
			if err == nil {
				set.cache.put(key, d)
			}
			return d, err
		}
	}
	start := time.Now()
	d, err := e.decide(ctx, set, in)
	if in.Phase == tools.PhaseCall && e.audit != nil {
		rec := store.PolicyDecision{
			CreatedAt: in.Time, SessionID: in.Exec.SessionID, Tool: in.Tool.Name, Phase: string(in.Phase),
			Allow: d.Allow, Confirm: d.Confirm, Reasons: d.Reasons, Revision: set.revision,
			EvalMicros: time.Since(start).Microseconds(),
		}
		if err != nil {
			rec.Error = err.Error()
		}
		e.audit.record(rec, in.Args, d.Constraints)
	}
	return d, err
}

func (e *Engine) decide(ctx context.Context, set *policySet, in tools.PolicyInput) (tools.Decision, error) {
	input, err := toolInput(in, set.use)
	if err == nil {
		var v ast.Value
		if v, err = eval(ctx, set.tools, input); err == nil {
			var d tools.Decision
			if d, err = parseToolDecision(v); err == nil {
				return d, nil
			}
		}
	}
	// A failing built-in may quote its operands, arguments included.
	msg := scrubSecrets(err.Error(), in.Args)
	prefix := fmt.Sprintf("policy.Decide %s %s: ", in.Phase, in.Tool.Name)
	err = fmt.Errorf("%s%w", prefix, err)
	if msg != errors.Unwrap(err).Error() {
		err = &secretSafeError{msg: prefix + msg, err: err}
	}
	e.opts.Log.WarnContext(ctx, "policy: tool decision failed; denied (fail closed)",
		"phase", in.Phase, "tool", in.Tool.Name, "session_id", in.Exec.SessionID, "revision", set.revision, "err", err.Error())
	return denial(msg), err
}

// denial is the decision that stands in for one that could not be taken.
func denial(why string) tools.Decision {
	return tools.Decision{Reasons: []string{"policy evaluation failed (fail closed): " + why}}
}

// DecideMemoryWrite takes the decision data.nagent.memory.decision for one
// write to external memory. Like Decide, it fails closed: on error the
// returned decision refuses the write.
func (e *Engine) DecideMemoryWrite(ctx context.Context, w MemoryWrite) (MemoryDecision, error) {
	set := e.set.Load()
	input, err := memoryInput(w)
	if err == nil {
		var v ast.Value
		if v, err = eval(ctx, set.memory, input); err == nil {
			var d MemoryDecision
			if d, err = parseMemoryDecision(v); err == nil {
				return d, nil
			}
		}
	}
	e.opts.Log.WarnContext(ctx, "policy: memory decision failed; write refused (fail closed)",
		"provider", w.Provider, "operation", w.Operation, "session_id", w.SessionID, "revision", set.revision, "err", err)
	return MemoryDecision{Reasons: denial(err.Error()).Reasons}, fmt.Errorf("policy.DecideMemoryWrite %s: %w", w.Provider, err)
}

// EvalTools evaluates data.nagent.tools.decision for a raw input document
// (as decoded from JSON or YAML), without caching or audit. It is what
// `nagent policy eval` and the conformance cases use. It fails closed like
// Decide.
func (e *Engine) EvalTools(ctx context.Context, doc any) (tools.Decision, error) {
	v, err := e.evalDocument(ctx, e.set.Load().tools, doc)
	if err == nil {
		var d tools.Decision
		if d, err = parseToolDecision(v); err == nil {
			return d, nil
		}
	}
	return denial(err.Error()), fmt.Errorf("policy.EvalTools: %w", err)
}

// EvalMemory evaluates data.nagent.memory.decision for a raw input document.
func (e *Engine) EvalMemory(ctx context.Context, doc any) (MemoryDecision, error) {
	v, err := e.evalDocument(ctx, e.set.Load().memory, doc)
	if err == nil {
		var d MemoryDecision
		if d, err = parseMemoryDecision(v); err == nil {
			return d, nil
		}
	}
	return MemoryDecision{Reasons: denial(err.Error()).Reasons}, fmt.Errorf("policy.EvalMemory: %w", err)
}

func (e *Engine) evalDocument(ctx context.Context, pq rego.PreparedEvalQuery, doc any) (ast.Value, error) {
	input, err := ast.InterfaceToValue(doc)
	if err != nil {
		return nil, fmt.Errorf("input document: %w", err)
	}
	return eval(ctx, pq, input)
}

// eval runs a prepared query on input and returns the value of its single
// expression as a Rego value. Cancelling ctx stops the evaluation.
func eval(ctx context.Context, pq rego.PreparedEvalQuery, input ast.Value) (ast.Value, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cancel := topdown.NewCancel()
	stop := context.AfterFunc(ctx, cancel.Cancel) // cheaper than OPA's goroutine per query
	defer stop()
	rs, err := pq.Eval(ctx,
		rego.EvalParsedInput(input),
		rego.EvalExternalCancel(cancel),
		rego.EvalGenerateJSON(rawValue),
	)
	if err != nil {
		return nil, err
	}
	if len(rs) == 0 || len(rs[0].Expressions) == 0 {
		return nil, ErrUndefined
	}
	v, ok := rs[0].Expressions[0].Value.(ast.Value)
	if !ok {
		return nil, errors.New("decision is not a value")
	}
	return v, nil
}

// rawValue hands query results over as Rego values; converting them to Go
// values first would only cost allocations.
func rawValue(t *ast.Term, _ *rego.EvalContext) (any, error) { return t.Value, nil }

// Close stops the watcher and writes out the audit records still buffered.
// Decisions taken after Close are still recorded, synchronously.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	w := e.watch
	e.watch = nil
	e.mu.Unlock()
	var err error
	if w != nil {
		err = w.stop()
	}
	if e.audit != nil {
		e.audit.close()
	}
	return err
}
