// Package wasm owns the Plugin domain: WebAssembly plugin tools run under
// wazero — their manifest, the ABI between host and module (README.md), the
// nagent host module, the limits of a call, and loading plugins from a
// directory while the runtime runs.
package wasm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/store"
)

// Store is what plugins keep in the database: the per-plugin key-value
// store, the audit trail of host calls and the state of each plugin.
// *store.DB implements it.
type Store interface {
	PluginKVGet(ctx context.Context, plugin, key string) ([]byte, bool, error)
	PluginKVSet(ctx context.Context, plugin, key string, value []byte) error
	PluginKVDelete(ctx context.Context, plugin, key string) error
	SavePluginHostCalls(ctx context.Context, calls []store.PluginHostCall) error
	SavePluginStates(ctx context.Context, states []store.PluginState) error
}

var _ Store = (*store.DB)(nil)

// Slot is where the host publishes the tools of its plugins.
// *tools.ToolService implements it.
type Slot interface {
	SetSlot(source tools.SourceType, defs []tools.ToolDefinition, exec tools.Executor) error
	Lookup(name string) (tools.ToolDefinition, bool)
}

// Settings are the values N-Agent's configuration gives one plugin.
type Settings struct {
	// Config is validated against the manifest's config schema.
	Config map[string]any
	// Secrets maps a declared secret's name to its value.
	Secrets map[string]string
}

// Interrupt is how a call that runs past its time is stopped.
type Interrupt string

// Interrupt mechanisms.
const (
	// InterruptLoopCheck rewrites the module to count loop iterations and
	// leave to Go every 10,000 of them (see binary.go): there a call past
	// its deadline is stopped, and Go's scheduler can preempt the plugin (a
	// GC stop-the-world waits for every goroutine, and native wasm code
	// cannot be preempted). It is the default; a module the rewriter does
	// not understand falls back to InterruptCloseOnContextDone.
	InterruptLoopCheck Interrupt = "loop_check"
	// InterruptCloseOnContextDone uses wazero's WithCloseOnContextDone,
	// which leaves to Go at every loop iteration: 2-34x slower on
	// loop-heavy code (BenchmarkInterrupt).
	InterruptCloseOnContextDone Interrupt = "close_on_context_done"
	// InterruptNone never stops a running call. It exists to measure what
	// the other mechanisms cost (BenchmarkInterrupt); do not use it.
	InterruptNone Interrupt = "none"
)

// Options configure a Host. Zero fields take their defaults.
type Options struct {
	// Dir holds one directory per plugin ($NAGENT_HOME/plugins).
	Dir string
	// CacheDir keeps wazero's compiled code between runs; "" keeps it in
	// memory only.
	CacheDir string
	// Store backs nagent.kv_*, audits host calls and records plugin states;
	// nil leaves the key-value store unavailable and audits to the log only.
	Store Store
	// Policy is asked about every nagent.http_request (see README.md); nil
	// allows what allowed_hosts allows.
	Policy tools.Policy
	// Slot receives the tool definitions after every load; may be nil.
	Slot Slot
	// Settings holds each plugin's configuration, by plugin name.
	Settings map[string]Settings
	// Getenv reads the host environment for permissions.env and for secrets
	// given as NAGENT_PLUGIN_<PLUGIN>_<SECRET> (default os.Getenv).
	Getenv func(string) string
	// HTTPClient makes nagent.http_request calls (default: a client that
	// re-checks allowed_hosts on every redirect).
	HTTPClient *http.Client
	// Interrupt selects the timeout mechanism (default InterruptLoopCheck).
	Interrupt Interrupt
	Log       *slog.Logger
	Now       func() time.Time
}

// Status describes one plugin directory after a load.
type Status struct {
	Name        string   `json:"name"`
	Version     string   `json:"version"`
	Description string   `json:"description"`
	Dir         string   `json:"dir"`
	Tools       []string `json:"tools"`
	// State is StateReady, StateUnusable or StateError.
	State string `json:"state"`
	// Error says why a plugin is unusable or did not load.
	Error string `json:"error,omitempty"`
	// Interrupt is the timeout mechanism in use.
	Interrupt Interrupt `json:"interrupt,omitempty"`
	Digest    string    `json:"digest,omitempty"`
}

// Plugin states.
const (
	StateReady    = "ready"
	StateUnusable = "unusable"
	StateError    = "error"
)

// Host loads plugins from a directory and runs their tools. It is a
// tools.Executor for every tool it publishes.
//
// All methods are safe for concurrent use.
type Host struct {
	opts  Options
	cache wazero.CompilationCache

	loadMu sync.Mutex // serialises Load

	mu       sync.RWMutex
	plugins  map[string]*plugin // by plugin name; ready plugins only
	byTool   map[string]*plugin
	statuses []Status
	closed   bool
	audit    *auditor // nil without a Store
	// notReady remembers directories that did not become ready, by
	// directory, so an unchanged one is not compiled and checked again.
	notReady map[string]Status
}

