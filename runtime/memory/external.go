package memory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/store"
)

// Provider kinds and names the ExternalMemoryManager knows.
const (
	// BuiltinProvider is the name of the builtin provider ($NAGENT_HOME/memory).
	BuiltinProvider = "builtin"
	// ProjectPrefix may prefix a project's name in a session's selection
	// ("project:website" and "website" name the same project); the policy
	// input always uses the prefixed form.
	ProjectPrefix = "project:"
)

// RetrievalProviders are the names of the external-query providers; at most
// one of them is active.
var RetrievalProviders = []string{"holographic", "mem0", "honcho"}

// Provider is an external-memory provider. What it takes part in is said by
// the optional interfaces below; a provider implements the ones it needs.
type Provider interface {
	Name() string
}

// Snapshotter gives the provider's block of the static snapshot that goes
// into the system message (the Stable Context). An empty block is left out.
type Snapshotter interface {
	SystemSnapshot(ctx context.Context) (string, error)
}

// Prefetcher retrieves memory relevant to a query for the Turn Context.
type Prefetcher interface {
	Prefetch(ctx context.Context, q PrefetchQuery) (string, error)
}

// TurnSyncer receives each completed turn at finalize (sync_turn).
type TurnSyncer interface {
	SyncTurn(ctx context.Context, t SyncTurn) error
}

// PreCompressor salvages what should outlive history compression from the
// messages about to be compressed (on_pre_compress).
type PreCompressor interface {
	OnPreCompress(ctx context.Context, c PreCompress) (string, error)
}

// ToolProvider exposes tools of its own to the model.
type ToolProvider interface {
	Tools() []ProviderTool
}

// PrefetchQuery is what prefetch_all asks each provider.
type PrefetchQuery struct {
	SessionID string
	Query     string
}

// SyncTurn is one completed turn, as sync_all hands it to each provider.
type SyncTurn struct {
	SessionID    string
	Source       string
	AgentContext string
	// User is the turn's user input; Assistant its final answer.
	User      string
	Assistant string
	// Messages are the turn's messages: input, tool rounds, final answer.
	Messages []llm.Message
	Time     time.Time
}

// PreCompress is what pre_compress_all hands each provider.
type PreCompress struct {
	SessionID string
	// Messages are the messages about to be replaced by a summary.
	Messages []llm.Message
}

// Operations of the manager, as failures and counters name them.
const (
	OpSnapshot    = "system_snapshot"
	OpPrefetch    = "prefetch"
	OpSync        = "sync_turn"
	OpPreCompress = "pre_compress"
	OpTool        = "tool"
)

// Timeouts bound each operation on one provider. Zero fields take the
// defaults (DefaultTimeouts).
type Timeouts struct {
	Snapshot    time.Duration
	Prefetch    time.Duration
	Sync        time.Duration
	PreCompress time.Duration
	Tool        time.Duration
}

// DefaultTimeouts are the timeouts used when none are configured. Prefetch
// runs on every turn before the first model call, so its bound is short.
var DefaultTimeouts = Timeouts{
	Snapshot:    3 * time.Second,
	Prefetch:    1500 * time.Millisecond,
	Sync:        5 * time.Second,
	PreCompress: 10 * time.Second,
	Tool:        15 * time.Second,
}

func (t Timeouts) of(op string) time.Duration {
	switch op {
	case OpSnapshot:
		return t.Snapshot
	case OpPrefetch:
		return t.Prefetch
	case OpSync:
		return t.Sync
	case OpPreCompress:
		return t.PreCompress
	case OpTool:
		return t.Tool
	}
	return 0
}

// Failure is a provider operation that failed or ran out of time. The
// manager has already logged and counted it; the loop reports it as a
// warning event. It never fails the turn.
type Failure struct {
	Provider  string
	Operation string
	Err       error
	Timeout   bool
}

func (f Failure) Error() string {
	return fmt.Sprintf("external memory provider %q failed in %s: %v", f.Provider, f.Operation, f.Err)
}

func (f Failure) Unwrap() error { return f.Err }

// ProviderStats counts one provider operation since the process started.
type ProviderStats struct {
	Provider  string `json:"provider"`
	Operation string `json:"operation"`
	Calls     int64  `json:"calls"`
	Failures  int64  `json:"failures"`
	Timeouts  int64  `json:"timeouts"`
	LastError string `json:"last_error,omitempty"`
}

// SnapshotFreeze is a snapshot to freeze for its session: the loop stores
// it in the turn's final transaction (TurnEnd.Freeze).
type SnapshotFreeze = store.MemorySnapshot

// ProjectResolver returns the multi-project provider of one project.
type ProjectResolver func(name string) (Provider, error)

