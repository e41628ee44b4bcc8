// Package web is the browser dashboard: the management API under /api, its
// login and CSRF protection, the websocket hub at /ws that streams run
// events, confirmation prompts and runtime changes, and the embedded
// single-page UI. API.md is the contract the UI is written against.
package web

import (
	"context"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/nagent/nagent/runtime/app"
	"github.com/nagent/nagent/runtime/errs"
)

// Options tune a Server; zero fields take their defaults.
type Options struct {
	Log *slog.Logger
	// ConfirmTimeout bounds a confirmation prompt (default web.confirm_timeout, 60s).
	ConfirmTimeout time.Duration
	// SendQueue is each websocket client's send queue, in messages (default 2048).
	SendQueue int
	// RingSize is how many recent events each topic keeps for resume (default 1024).
	RingSize int
	// PingInterval is the websocket heartbeat (default 25s); a client silent
	// for 2.4 intervals is dropped.
	PingInterval time.Duration
	// FlushInterval is how long a client's writer lets events gather before
	// it writes them in one go (default 10ms; negative: write at once).
	FlushInterval time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// InboxPoll is how often the dashboard looks for new inbox messages to
	// publish on the inbox topic (default 2s).
	InboxPoll time.Duration
}

// Server serves the dashboard for one App.
type Server struct {
	app      *app.App
	opts     Options
	log      *slog.Logger
	keys     [][]byte
	loginTTL time.Duration
	now      func() time.Time

	hub      *Hub
	confirms *confirmations
	runs     *runs
	upgrader websocket.Upgrader
	ui       fs.FS

	ctx    context.Context // cancelled by Close: ends dashboard runs
	cancel context.CancelFunc
	wg     sync.WaitGroup // dashboard runs and the sweeper
	wsWG   sync.WaitGroup // websocket goroutines
	mux    *http.ServeMux
	inbox  inboxWatch

	stopSandboxWatch func()
}

// New builds the dashboard for a and hooks it into the runtime: it observes
// every run's events and the policy engine's reloads.
func New(a *app.App, opts Options) *Server {
	if opts.Log == nil {
		opts.Log = a.Log
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.ConfirmTimeout <= 0 {
		opts.ConfirmTimeout = a.Config.Web.ConfirmTimeoutOrDefault()
	}
	if opts.SendQueue <= 0 {
		opts.SendQueue = 2048
	}
	if opts.RingSize <= 0 {
		opts.RingSize = 1024
	}
	if opts.FlushInterval == 0 {
		opts.FlushInterval = 10 * time.Millisecond
	}
	if opts.PingInterval <= 0 {
		opts.PingInterval = 25 * time.Second
	}
	if opts.InboxPoll <= 0 {
		opts.InboxPoll = 2 * time.Second
	}
	s := &Server{app: a, opts: opts, log: opts.Log, now: opts.Now, loginTTL: a.Config.Web.LoginTTLOrDefault(), ui: UI()}
	for _, k := range a.Config.Server.APIKeys {
		s.keys = append(s.keys, []byte(k))
	}
	s.hub = newHub(opts.RingSize, 10*time.Minute, opts.Now)
	s.confirms = &confirmations{hub: s.hub, timeout: opts.ConfirmTimeout, now: opts.Now, pending: map[string]*pendingConfirm{}}
	s.runs = newRuns()
	s.upgrader = websocket.Upgrader{
		ReadBufferSize: 4096, WriteBufferSize: 4096,
		CheckOrigin: sameOrigin,
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.mux = s.routes()

	a.Runner.SetObserver(s.observe)
	a.Policy.OnReload(s.policyReloaded)
	s.stopSandboxWatch = s.watchSandbox()
	s.noticeInbox(s.ctx) // what is in the inbox now is not news
	s.wg.Add(2)
	go s.sweepLoop()
	go s.inboxLoop(opts.InboxPoll)
	return s
}

// Hub is the websocket hub (for tests and benchmarks).
func (s *Server) Hub() *Hub { return s.hub }

// Handler serves /, /assets/, /api/ and /ws.
func (s *Server) Handler() http.Handler { return s.mux }

// Close ends the dashboard: it cancels the dashboard's runs and waits for
// them, and closes every websocket.
func (s *Server) Close() {
	s.app.Policy.OnReload(nil)
	s.app.Runner.SetObserver(nil)
	s.stopSandboxWatch()
	s.cancel()
	s.hub.close()
	s.wg.Wait()
	s.wsWG.Wait()
}

func (s *Server) sweepLoop() {
	defer s.wg.Done()
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			s.hub.sweep()
		}
	}
}

// handler is an /api handler; a returned error is written as the API's
// error body.
type handler func(w http.ResponseWriter, r *http.Request) error

// methods maps HTTP methods to handlers for one path.
type methods map[string]handler

// route registers pattern with per-method handlers behind auth, answering
// 405 with the API's error body for other methods.
func (s *Server) route(mux *http.ServeMux, pattern string, ms methods) {
	allowed := make([]string, 0, len(ms))
	for m, h := range ms {
		allowed = append(allowed, m)
		ms[m] = s.guard(h)
	}
	allow := strings.Join(allowed, ", ")
	mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		h, ok := ms[r.Method]
		if !ok && r.Method == http.MethodHead {
			h, ok = ms[http.MethodGet]
		}
		if !ok {
			w.Header().Set("Allow", allow)
			s.writeError(w, r, newError(http.StatusMethodNotAllowed, codeMethodNotAllowed, "%s is not allowed on %s; use %s", r.Method, r.URL.Path, allow))
			return
		}
		s.serve(w, r, h)
	})
}