var _ tools.Executor = (*Host)(nil)

// NewHost returns a host with no plugins loaded; call Load.
func NewHost(opts Options) (*Host, error) {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	switch opts.Interrupt {
	case "":
		opts.Interrupt = InterruptLoopCheck
	case InterruptLoopCheck, InterruptCloseOnContextDone, InterruptNone:
	default:
		return nil, fmt.Errorf("wasm.NewHost: unknown interrupt mechanism %q", opts.Interrupt)
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	var cache wazero.CompilationCache
	if opts.CacheDir != "" {
		var err error
		if cache, err = wazero.NewCompilationCacheWithDir(opts.CacheDir); err != nil {
			return nil, fmt.Errorf("wasm.NewHost: compilation cache %s: %w", opts.CacheDir, err)
		}
	} else {
		cache = wazero.NewCompilationCache()
	}
	h := &Host{opts: opts, cache: cache, plugins: map[string]*plugin{}, byTool: map[string]*plugin{}, notReady: map[string]Status{}}
	if opts.Store != nil {
		h.audit = newAuditor(h)
	}
	return h, nil
}

// Dir is the plugins directory.
func (h *Host) Dir() string { return h.opts.Dir }

// Load reads every plugin directory under Dir, compiles what changed since
// the last load, and publishes the tools of the ready plugins to the slot in
// one step. A plugin that fails to load is reported in its Status and keeps
// none of its tools; the others are unaffected. Calls running on a replaced
// or removed plugin finish on the old module.
func (h *Host) Load(ctx context.Context) ([]Status, error) {
	h.loadMu.Lock()
	defer h.loadMu.Unlock()

	entries, err := os.ReadDir(h.opts.Dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("wasm.Load: %w", err)
	}
	h.mu.RLock()
	old := h.plugins
	h.mu.RUnlock()

	next := map[string]*plugin{}
	var statuses []Status
	seen := map[string]bool{}
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		dir := filepath.Join(h.opts.Dir, e.Name())
		seen[dir] = true
		st, p := h.loadOne(ctx, dir, old, true)
		if p != nil && next[p.manifest.Name] != nil {
			st.State, st.Error = StateError, fmt.Sprintf("another directory already holds plugin %s", p.manifest.Name)
			p = h.discard(ctx, p, old)
		}
		if p != nil {
			next[p.manifest.Name] = p
		}
		statuses = append(statuses, st)
	}

	for dir := range h.notReady {
		if !seen[dir] {
			delete(h.notReady, dir)
		}
	}

	// Tool names must be unique across plugins and must not shadow a tool
	// of another source; in a clash the plugin later by name loses.
	byTool := map[string]*plugin{}
	sort.Slice(statuses, func(i, j int) bool { return statuses[i].Name < statuses[j].Name })
	for i := range statuses {
		st := &statuses[i]
		p := next[st.Name]
		if p == nil || p.dir != st.Dir {
			continue
		}
		if clash := h.toolClash(p, byTool); clash != "" {
			st.State, st.Error = StateError, clash
			delete(next, st.Name)
			h.discard(ctx, p, old)
			continue
		}
		for _, t := range p.manifest.Tools {
			byTool[t.Name] = p
		}
	}

	var defs []tools.ToolDefinition
	for _, st := range statuses {
		if p := next[st.Name]; p != nil && p.dir == st.Dir && st.State == StateReady {
			defs = append(defs, p.defs...)
		}
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		for _, p := range next {
			h.discard(ctx, p, old)
		}
		return nil, errors.New("wasm.Load: host is closed")
	}
	h.plugins, h.byTool, h.statuses = next, byTool, statuses
	h.mu.Unlock()

	var errs []error
	if h.opts.Slot != nil {
		if err := h.opts.Slot.SetSlot(tools.SourcePlugin, defs, h); err != nil {
			errs = append(errs, fmt.Errorf("wasm.Load: publish tools: %w", err))
		}
	}
	for name, p := range old {
		if next[name] != p {
			p.retire()
		}
	}
	if h.opts.Store != nil {
		if err := h.opts.Store.SavePluginStates(ctx, storeStates(statuses)); err != nil {
			h.opts.Log.WarnContext(ctx, "cannot record plugin states", "err", err)
		}
	}
	for _, st := range statuses {
		if st.State != StateReady {
			h.opts.Log.WarnContext(ctx, "plugin not available", "plugin", st.Name, "dir", st.Dir, "state", st.State, "error", st.Error)
		}
	}
	return statuses, errors.Join(errs...)
}

// discard closes a plugin that was built by this load but is not kept; one
// carried over from the previous load is left to retire.
func (h *Host) discard(ctx context.Context, p *plugin, old map[string]*plugin) *plugin {
	if old[p.manifest.Name] != p {
		p.close(ctx)
	}
	return nil
}