// ManagerOptions configure an ExternalMemoryManager.
type ManagerOptions struct {
	// DB stores frozen snapshots, failure counters and recorded writes; nil
	// keeps snapshots in memory only and counters in memory only.
	DB  *store.DB
	Log *slog.Logger
	Now func() time.Time
	// Defaults is the selection of a session that asks for none.
	Defaults []string
	// Timeouts bound the operations; ProviderTimeouts override them per
	// provider name (non-zero fields only).
	Timeouts         Timeouts
	ProviderTimeouts map[string]Timeouts
	// Builtin is the builtin provider, or nil.
	Builtin Provider
	// Projects resolves project names (multi-project file memory), or nil.
	Projects ProjectResolver
	// Retrieval is the one active external-query provider, or nil.
	Retrieval Provider
	// Extra providers are routed by their names, like the ones above.
	Extra []Provider
	// Policy decides memory writes; nil means DefaultWritePolicy.
	Policy WritePolicy
}

// ExternalMemoryManager routes external-memory operations to the providers
// a session enabled: the static snapshot (frozen per session), prefetch,
// turn sync, pre-compress salvage and the memory tools. Every operation on
// every provider has a timeout; a provider that fails or is slow is logged,
// counted and reported back as a Failure, and the other providers' results
// are used as they are: there is no silent fallback, and no failure fails
// the turn.
type ExternalMemoryManager struct {
	opts ManagerOptions

	mu        sync.Mutex
	snapshots boundedCache[string]   // session id → frozen snapshot
	enabled   boundedCache[[]string] // session id → selection in force

	statsMu sync.Mutex
	stats   map[[2]string]*opStats
}

type opStats struct {
	calls, failures, timeouts atomic.Int64
	lastError                 atomic.Value // string
}

// NewExternalMemoryManager returns a manager over the given providers.
func NewExternalMemoryManager(opts ManagerOptions) *ExternalMemoryManager {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Policy == nil {
		opts.Policy = DefaultWritePolicy{}
	}
	return &ExternalMemoryManager{
		opts:      opts,
		snapshots: newBoundedCache[string](4096),
		enabled:   newBoundedCache[[]string](4096),
		stats:     make(map[[2]string]*opStats),
	}
}

// Defaults returns the selection of a session that asks for none.
func (m *ExternalMemoryManager) Defaults() []string {
	return slices.Clone(m.opts.Defaults)
}

// DB is the store the manager records into, or nil.
func (m *ExternalMemoryManager) DB() *store.DB { return m.opts.DB }

var projectName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// ProjectName returns the project a selection entry names, without the
// "project:" prefix, and whether the entry names a project at all.
func ProjectName(entry string) (string, bool) {
	name := strings.TrimPrefix(entry, ProjectPrefix)
	if name == BuiltinProvider || slices.Contains(RetrievalProviders, name) || !projectName.MatchString(name) ||
		strings.Contains(name, "..") {
		return "", false
	}
	return name, true
}

// routed is one provider of a session's selection.
type routed struct {
	name string // as the failure, the counters and the fence name it
	p    Provider
}

// route resolves a selection to its providers, in the selection's order and
// without duplicates. Names that resolve to nothing are failures.
func (m *ExternalMemoryManager) route(enabled []string) ([]routed, []Failure) {
	var out []routed
	var fails []Failure
	seen := make(map[string]bool)
	for _, entry := range enabled {
		entry = strings.TrimSpace(entry)
		if entry == "" || seen[entry] {
			continue
		}
		seen[entry] = true
		p, err := m.resolve(entry)
		if err != nil {
			fails = append(fails, m.fail(entry, "route", err, false, ""))
			continue
		}
		out = append(out, routed{name: entry, p: p})
	}
	return out, fails
}

func (m *ExternalMemoryManager) resolve(entry string) (Provider, error) {
	if entry == BuiltinProvider {
		if m.opts.Builtin == nil {
			return nil, errors.New("the builtin provider is not configured")
		}
		return m.opts.Builtin, nil
	}
	for _, p := range m.opts.Extra {
		if p.Name() == entry {
			return p, nil
		}
	}
	if r := m.opts.Retrieval; r != nil && r.Name() == entry {
		return r, nil
	}
	if slices.Contains(RetrievalProviders, entry) {
		active := "none"
		if m.opts.Retrieval != nil {
			active = m.opts.Retrieval.Name()
		}
		return nil, fmt.Errorf("%s is not the active retrieval provider (external_memory.retrieval.provider is %s)", entry, active)
	}
	name, ok := ProjectName(entry)
	if !ok {
		return nil, fmt.Errorf("%q is not a provider or a valid project name (letters, digits, _ . -)", entry)
	}
	if m.opts.Projects == nil {
		return nil, errors.New("multi-project memory is not configured")
	}
	return m.opts.Projects(name)
}