// serve runs h, writing its error and recovering a panic.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, h handler) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("dashboard handler panic", "path", r.URL.Path, "panic", v)
			s.writeError(w, r, errs.Errorf(errs.EINTERNAL, "internal error"))
		}
	}()
	if err := h(w, r); err != nil {
		s.writeError(w, r, err)
	}
}

func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	open := func(pattern string, method string, h handler) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			if r.Method != method {
				w.Header().Set("Allow", method)
				s.writeError(w, r, newError(http.StatusMethodNotAllowed, codeMethodNotAllowed, "%s is not allowed on %s; use %s", r.Method, r.URL.Path, method))
				return
			}
			s.serve(w, r, h)
		})
	}
	open("/api/auth", http.MethodGet, s.handleAuth)
	open("/api/login", http.MethodPost, s.handleLogin)
	s.route(mux, "/api/logout", methods{"POST": s.handleLogout})
	s.route(mux, "/api/status", methods{"GET": s.handleStatus})

	s.route(mux, "/api/sessions", methods{"GET": s.handleListSessions})
	s.route(mux, "/api/sessions/{id}", methods{"GET": s.handleGetSession, "DELETE": s.handleDeleteSession})
	s.route(mux, "/api/sessions/{id}/stop", methods{"POST": s.handleStopSession})
	s.route(mux, "/api/runs", methods{"GET": s.handleListRuns, "POST": s.handleStartRun})
	s.route(mux, "/api/runs/{id}/stop", methods{"POST": s.handleStopRun})

	s.route(mux, "/api/policies", methods{"GET": s.handleListPolicies})
	s.route(mux, "/api/policies/file", methods{"GET": s.handleGetPolicy, "PUT": s.handlePutPolicy, "DELETE": s.handleDeletePolicy})
	s.route(mux, "/api/policies/eval", methods{"POST": s.handleEvalPolicy})
	s.route(mux, "/api/policies/decisions", methods{"GET": s.handlePolicyDecisions})

	s.route(mux, "/api/plugins", methods{"GET": s.handleListPlugins, "POST": s.handleUploadPlugin})
	s.route(mux, "/api/plugins/{name}", methods{"DELETE": s.handleDeletePlugin})
	s.route(mux, "/api/plugins/{name}/call", methods{"POST": s.handleCallPlugin})

	s.route(mux, "/api/sandboxes", methods{"GET": s.handleListSandboxes})
	s.route(mux, "/api/sandboxes/history", methods{"GET": s.handleSandboxHistory})
	s.route(mux, "/api/sandboxes/{session_id}/release", methods{"POST": s.handleReleaseSandbox})
	s.route(mux, "/api/sandboxes/{session_id}/exec", methods{"POST": s.handleExecSandbox})

	s.route(mux, "/api/memory", methods{"GET": s.handleListMemory})
	s.route(mux, "/api/memory/health", methods{"GET": s.handleMemoryHealth})
	s.route(mux, "/api/memory/{provider}/{file}", methods{"GET": s.handleGetMemory, "PUT": s.handlePutMemory})

	s.route(mux, "/api/skills", methods{"GET": s.handleListSkills})
	s.route(mux, "/api/skills/{name}", methods{"GET": s.handleGetSkill})

	s.route(mux, "/api/kb", methods{"GET": s.handleListKB, "POST": s.handleAddKB})
	s.route(mux, "/api/kb/search", methods{"POST": s.handleSearchKB})
	s.route(mux, "/api/kb/{name}", methods{"DELETE": s.handleDeleteKB})
	s.route(mux, "/api/kb/{name}/ingest", methods{"POST": s.handleIngestKB})

	s.route(mux, "/api/mcp", methods{"GET": s.handleListMCP, "POST": s.handleAddMCP})
	s.route(mux, "/api/mcp/{name}", methods{"DELETE": s.handleDeleteMCP})
	s.route(mux, "/api/mcp/{name}/probe", methods{"POST": s.handleProbeMCP})
	s.route(mux, "/api/mcp/{name}/health", methods{"GET": s.handleMCPHealth})

	s.route(mux, "/api/schedules", methods{"GET": s.handleListSchedules})
	s.route(mux, "/api/schedules/{id}", methods{"GET": s.handleGetSchedule})
	s.route(mux, "/api/schedules/{id}/run", methods{"POST": s.handleRunSchedule})
	s.route(mux, "/api/schedules/{id}/pause", methods{"POST": s.handlePauseSchedule})
	s.route(mux, "/api/schedules/{id}/resume", methods{"POST": s.handleResumeSchedule})
	s.route(mux, "/api/inbox", methods{"GET": s.handleListInbox})
	s.route(mux, "/api/inbox/{id}/read", methods{"POST": s.handleReadInbox})
	s.route(mux, "/api/gateway", methods{"GET": s.handleGateway})

	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, errs.Errorf(errs.ENOTFOUND, "no API endpoint %s %s; web/API.md lists them", r.Method, r.URL.Path))
	})
	mux.HandleFunc("/ws", s.handleWS)
	mux.HandleFunc("/", s.handleUI)
	return mux
}
