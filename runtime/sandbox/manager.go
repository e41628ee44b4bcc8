package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/store"
)

// State is where a sandbox is in its lifecycle:
// active → executing → active … → releasing → released.
type State string

// Sandbox states.
const (
	StateActive    State = "active"
	StateExecuting State = "executing"
	StateReleasing State = "releasing"
	StateReleased  State = "released"
)

// Release reasons, as recorded in released_sandboxes.
const (
	ReasonIdle           = "idle_timeout"
	ReasonSessionDeleted = "session_deleted"
	ReasonManual         = "manual"
	ReasonShutdown       = "shutdown"
	// ReasonStaleOwner: the process holding the sandbox is gone.
	ReasonStaleOwner = "stale_owner"
)

// Defaults for Options.
const (
	DefaultIdleTimeout  = 10 * time.Minute
	DefaultMaxToolCalls = 20
	// historyResultBytes caps the result kept in sandbox_history.
	historyResultBytes = 4 << 10
)

// DefaultAllowedTools are the tools sandboxed code may call back when the
// configuration names none: read-only tools with no side effects.
var DefaultAllowedTools = []string{tools.CurrentTimeToolName, "search_knowledge", "skill_view", "skills_list"}

// Store is the persistence the Manager needs; *store.DB implements it. The
// Manager works without one (nil): nothing is recorded then.
type Store interface {
	PutLiveSandbox(ctx context.Context, s store.LiveSandbox) error
	DeleteLiveSandbox(ctx context.Context, sessionID, owner string) error
	ListLiveSandboxes(ctx context.Context) ([]*store.LiveSandbox, error)
	GetLiveSandbox(ctx context.Context, sessionID string) (*store.LiveSandbox, error)
	SaveSandboxExecution(ctx context.Context, e store.SandboxExecution) error
	ListSandboxExecutions(ctx context.Context, sessionID string, limit int) ([]*store.SandboxExecution, error)
	SaveReleasedSandbox(ctx context.Context, r store.ReleasedSandbox) error
	SessionExists(ctx context.Context, id string) (bool, error)
}

// Options configure a Manager. Backend and Dir are required.
type Options struct {
	Backend Backend
	// Tools runs the callbacks of nagent_tools; nil refuses every callback.
	Tools ToolDispatcher
	Store Store
	// Dir holds one directory per session ($NAGENT_HOME/sandboxes).
	Dir          string
	Limits       Limits
	IdleTimeout  time.Duration // default DefaultIdleTimeout
	ReapInterval time.Duration // default 2s (or IdleTimeout/4 when shorter), at least 10ms
	Timeout      time.Duration // default wall-clock limit of one execution (DefaultTimeout)
	MaxToolCalls int           // default DefaultMaxToolCalls
	AllowedTools []string      // default DefaultAllowedTools
	// Owner names this process in the live table (default host:pid).
	Owner string
	Now   func() time.Time
	Log   *slog.Logger
}

// Info describes one sandbox.
type Info struct {
	SessionID  string    `json:"session_id"`
	Backend    string    `json:"backend"`
	State      State     `json:"state"`
	Executions int       `json:"executions"`
	Workspace  string    `json:"workspace"`
	CreatedAt  time.Time `json:"created_at"`
	LastUsedAt time.Time `json:"last_used_at"`
}

// Event is one state change of a sandbox.
type Event struct {
	Type      string    `json:"type"` // always "sandbox.state"
	SessionID string    `json:"session_id"`
	Backend   string    `json:"backend"`
	From      State     `json:"from,omitempty"`
	To        State     `json:"to"`
	Reason    string    `json:"reason,omitempty"`
	Time      time.Time `json:"time"`
}

// ExecuteRequest is one execution asked of the Manager.
type ExecuteRequest struct {
	SessionID string
	Code      string
	// AllowedTools overrides Options.AllowedTools when non-nil.
	AllowedTools []string
	// MaxToolCalls overrides Options.MaxToolCalls when > 0.
	MaxToolCalls int
	// Exec is the execution context callbacks run under (its mode becomes
	// "sandbox").
	Exec tools.ExecutionContext
	// Timeout overrides Options.Timeout when > 0.
	Timeout time.Duration
}