// toolClash says why p's tools cannot be published, or "".
func (h *Host) toolClash(p *plugin, byTool map[string]*plugin) string {
	for _, t := range p.manifest.Tools {
		if other := byTool[t.Name]; other != nil {
			return fmt.Sprintf("tool %s is already provided by plugin %s", t.Name, other.manifest.Name)
		}
		if h.opts.Slot != nil {
			if def, ok := h.opts.Slot.Lookup(t.Name); ok && def.SourceType != tools.SourcePlugin {
				return fmt.Sprintf("tool %s is already a %s tool", t.Name, def.SourceType)
			}
		}
	}
	return ""
}

// Inspect loads the plugin in dir, without publishing it, and reports its
// status: what Load would make of it. `nagent plugin install` uses it to
// refuse a plugin that does not load.
func (h *Host) Inspect(ctx context.Context, dir string) Status {
	h.loadMu.Lock()
	defer h.loadMu.Unlock()
	st, p := h.loadOne(ctx, dir, nil, false)
	if p != nil {
		p.close(ctx)
	}
	return st
}

// loadOne loads one plugin directory, reusing the previous load's plugin
// when nothing changed. With remember, a directory that does not become
// ready is remembered, so that it is not compiled again while unchanged.
// The caller holds loadMu.
func (h *Host) loadOne(ctx context.Context, dir string, old map[string]*plugin, remember bool) (Status, *plugin) {
	st := Status{Name: filepath.Base(dir), Dir: dir, State: StateError}
	m, err := ReadManifest(dir)
	if err != nil {
		st.Error = err.Error()
		return st, nil
	}
	st.Name, st.Version, st.Description = m.Name, m.Version, m.Description
	for _, t := range m.Tools {
		st.Tools = append(st.Tools, t.Name)
	}
	bin, err := os.ReadFile(filepath.Join(dir, m.Module))
	if err != nil {
		st.Error = fmt.Sprintf("module: %v", err)
		return st, nil
	}
	st.Digest = digest(m, bin)
	if p := old[m.Name]; p != nil && p.digest == st.Digest && p.dir == dir {
		st.State, st.Interrupt = StateReady, p.interrupt
		return st, p
	}
	if prev, ok := h.notReady[dir]; ok && prev.Digest == st.Digest {
		return prev, nil
	}
	p, err := h.compile(ctx, dir, m, bin, st.Digest)
	switch {
	case err != nil:
		st.Error = err.Error()
	case p.reason != "":
		st.State, st.Error, st.Interrupt = StateUnusable, p.reason, p.interrupt
		p.close(ctx)
	default:
		st.State, st.Interrupt = StateReady, p.interrupt
		delete(h.notReady, dir)
		return st, p
	}
	if remember {
		h.notReady[dir] = st
	}
	return st, nil
}

// Statuses returns the status of every plugin directory at the last load.
func (h *Host) Statuses() []Status {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return slices.Clone(h.statuses)
}

// Definitions returns the tool definitions of the ready plugins.
func (h *Host) Definitions() []tools.ToolDefinition {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var defs []tools.ToolDefinition
	for _, st := range h.statuses {
		if p := h.plugins[st.Name]; p != nil && st.State == StateReady {
			defs = append(defs, p.defs...)
		}
	}
	return defs
}

// Execute runs call on the plugin that provides call.Name, in a fresh
// instance. Arguments are expected to be validated already (ToolService
// does). Every failure of the plugin is an error written for the model.
func (h *Host) Execute(ctx context.Context, call tools.ToolCallRequest, ec tools.ExecutionContext) (string, error) {
	h.mu.RLock()
	p := h.byTool[call.Name]
	if p != nil {
		p.calls.Add(1)
	}
	h.mu.RUnlock()
	if p == nil {
		return "", fmt.Errorf("no plugin provides tool %s (it may have just been removed)", call.Name)
	}
	defer p.calls.Done()
	return p.callTool(ctx, call, ec)
}

// Close stops every plugin after its running calls and closes the
// compilation cache. Later loads fail.
func (h *Host) Close(ctx context.Context) error {
	h.loadMu.Lock()
	defer h.loadMu.Unlock()
	h.mu.Lock()
	plugins := h.plugins
	h.plugins, h.byTool, h.closed = map[string]*plugin{}, map[string]*plugin{}, true
	h.mu.Unlock()
	for _, p := range plugins {
		p.calls.Wait()
		p.close(ctx)
	}
	if h.audit != nil {
		h.audit.close()
	}
	return h.cache.Close(ctx)
}

// SyncAudit waits until the audit records of the calls that ended so far
// are in the store. Records are written in the background, batched.
func (h *Host) SyncAudit(ctx context.Context) {
	if h.audit != nil {
		h.audit.sync(ctx)
	}
}

func storeStates(statuses []Status) []store.PluginState {
	out := make([]store.PluginState, 0, len(statuses))
	seen := map[string]bool{}
	for _, st := range statuses {
		if seen[st.Name] {
			continue
		}
		seen[st.Name] = true
		out = append(out, store.PluginState{
			Name: st.Name, Version: st.Version, Digest: st.Digest, Status: st.State, Error: st.Error, Tools: st.Tools,
		})
	}
	return out
}
