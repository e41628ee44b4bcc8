package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nagent/nagent/adapters/cli"
	"github.com/nagent/nagent/adapters/feishu"
	"github.com/nagent/nagent/adapters/openai"
	"github.com/nagent/nagent/runtime/app"
	"github.com/nagent/nagent/runtime/config"
	"github.com/nagent/nagent/web"
)

// serve is `nagent serve [--addr HOST:PORT] [--insecure]`.
func serve(ctx context.Context, args []string, stdio cli.IO) int {
	fs := cli.NewFlagSet(stdio, "serve", "serve [--addr 127.0.0.1:8080] [--insecure]", `
Serves the OpenAI-compatible API (/v1/chat/completions, /v1/responses,
/v1/models) plus /healthz and /readyz, and the browser dashboard at
http://ADDR/ (its API under /api, its websocket at /ws; web/API.md). Point
any OpenAI client at http://ADDR/v1. Requests carrying an X-Session-Id
header continue a stored session. SIGINT or SIGTERM shuts down gracefully:
in-flight turns may finish within server.shutdown_grace, then they are
cancelled and recorded as such.

API keys (server.api_keys or NAGENT_API_KEYS, comma-separated) are required
on any address other than loopback; --insecure overrides that.

WASM plugins in $NAGENT_HOME/plugins are reloaded when they change, so
"nagent plugin install" and "nagent plugin remove" reach a running server.

Schedules ("nagent schedule") fire while the server runs; on start it catches
up on those that fell due while it was stopped (per schedule: skip or
run_once). scheduler.enabled: false in config.yaml turns this off.`)
	addr := fs.String("addr", "", "listen address (default server.addr, 127.0.0.1:8080)")
	insecure := fs.Bool("insecure", false, "allow a non-loopback address without API keys")
	if code, ok := cli.Parse(fs, args, stdio); !ok {
		return code
	}
	cfg, err := config.Load()
	if err != nil {
		return cli.Fail(stdio, err)
	}
	if *addr != "" {
		cfg.Server.Addr = *addr
	}
	if !openai.IsLoopback(cfg.Server.Addr) && len(cfg.Server.APIKeys) == 0 && !*insecure {
		fmt.Fprintf(stdio.Err, "nagent serve: refusing to listen on %s without API keys: set NAGENT_API_KEYS (or server.api_keys), bind 127.0.0.1, or pass --insecure\n", cfg.Server.Addr)
		return cli.ExitUsage
	}
	log := slog.New(slog.NewJSONHandler(stdio.Err, &slog.HandlerOptions{Level: logLevel()}))
	a, err := app.New(ctx, cfg, app.Options{Log: log, AllowNoModel: true, WatchPlugins: true})
	if err != nil {
		return cli.Fail(stdio, err)
	}
	defer a.Close()
	if a.ModelErr != nil {
		log.Warn("no model configured; chat requests will answer 503 until one is configured and nagent serve is restarted", "error", a.ModelErr)
		// What API clients and the dashboard are told, too.
		a.ModelErr = fmt.Errorf("%w; then restart nagent serve", a.ModelErr)
	}
	// A running turn rewrites its task state at every step; one that has
	// not for this long belongs to a process that died (SIGKILL, a crash).
	staleAfter := max(30*time.Minute, cfg.Agent.TurnTimeout.Std())
	if n, err := a.DB.InterruptStaleTurns(ctx, time.Now().Add(-staleAfter)); err != nil {
		log.Warn("could not mark interrupted turns", "err", err)
	} else if n > 0 {
		log.Warn("turns left running by a stopped process were marked failed (interrupted)", "count", n)
	}

	ln, err := net.Listen("tcp", cfg.Server.Addr)
	if err != nil {
		return cli.Fail(stdio, fmt.Errorf("listen on %s: %w (choose another with --addr)", cfg.Server.Addr, err))
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	log.Info("N-Agent serving the OpenAI-compatible API", "url", "http://"+ln.Addr().String()+"/v1",
		"model", cfg.LLM.Model, "data_dir", cfg.Home, "auth", len(cfg.Server.APIKeys) > 0)
	if cfg.Feishu.Enabled() {
		// The Feishu bot: GatewayService supervises its long connection
		// (reconnects, health in /readyz), and scheduled runs deliver to
		// Feishu chats through it.
		bot, err := feishu.New(a.Gateway, feishu.Options{AppID: cfg.Feishu.AppID, AppSecret: cfg.Feishu.AppSecret,
			Domain: cfg.Feishu.Domain, ConfirmTimeout: cfg.Feishu.ConfirmTimeout.Std(), Log: log})
		if err != nil {
			return cli.Fail(stdio, err)
		}
		a.Gateway.Start(ctx, bot)
		a.Scheduler().SetChatSender(bot)
		log.Info("Feishu bot connecting over the long connection", "app_id", cfg.Feishu.AppID)
	}
	if cfg.Scheduler.Enabled {
		// Catches up on runs missed while stopped, then fires due schedules.
		if err := a.Scheduler().Start(ctx); err != nil {
			return cli.Fail(stdio, err)
		}
		defer a.Scheduler().Stop(cfg.Server.ShutdownGrace.Std())
	}
	srv := openai.NewServer(a, log)
	dash := web.New(a, web.Options{Log: log})
	defer dash.Close()
	srv.Root = func(api http.Handler) http.Handler { return web.Mount(api, dash) }
	log.Info("N-Agent dashboard", "url", "http://"+ln.Addr().String()+"/")
	if err := srv.Serve(ctx, ln, cfg.Server.ShutdownGrace.Std()); err != nil {
		return cli.Fail(stdio, err)
	}
	log.Info("stopped")
	return cli.ExitOK
}

func logLevel() slog.Level {
	level := slog.LevelInfo
	if v := os.Getenv("NAGENT_LOG_LEVEL"); v != "" {
		_ = level.UnmarshalText([]byte(v))
	}
	return level
}