// Result is what one execution did.
type Result struct {
	SessionID   string       `json:"session_id"`
	Seq         int          `json:"seq"`
	Backend     string       `json:"backend"`
	Status      tools.Status `json:"status"` // success when the code exited 0
	ExitReason  ExitReason   `json:"exit_reason"`
	ExitCode    int          `json:"exit_code"`
	Stdout      string       `json:"stdout"`
	Stderr      string       `json:"stderr"`
	DurationMS  int64        `json:"duration_ms"`
	CalledTools []CalledTool `json:"called_tools"`
	// Reused is true when the session's sandbox existed before this call.
	Reused bool `json:"reused"`
	// Warning says the code ran without isolation, when it did.
	Warning string `json:"warning,omitempty"`
}

// Manager owns the sandboxes of one process: one per session, created on
// first use, reused, and released on idle timeout, session deletion, a
// manual release (CLI, dashboard) or Close.
type Manager struct {
	opts    Options
	backend Backend
	module  string // host dir holding nagent_tools.py

	mu      sync.Mutex
	boxes   map[string]*box
	subs    map[int]func(Event)
	nextSub int
	closed  bool

	stopReap context.CancelFunc
	reapDone chan struct{}
}

// box is one session's sandbox.
type box struct {
	session   string
	dir       string
	workspace string
	env       Env
	created   time.Time

	// lock serialises executions of the session (one token).
	lock chan struct{}

	// Guarded by Manager.mu.
	state      State
	executions int
	lastUsed   time.Time
	seq        int
	cancelExec context.CancelCauseFunc
	sawSession bool
	released   chan struct{} // closed when the release finished
}

