// Package openai is the OpenAI-compatible HTTP entry adapter: chat
// completions and responses (with SSE streaming), models, sessions bound by
// X-Session-Id, API-key auth and the server's own limits. It speaks the
// OpenAI wire format exactly, so stock OpenAI clients work unchanged.
package openai

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/nagent/nagent/runtime/app"
)

// MaxBodyBytes bounds a request body.
const MaxBodyBytes = 8 << 20

// Server serves the OpenAI-compatible API for one App.
type Server struct {
	app    *app.App
	log    *slog.Logger
	keys   [][]byte
	models []string // the configured model first, then its aliases
	turns  chan struct{}

	// hardStop is cancelled when the shutdown grace period ends; every turn
	// derives from it, so in-flight turns end as cancelled.
	hardStop       context.Context
	cancelHardStop context.CancelFunc
	now            func() time.Time

	// Root, when set, wraps the API's handler into the root handler of the
	// listener Serve uses; `nagent serve` mounts the dashboard this way.
	Root func(api http.Handler) http.Handler
}

// NewServer builds the API server for a.
func NewServer(a *app.App, log *slog.Logger) *Server {
	if log == nil {
		log = slog.Default()
	}
	s := &Server{app: a, log: log, now: time.Now}
	for _, k := range a.Config.Server.APIKeys {
		s.keys = append(s.keys, []byte(k))
	}
	if m := a.Config.LLM.Model; m != "" {
		s.models = append(s.models, m)
	}
	s.models = append(s.models, a.Config.LLM.Aliases...)
	limit := a.Config.Server.MaxConcurrentTurns
	if limit <= 0 {
		limit = 64
	}
	s.turns = make(chan struct{}, limit)
	s.hardStop, s.cancelHardStop = context.WithCancel(context.Background())
	return s
}

// Handler returns the HTTP handler with every route and middleware.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.handleHealthz)
	mux.HandleFunc("GET /readyz", s.handleReadyz)
	mux.Handle("POST /v1/chat/completions", s.authed(s.handleChatCompletions))
	mux.Handle("POST /v1/responses", s.authed(s.handleCreateResponse))
	mux.Handle("GET /v1/responses/{id}", s.authed(s.handleGetResponse))
	mux.Handle("GET /v1/models", s.authed(s.handleListModels))
	mux.Handle("GET /v1/models/{id}", s.authed(s.handleGetModel))
	mux.Handle("/v1/", s.authed(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, newAPIError(http.StatusNotFound, "invalid_request_error", "unknown_url",
			"Unknown request URL: %s %s. See README.md for the supported endpoints.", r.Method, r.URL.Path))
	}))
	return s.accessLog(s.recoverPanics(mux))
}

// authed requires a valid API key when keys are configured.
func (s *Server) authed(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(s.keys) > 0 && !s.validKey(r) {
			writeError(w, newAPIError(http.StatusUnauthorized, "invalid_request_error", "invalid_api_key",
				"Incorrect or missing API key. Send it as \"Authorization: Bearer <key>\"; keys come from server.api_keys or NAGENT_API_KEYS."))
			return
		}
		h(w, r)
	})
}

func (s *Server) validKey(r *http.Request) bool {
	auth := r.Header.Get("Authorization")
	token, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok {
		return false
	}
	got := []byte(strings.TrimSpace(token))
	var match int
	for _, k := range s.keys { // compare against every key, in constant time
		match |= subtle.ConstantTimeCompare(got, k)
	}
	return match == 1
}

func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	checks := map[string]string{"database": "ok", "model": "ok"}
	status := http.StatusOK
	if err := s.app.DB.Ready(ctx); err != nil {
		checks["database"], status = err.Error(), http.StatusServiceUnavailable
	}
	if s.app.ModelErr != nil {
		checks["model"] = "not configured"
	}
	checks["policy"] = s.app.Policy.Status() // a broken policy file is reported, not fatal: the last good set serves
	// Chat-platform adapters (Feishu) are reported, not fatal: the API still
	// serves while the gateway reconnects them with backoff.
	if s.app.Gateway != nil && len(s.app.Gateway.Health()) > 0 {
		checks["gateway"] = "ok"
		if err := s.app.Gateway.Ready(); err != nil {
			checks["gateway"] = err.Error()
		}
	}
	if len(s.keys) > 0 && !s.validKey(r) {
		// Health checkers need the verdict, not file paths and parse errors.
		for name, v := range checks {
			if v != "ok" && !strings.HasPrefix(v, "ok (") {
				checks[name] = "degraded; send the API key for details"
			}
		}
	}
	state := "ready"
	if status != http.StatusOK {
		state = "not ready"
	}
	writeJSON(w, status, map[string]any{"status": state, "checks": checks})
}

// acquireTurn takes a slot of the server-wide concurrency limit, or fails
// at once with 429.
func (s *Server) acquireTurn() (func(), *apiError) {
	select {
	case s.turns <- struct{}{}:
		return func() { <-s.turns }, nil
	default:
		e := newAPIError(http.StatusTooManyRequests, "rate_limit_error", "server_busy",
			"the server is running its maximum of %d turns; retry shortly", cap(s.turns))
		e.RetryAfter = 1
		return nil, e
	}
}

// turnContext derives a turn's context from the request's, cancelled as
// well when the shutdown grace period ends.
func (s *Server) turnContext(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(s.hardStop, cancel)
	return ctx, func() { stop(); cancel() }
}

// resolveModel checks the request's model against the configured ones.
func (s *Server) resolveModel(model string) *apiError {
	if s.app.ModelErr != nil {
		e := newAPIError(http.StatusServiceUnavailable, "server_error", "model_not_configured", "%s", s.app.ModelErr.Error())
		return e
	}
	if model == "" {
		return invalid("model", "model is required; GET /v1/models lists the available ones")
	}
	for _, m := range s.models {
		if m == model {
			return nil
		}
	}
	return newAPIError(http.StatusNotFound, "invalid_request_error", "model_not_found",
		"The model %q does not exist; available: %s", model, strings.Join(s.models, ", "))
}

// Serve listens on addr and serves until ctx is cancelled, then shuts down
// gracefully: it stops accepting, lets in-flight turns finish within the
// grace period, then cancels them and waits for their records to be written.
func (s *Server) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	h := s.Handler()
	if s.Root != nil {
		h = s.Root(h)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.log.Info("shutting down; letting in-flight turns finish", "grace", grace.String())
	graceCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := srv.Shutdown(graceCtx)
	if errors.Is(err, context.DeadlineExceeded) {
		s.log.Warn("grace period over; cancelling in-flight turns")
		s.cancelHardStop()
		finalCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err = srv.Shutdown(finalCtx)
	}
	s.cancelHardStop()
	if err != nil {
		return fmt.Errorf("openai.Serve: shutdown: %w", err)
	}
	return nil
}

// IsLoopback reports whether addr (host:port) binds only loopback.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