// call runs fn for one provider operation with its timeout. fn runs in its
// own goroutine, so a provider that ignores its context still cannot hold up
// the turn past the timeout. A cancelled turn is not a provider failure.
func (m *ExternalMemoryManager) call(ctx context.Context, sessionID, provider, op string, fn func(ctx context.Context) error) *Failure {
	st := m.stat(provider, op)
	st.calls.Add(1)
	d := m.timeout(provider, op)
	cctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				done <- fmt.Errorf("panic: %v", v)
			}
		}()
		done <- fn(cctx)
	}()
	var err error
	select {
	case err = <-done:
	case <-cctx.Done():
		err = cctx.Err()
	}
	if err == nil {
		return nil
	}
	if ctx.Err() != nil { // the turn itself was cancelled
		return nil
	}
	timeout := errors.Is(err, context.DeadlineExceeded) && cctx.Err() != nil
	if timeout {
		err = fmt.Errorf("timed out after %s", d)
	}
	f := m.fail(provider, op, err, timeout, sessionID)
	return &f
}

// fail logs and counts one failure and returns it.
func (m *ExternalMemoryManager) fail(provider, op string, err error, timeout bool, sessionID string) Failure {
	f := Failure{Provider: provider, Operation: op, Err: err, Timeout: timeout}
	st := m.stat(provider, op)
	st.failures.Add(1)
	if timeout {
		st.timeouts.Add(1)
	}
	st.lastError.Store(err.Error())
	m.opts.Log.Warn("external memory provider failed", "provider", provider, "operation", op,
		"timeout", timeout, "error", err, "session_id", sessionID)
	if db := m.opts.DB; db != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if cerr := db.CountMemoryFailure(ctx, provider, op, timeout, err.Error()); cerr != nil {
			m.opts.Log.Warn("external memory failure not counted", "provider", provider, "error", cerr)
		}
	}
	return f
}

func (m *ExternalMemoryManager) timeout(provider, op string) time.Duration {
	if t, ok := m.opts.ProviderTimeouts[provider]; ok {
		if d := t.of(op); d > 0 {
			return d
		}
	}
	if d := m.opts.Timeouts.of(op); d > 0 {
		return d
	}
	return DefaultTimeouts.of(op)
}

// result is one provider's answer to a fan-out.
type result struct {
	name string
	text string
	fail *Failure
}

// fanOut runs op on every routed provider that accepts it, in parallel, and
// returns the answers in selection order.
func (m *ExternalMemoryManager) fanOut(ctx context.Context, sessionID string, rs []routed, op string,
	accept func(Provider) (func(ctx context.Context) (string, error), bool)) []result {
	out := make([]result, len(rs))
	var wg sync.WaitGroup
	for i, r := range rs {
		fn, ok := accept(r.p)
		if !ok {
			continue
		}
		out[i].name = r.name
		wg.Add(1)
		go func() {
			defer wg.Done()
			var text string
			out[i].fail = m.call(ctx, sessionID, r.name, op, func(ctx context.Context) error {
				var err error
				text, err = fn(ctx)
				return err
			})
			if out[i].fail == nil {
				out[i].text = strings.TrimSpace(text)
			}
		}()
	}
	wg.Wait()
	return out
}

// Snapshot returns the session's static snapshot of external memory for the
// system message: the blocks of the enabled providers that have one, in
// selection order. The first snapshot taken without a failure is frozen for
// the session, and every later turn gets it byte for byte, so the system
// message stays byte-identical and provider prompt caches keep working. A
// snapshot taken with a failure is used for its turn only, and the next
// turn tries again.
//
// Freezing is in memory at once and in the store (so the snapshot survives
// restarts and is shared between processes) when the caller stores the
// returned freeze record, which is non-nil for a snapshot just taken: the
// loop stores it in the turn's final transaction (TurnEnd.Freeze).
func (m *ExternalMemoryManager) Snapshot(ctx context.Context, sessionID string, enabled []string) (string, *SnapshotFreeze, []Failure) {
	m.mu.Lock()
	m.enabled.put(sessionID, slices.Clone(enabled))
	s, ok := m.snapshots.get(sessionID)
	m.mu.Unlock()
	if ok {
		return s, nil, nil
	}
	if db := m.opts.DB; db != nil {
		if frozen, err := db.GetMemorySnapshot(ctx, sessionID); err != nil {
			m.opts.Log.Warn("frozen memory snapshot not read", "session_id", sessionID, "error", err)
		} else if frozen != nil {
			m.remember(sessionID, frozen.Snapshot)
			return frozen.Snapshot, nil, nil
		}
	}
	rs, fails := m.route(enabled)
	results := m.fanOut(ctx, sessionID, rs, OpSnapshot, func(p Provider) (func(context.Context) (string, error), bool) {
		s, ok := p.(Snapshotter)
		if !ok {
			return nil, false
		}
		return s.SystemSnapshot, true
	})
	var blocks []string
	for _, r := range results {
		if r.fail != nil {
			fails = append(fails, *r.fail)
		} else if r.text != "" {
			blocks = append(blocks, r.text)
		}
	}
	snapshot := strings.Join(blocks, "\n\n")
	if len(fails) > 0 {
		return snapshot, nil, fails
	}
	m.remember(sessionID, snapshot)
	return snapshot, &SnapshotFreeze{SessionID: sessionID, Enabled: slices.Clone(enabled), Snapshot: snapshot}, nil
}