// NewManager checks the options, writes the nagent_tools module and starts
// the idle reaper.
func NewManager(opts Options) (*Manager, error) {
	if opts.Backend == nil {
		return nil, errors.New("sandbox.NewManager: no backend")
	}
	if opts.Dir == "" {
		return nil, errors.New("sandbox.NewManager: no directory")
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.ReapInterval <= 0 {
		opts.ReapInterval = max(min(opts.IdleTimeout/4, 2*time.Second), 10*time.Millisecond)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxToolCalls <= 0 {
		opts.MaxToolCalls = DefaultMaxToolCalls
	}
	if opts.AllowedTools == nil {
		opts.AllowedTools = DefaultAllowedTools
	}
	if slices.Contains(opts.AllowedTools, tools.ExecuteCodeTool) {
		return nil, errors.New("sandbox.NewManager: execute_code cannot be allowed from inside the sandbox; remove it from sandbox.allowed_tools")
	}
	opts.Limits = opts.Limits.WithDefaults()
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Owner == "" {
		host, _ := os.Hostname()
		opts.Owner = host + ":" + strconv.Itoa(os.Getpid())
	}
	module := filepath.Join(opts.Dir, ".module")
	if err := os.MkdirAll(module, 0o755); err != nil {
		return nil, fmt.Errorf("sandbox.NewManager: %w", err)
	}
	os.Chmod(opts.Dir, 0o700)
	if err := writeFileAtomic(filepath.Join(module, ModuleName+".py"), moduleSource); err != nil {
		return nil, fmt.Errorf("sandbox.NewManager: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{
		opts: opts, backend: opts.Backend, module: module,
		boxes: map[string]*box{}, subs: map[int]func(Event){},
		stopReap: cancel, reapDone: make(chan struct{}),
	}
	go m.reap(ctx)
	return m, nil
}

// Backend returns the backend the Manager runs on.
func (m *Manager) Backend() Backend { return m.backend }

// Unisolated reports whether code runs without namespace or container
// isolation.
func (m *Manager) Unisolated() bool { return m.backend.Name() == UnisolatedName }

// AllowedTools returns the default callback allowlist.
func (m *Manager) AllowedTools() []string { return slices.Clone(m.opts.AllowedTools) }

// Subscribe calls fn on every state change, in order, from the goroutine
// that made it and with the Manager's lock held: fn must return quickly
// (hand the event to a buffered channel, say) and must not call the
// Manager. The returned func cancels the subscription.
func (m *Manager) Subscribe(fn func(Event)) (cancel func()) {
	m.mu.Lock()
	id := m.nextSub
	m.nextSub++
	m.subs[id] = fn
	m.mu.Unlock()
	return func() {
		m.mu.Lock()
		delete(m.subs, id)
		m.mu.Unlock()
	}
}

// setState moves b to state and emits the event; mu is held.
func (m *Manager) setStateLocked(b *box, to State, reason string) {
	from := b.state
	b.state = to
	ev := Event{Type: "sandbox.state", SessionID: b.session, Backend: m.backend.Name(), From: from, To: to, Reason: reason, Time: m.opts.Now()}
	for _, fn := range m.subs {
		fn(ev)
	}
}

func (m *Manager) infoLocked(b *box) Info {
	return Info{SessionID: b.session, Backend: m.backend.Name(), State: b.state, Executions: b.executions,
		Workspace: b.workspace, CreatedAt: b.created, LastUsedAt: b.lastUsed}
}

// GetOrCreate returns the session's sandbox, creating it when there is
// none. A sandbox being released is waited for, then replaced.
func (m *Manager) GetOrCreate(ctx context.Context, sessionID string) (Info, error) {
	b, _, err := m.getOrCreate(ctx, sessionID)
	if err != nil {
		return Info{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.infoLocked(b), nil
}

func (m *Manager) getOrCreate(ctx context.Context, sessionID string) (*box, bool, error) {
	if sessionID == "" {
		return nil, false, errs.Errorf(errs.EINVALID, "sandbox: a session id is required")
	}
	for {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return nil, false, errs.Errorf(errs.EUNAVAILABLE, "sandbox: the sandbox manager is shut down")
		}
		b, ok := m.boxes[sessionID]
		if !ok {
			break
		}
		if b.state != StateReleasing {
			m.mu.Unlock()
			return b, true, nil
		}
		done := b.released
		m.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
	// Create under the lock: creation is rare, and one session must not get
	// two environments.
	defer m.mu.Unlock()
	b, err := m.create(ctx, sessionID)
	if err != nil {
		return nil, false, err
	}
	m.boxes[sessionID] = b
	m.setStateLocked(b, StateActive, "created")
	m.persistLocked(ctx, b)
	return b, false, nil
}

func (m *Manager) create(ctx context.Context, sessionID string) (*box, error) {
	if err := m.claim(ctx, sessionID); err != nil {
		return nil, err
	}
	dir := filepath.Join(m.opts.Dir, safeName(sessionID, 64))
	ws := filepath.Join(dir, "workspace")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "calls"), 0o755); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	env, err := m.backend.Open(ctx, EnvSpec{SessionID: sessionID, Workspace: ws, Limits: m.opts.Limits})
	if err != nil {
		return nil, fmt.Errorf("sandbox: open %s sandbox: %w", m.backend.Name(), err)
	}
	now := m.opts.Now()
	b := &box{session: sessionID, dir: dir, workspace: ws, env: env, created: now, lastUsed: now,
		lock: make(chan struct{}, 1), released: make(chan struct{}), seq: lastCallNumber(filepath.Join(dir, "calls"))}
	if m.opts.Store != nil {
		// The insert is the claim that counts: two processes that both
		// passed claim cannot both hold the row.
		err := m.opts.Store.PutLiveSandbox(ctx, store.LiveSandbox{SessionID: sessionID, Backend: m.backend.Name(),
			State: string(StateActive), Owner: m.opts.Owner, CreatedAt: now, LastUsedAt: now})
		if errs.Code(err) == errs.ECONFLICT {
			env.Close(context.WithoutCancel(ctx))
			return nil, errs.Errorf(errs.ECONFLICT, "session %s's sandbox is held by another nagent process; run the code through that process, or release it first: nagent sandbox release --session %s", sessionID, sessionID)
		}
		if ok, err := m.opts.Store.SessionExists(ctx, sessionID); err == nil && ok {
			b.sawSession = true
		}
		// Call numbers continue across sandboxes of one session.
		if last, err := m.opts.Store.ListSandboxExecutions(ctx, sessionID, 1); err == nil && len(last) == 1 {
			b.seq = max(b.seq, last[0].Seq)
		}
	}
	return b, nil
}

// claim keeps a session's sandbox 1:1 across processes: when another live
// process holds one (its live row), creating a second one is refused. A
// row left by a process that is gone is audited as released (stale_owner)
// and taken over.
func (m *Manager) claim(ctx context.Context, sessionID string) error {
	if m.opts.Store == nil {
		return nil
	}
	row, err := m.opts.Store.GetLiveSandbox(ctx, sessionID)
	if err != nil || row.Owner == m.opts.Owner {
		return nil // ENOTFOUND: nobody holds one
	}
	if OwnerAlive(row.Owner) {
		return errs.Errorf(errs.ECONFLICT, "session %s's sandbox is held by another nagent process (%s); run the code through that process, or release it first: nagent sandbox release --session %s", sessionID, row.Owner, sessionID)
	}
	return ReleaseStale(context.WithoutCancel(ctx), m.opts.Store, row, m.opts.Now())
}

// ReleaseStale audits the live row of a process that is gone as released
// (reason stale_owner) and deletes it. The process's local sandboxes died
// with it (bwrap runs with --die-with-parent).
func ReleaseStale(ctx context.Context, st Store, row *store.LiveSandbox, now time.Time) error {
	if err := st.SaveReleasedSandbox(ctx, store.ReleasedSandbox{
		SessionID: row.SessionID, Backend: row.Backend, Reason: ReasonStaleOwner, Detail: "owner " + row.Owner + " is gone",
		Executions: row.Executions, CreatedAt: row.CreatedAt, LastUsedAt: row.LastUsedAt, ReleasedAt: now,
	}); err != nil {
		return err
	}
	return st.DeleteLiveSandbox(ctx, row.SessionID, row.Owner)
}

// OwnerAlive reports whether the process named by an owner string
// ("host:pid") may still run: on this host, whether the pid exists; on
// another host, always true.
func OwnerAlive(owner string) bool {
	i := strings.LastIndexByte(owner, ':')
	if i < 0 {
		return true
	}
	host, _ := os.Hostname()
	pid, err := strconv.Atoi(owner[i+1:])
	if owner[:i] != host || err != nil || pid <= 0 {
		return true
	}
	return processExists(pid)
}

// Owner is how this Manager names its process in the live table.
func (m *Manager) Owner() string { return m.opts.Owner }

// persistLocked writes the live row of b; failures are logged only.
func (m *Manager) persistLocked(ctx context.Context, b *box) {
	if m.opts.Store == nil {
		return
	}
	st := b.state
	if st == StateReleased {
		return
	}
	err := m.opts.Store.PutLiveSandbox(context.WithoutCancel(ctx), store.LiveSandbox{
		SessionID: b.session, Backend: m.backend.Name(), State: string(st), Owner: m.opts.Owner,
		Executions: b.executions, CreatedAt: b.created, LastUsedAt: b.lastUsed,
	})
	if err != nil {
		m.opts.Log.Warn("sandbox: recording the live sandbox failed", "session_id", b.session, "err", err)
	}
}

// Execute runs code in the session's sandbox (creating it if needed),
// one execution per session at a time, and records the history entry. An
// error means the code could not be run at all; what the code did is in
// Result.
func (m *Manager) Execute(ctx context.Context, req ExecuteRequest) (Result, error) {
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = m.opts.Timeout
	}
	allowed := req.AllowedTools
	if allowed == nil {
		allowed = m.opts.AllowedTools
	}
	allowed = slices.DeleteFunc(slices.Clone(allowed), func(s string) bool { return s == tools.ExecuteCodeTool })
	maxCalls := req.MaxToolCalls
	if maxCalls <= 0 {
		maxCalls = m.opts.MaxToolCalls
	}

	var b *box
	var reused bool
	for {
		var err error
		b, reused, err = m.getOrCreate(ctx, req.SessionID)
		if err != nil {
			return Result{}, err
		}
		select {
		case b.lock <- struct{}{}:
		case <-ctx.Done():
			return Result{}, ctx.Err()
		}
		m.mu.Lock()
		if b.state == StateActive {
			break
		}
		// Released while we waited for the lock: take the next one.
		m.mu.Unlock()
		<-b.lock
	}
	ectx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	b.seq++
	seq := b.seq
	b.cancelExec = cancel
	m.setStateLocked(b, StateExecuting, "")
	m.persistLocked(ctx, b)
	m.mu.Unlock()
	defer func() { <-b.lock }()

	res, err := m.run(ectx, b, seq, req, allowed, maxCalls, timeout)
	res.Reused = reused

	m.mu.Lock()
	b.cancelExec = nil
	b.executions++
	b.lastUsed = m.opts.Now()
	if b.state == StateExecuting {
		m.setStateLocked(b, StateActive, "")
		m.persistLocked(ctx, b)
	}
	m.mu.Unlock()
	if err == nil {
		m.record(ctx, b, seq, req, allowed, res)
	}
	return res, err
}

// run stages the call and runs it on the backend.
func (m *Manager) run(ctx context.Context, b *box, seq int, req ExecuteRequest, allowed []string, maxCalls int, timeout time.Duration) (Result, error) {
	res := Result{SessionID: req.SessionID, Seq: seq, Backend: m.backend.Name()}
	if m.Unisolated() {
		res.Warning = UnisolatedWarning
	}
	scratch := filepath.Join(b.dir, "calls", strconv.Itoa(seq))
	if err := os.MkdirAll(scratch, 0o777); err != nil {
		return res, fmt.Errorf("sandbox: new call staging: %w", err)
	}
	os.Chmod(scratch, 0o777) // the sandbox user differs per backend; the parents keep others out
	sockParent, err := os.MkdirTemp("", "nagent-sbx-")
	if err != nil {
		return res, fmt.Errorf("sandbox: socket dir: %w", err)
	}
	defer os.RemoveAll(sockParent)
	sockDir := filepath.Join(sockParent, "s")
	if err := os.Mkdir(sockDir, 0o755); err != nil {
		return res, fmt.Errorf("sandbox: socket dir: %w", err)
	}
	d := m.opts.Tools
	if d == nil {
		d = refuseAll{}
	}
	srv, err := startCallbackServer(ctx, sockDir, d, req.Exec, allowed, maxCalls, "sandbox_"+strconv.Itoa(seq))
	if err != nil {
		return res, err
	}
	env := map[string]string{
		"PATH":                    "/usr/local/bin:/usr/bin:/bin",
		"HOME":                    ScratchPath,
		"TMPDIR":                  "/tmp",
		"LANG":                    "C.UTF-8",
		"PYTHONPATH":              ModuleDirPath,
		"PYTHONDONTWRITEBYTECODE": "1",
		"PYTHONUNBUFFERED":        "1",
		"NAGENT_TOOLS_SOCKET":     SocketDirPath + "/" + SocketName,
		"NAGENT_ALLOWED_TOOLS":    joinComma(allowed),
		"NAGENT_SANDBOX":          m.backend.Name(),
	}
	out, err := b.env.Exec(ctx, ExecRequest{
		Code: []byte(req.Code), Scratch: scratch, SocketDir: sockDir, ModuleDir: m.module, Env: env, Timeout: timeout,
	})
	res.CalledTools = srv.close()
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			err = fmt.Errorf("%w (%v)", err, cause)
		}
		return res, fmt.Errorf("sandbox: %s backend could not run the code: %w", m.backend.Name(), err)
	}
	res.ExitReason, res.ExitCode = out.Reason, out.ExitCode
	res.Stdout, res.Stderr = string(out.Stdout), string(out.Stderr)
	res.DurationMS = out.Duration.Milliseconds()
	res.Status = tools.StatusSuccess
	if out.Reason != ExitOK {
		res.Status = tools.StatusError
	}
	return res, nil
}

// record writes the history entry of one execution; failures are logged.
func (m *Manager) record(ctx context.Context, b *box, seq int, req ExecuteRequest, allowed []string, res Result) {
	if m.opts.Store == nil {
		return
	}
	sum := sha256.Sum256([]byte(req.Code))
	called, _ := marshalJSON(res.CalledTools)
	text := res.Stdout
	if res.Stderr != "" {
		text += "\n[stderr]\n" + res.Stderr
	}
	err := m.opts.Store.SaveSandboxExecution(context.WithoutCancel(ctx), store.SandboxExecution{
		SessionID: b.session, Seq: seq, Backend: m.backend.Name(), CodeSHA256: hex.EncodeToString(sum[:]),
		Status: string(res.Status), ExitReason: string(res.ExitReason), ExitCode: res.ExitCode,
		Result: truncateMiddle(text, historyResultBytes), AllowedTools: allowed, CalledTools: called,
		DurationMS: res.DurationMS, CreatedAt: m.opts.Now(),
	})
	if err != nil {
		m.opts.Log.Warn("sandbox: recording the execution failed", "session_id", b.session, "err", err)
	}
}

// History returns a session's executions, newest first ("" means every
// session).
func (m *Manager) History(ctx context.Context, sessionID string, limit int) ([]*store.SandboxExecution, error) {
	if m.opts.Store == nil {
		return nil, nil
	}
	return m.opts.Store.ListSandboxExecutions(ctx, sessionID, limit)
}