func (m *ExternalMemoryManager) remember(sessionID, snapshot string) {
	m.mu.Lock()
	m.snapshots.put(sessionID, snapshot)
	m.mu.Unlock()
}

// Forget drops what the manager caches for a session (after the session
// was deleted).
func (m *ExternalMemoryManager) Forget(sessionID string) {
	m.mu.Lock()
	m.snapshots.del(sessionID)
	m.enabled.del(sessionID)
	m.mu.Unlock()
}

// PrefetchAll asks every enabled provider for memory relevant to query and
// returns the answers, each under its provider's name, for the
// <memory-context> fence of this turn. Empty answers are left out.
func (m *ExternalMemoryManager) PrefetchAll(ctx context.Context, sessionID string, enabled []string, query string) (string, []Failure) {
	if strings.TrimSpace(query) == "" {
		return "", nil
	}
	rs, fails := m.route(enabled)
	results := m.fanOut(ctx, sessionID, rs, OpPrefetch, func(p Provider) (func(context.Context) (string, error), bool) {
		pf, ok := p.(Prefetcher)
		if !ok {
			return nil, false
		}
		return func(ctx context.Context) (string, error) {
			return pf.Prefetch(ctx, PrefetchQuery{SessionID: sessionID, Query: query})
		}, true
	})
	return joinSections(results, &fails), fails
}

// SyncAll hands the completed turn to every enabled provider (sync_turn),
// after the write policy allowed each provider's sync.
func (m *ExternalMemoryManager) SyncAll(ctx context.Context, enabled []string, t SyncTurn) []Failure {
	rs, fails := m.route(enabled)
	var allowed []routed
	for _, r := range rs {
		if _, ok := r.p.(TurnSyncer); !ok {
			continue
		}
		ok, reasons, err := m.opts.Policy.DecideWrite(ctx, MemoryWriteInput{
			Operation: "sync", Provider: policyProvider(r.name), Target: "", AgentContext: t.AgentContext,
			SessionID: t.SessionID, Source: t.Source, Time: t.Time,
		})
		if err != nil {
			fails = append(fails, m.fail(r.name, OpSync, fmt.Errorf("write policy failed: %w", err), false, t.SessionID))
			continue
		}
		if !ok {
			m.opts.Log.Debug("sync_turn not allowed", "provider", r.name, "session_id", t.SessionID, "reasons", reasons)
			continue
		}
		allowed = append(allowed, r)
	}
	results := m.fanOut(ctx, t.SessionID, allowed, OpSync, func(p Provider) (func(context.Context) (string, error), bool) {
		return func(ctx context.Context) (string, error) { return "", p.(TurnSyncer).SyncTurn(ctx, t) }, true
	})
	for _, r := range results {
		if r.fail != nil {
			fails = append(fails, *r.fail)
		}
	}
	return fails
}

// PreCompressAll asks every enabled provider what to salvage from msgs
// before they are compressed away, and returns the answers under their
// providers' names.
func (m *ExternalMemoryManager) PreCompressAll(ctx context.Context, sessionID string, enabled []string, msgs []llm.Message) (string, []Failure) {
	rs, fails := m.route(enabled)
	results := m.fanOut(ctx, sessionID, rs, OpPreCompress, func(p Provider) (func(context.Context) (string, error), bool) {
		pc, ok := p.(PreCompressor)
		if !ok {
			return nil, false
		}
		return func(ctx context.Context) (string, error) {
			return pc.OnPreCompress(ctx, PreCompress{SessionID: sessionID, Messages: msgs})
		}, true
	})
	return joinSections(results, &fails), fails
}

func joinSections(results []result, fails *[]Failure) string {
	var parts []string
	for _, r := range results {
		switch {
		case r.fail != nil:
			*fails = append(*fails, *r.fail)
		case r.text != "":
			parts = append(parts, "["+r.name+"]\n"+r.text)
		}
	}
	return strings.Join(parts, "\n\n")
}

// policyProvider is the provider name a write-policy input uses: projects
// carry the "project:" prefix.
func policyProvider(entry string) string {
	if entry == BuiltinProvider || slices.Contains(RetrievalProviders, entry) {
		return entry
	}
	if name, ok := ProjectName(entry); ok {
		return ProjectPrefix + name
	}
	return entry
}