// List returns the sandboxes this process holds, most recently used first.
func (m *Manager) List() []Info {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Info, 0, len(m.boxes))
	for _, b := range m.boxes {
		out = append(out, m.infoLocked(b))
	}
	slices.SortFunc(out, func(a, b Info) int { return b.LastUsedAt.Compare(a.LastUsedAt) })
	return out
}

// Release releases the session's sandbox. A forced release kills a running
// execution at once; otherwise the release waits for it to finish (or ctx
// to end). ENOTFOUND when this process holds no sandbox for the session.
func (m *Manager) Release(ctx context.Context, sessionID string, force bool, reason string) error {
	if reason == "" {
		reason = ReasonManual
	}
	m.mu.Lock()
	b, ok := m.boxes[sessionID]
	if !ok {
		m.mu.Unlock()
		return errs.Errorf(errs.ENOTFOUND, "no sandbox for session %q in this process", sessionID)
	}
	if b.state == StateReleasing {
		done := b.released
		m.mu.Unlock()
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	m.setStateLocked(b, StateReleasing, reason)
	m.persistLocked(ctx, b)
	if force && b.cancelExec != nil {
		b.cancelExec(fmt.Errorf("sandbox force-released (%s)", reason))
	}
	m.mu.Unlock()

	if force {
		// Kill first, then wait for the execution to notice.
		b.env.Close(context.WithoutCancel(ctx))
	}
	select {
	case b.lock <- struct{}{}:
	case <-ctx.Done():
		if !force {
			// Undo: the sandbox stays usable.
			m.mu.Lock()
			m.setStateLocked(b, StateActive, "release abandoned: "+ctx.Err().Error())
			m.persistLocked(ctx, b)
			m.mu.Unlock()
			return ctx.Err()
		}
		b.lock <- struct{}{}
	}
	closeErr := b.env.Close(context.WithoutCancel(ctx))
	os.RemoveAll(filepath.Join(b.dir, "calls"))

	m.mu.Lock()
	delete(m.boxes, sessionID)
	m.setStateLocked(b, StateReleased, reason)
	info := m.infoLocked(b)
	close(b.released)
	m.mu.Unlock()
	<-b.lock

	if m.opts.Store != nil {
		bg := context.WithoutCancel(ctx)
		detail := ""
		if closeErr != nil {
			detail = closeErr.Error()
		}
		if err := m.opts.Store.SaveReleasedSandbox(bg, store.ReleasedSandbox{
			SessionID: sessionID, Backend: m.backend.Name(), Reason: reason, Detail: detail, Forced: force,
			Executions: info.Executions, CreatedAt: info.CreatedAt, LastUsedAt: info.LastUsedAt, ReleasedAt: m.opts.Now(),
		}); err != nil {
			m.opts.Log.Warn("sandbox: recording the release failed", "session_id", sessionID, "err", err)
		}
		if err := m.opts.Store.DeleteLiveSandbox(bg, sessionID, m.opts.Owner); err != nil {
			m.opts.Log.Warn("sandbox: removing the live sandbox row failed", "session_id", sessionID, "err", err)
		}
	}
	m.opts.Log.Info("sandbox released", "session_id", sessionID, "backend", m.backend.Name(), "reason", reason, "forced", force)
	if closeErr != nil {
		return fmt.Errorf("sandbox: release %s: %w", sessionID, closeErr)
	}
	return nil
}

// Close releases every sandbox (forced, reason shutdown) and stops the
// reaper.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	ids := make([]string, 0, len(m.boxes))
	for id := range m.boxes {
		ids = append(ids, id)
	}
	m.mu.Unlock()
	m.stopReap()
	<-m.reapDone
	var errList []error
	for _, id := range ids {
		if err := m.Release(context.Background(), id, true, ReasonShutdown); err != nil && errs.Code(err) != errs.ENOTFOUND {
			errList = append(errList, err)
		}
	}
	return errors.Join(errList...)
}

// reap releases idle sandboxes, sandboxes whose session was deleted, and
// sandboxes another process asked to release (through the live table).
func (m *Manager) reap(ctx context.Context) {
	defer close(m.reapDone)
	t := time.NewTicker(m.opts.ReapInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.ReapOnce(ctx)
		}
	}
}

// ReapOnce runs one pass of the reaper now.
func (m *Manager) ReapOnce(ctx context.Context) {
	type job struct {
		id, reason string
		force      bool
	}
	var jobs []job
	now := m.opts.Now()
	requests := map[string]*store.LiveSandbox{}
	if m.opts.Store != nil {
		if rows, err := m.opts.Store.ListLiveSandboxes(ctx); err == nil {
			for _, r := range rows {
				if r.ReleaseRequested && r.Owner == m.opts.Owner {
					requests[r.SessionID] = r
				}
			}
		}
	}
	m.mu.Lock()
	boxes := make([]*box, 0, len(m.boxes))
	for _, b := range m.boxes {
		boxes = append(boxes, b)
	}
	m.mu.Unlock()
	for _, b := range boxes {
		m.mu.Lock()
		state, last, saw := b.state, b.lastUsed, b.sawSession
		m.mu.Unlock()
		if state == StateReleasing {
			continue
		}
		if r, ok := requests[b.session]; ok {
			reason := r.ReleaseReason
			if reason == "" {
				reason = ReasonManual
			}
			jobs = append(jobs, job{b.session, reason, r.ReleaseForce})
			continue
		}
		if m.opts.Store != nil {
			exists, err := m.opts.Store.SessionExists(ctx, b.session)
			if err == nil && exists && !saw {
				m.mu.Lock()
				b.sawSession = true
				m.mu.Unlock()
			}
			if err == nil && !exists && saw {
				jobs = append(jobs, job{b.session, ReasonSessionDeleted, true})
				continue
			}
		}
		if state == StateActive && now.Sub(last) >= m.opts.IdleTimeout {
			jobs = append(jobs, job{b.session, ReasonIdle, false})
		}
	}
	for _, j := range jobs {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if j.reason == ReasonIdle {
			// Only if still idle: a call may have started since.
			m.mu.Lock()
			b := m.boxes[j.id]
			idle := b != nil && b.state == StateActive && m.opts.Now().Sub(b.lastUsed) >= m.opts.IdleTimeout
			m.mu.Unlock()
			if !idle {
				cancel()
				continue
			}
		}
		if err := m.Release(rctx, j.id, j.force, j.reason); err != nil && errs.Code(err) != errs.ENOTFOUND {
			m.opts.Log.Warn("sandbox: release failed", "session_id", j.id, "reason", j.reason, "err", err)
		}
		cancel()
	}
}

// refuseAll is the dispatcher of a Manager without tools.
type refuseAll struct{}

func (refuseAll) Execute(_ context.Context, call tools.ToolCallRequest, _ tools.ExecutionContext) tools.ToolResult {
	return tools.ToolResult{Status: tools.StatusDenied, Content: "no tools are available from this sandbox"}
}

// lastCallNumber is the highest numbered call dir under dir.
func lastCallNumber(dir string) int {
	entries, _ := os.ReadDir(dir)
	n := 0
	for _, e := range entries {
		if v, err := strconv.Atoi(e.Name()); err == nil && v > n {
			n = v
		}
	}
	return n
}

// hashName is a short, file-name-safe digest of s.
func hashName(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "h-" + hex.EncodeToString(sum[:12])
}
