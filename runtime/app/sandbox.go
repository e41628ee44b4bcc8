package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/nagent/nagent/runtime/config"
	"github.com/nagent/nagent/runtime/sandbox"
	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/store"
)

// SandboxBackends builds each sandbox backend by name. A backend package
// registers here with one line (the docker backend:
// SandboxBackends["docker"] = func(cfg *config.Config) sandbox.Backend { … }).
var SandboxBackends = map[string]func(cfg *config.Config) sandbox.Backend{
	"local": func(cfg *config.Config) sandbox.Backend {
		return &sandbox.LocalBackend{Python: cfg.Sandbox.Python}
	},
	sandbox.UnisolatedName: func(cfg *config.Config) sandbox.Backend {
		return &sandbox.UnisolatedBackend{Python: cfg.Sandbox.Python}
	},
}

// SandboxAutoOrder is the order sandbox.backend auto tries backends in,
// strongest isolation first; unisolated comes last and only with
// sandbox.allow_unisolated. Names without a registered constructor are
// skipped.
var SandboxAutoOrder = []string{"docker", "local"}

// SelectSandboxBackend returns the backend cfg selects, checked to work
// here. For auto it returns the first available of SandboxAutoOrder (then
// unisolated when allowed); the error lists why each was refused.
func SelectSandboxBackend(ctx context.Context, cfg *config.Config, log *slog.Logger) (sandbox.Backend, error) {
	sc := cfg.Sandbox
	try := func(name string) (sandbox.Backend, error) {
		mk, ok := SandboxBackends[name]
		if !ok {
			return nil, fmt.Errorf("%s: not built into this binary", name)
		}
		b := mk(cfg)
		if err := b.Available(ctx); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return b, nil
	}
	var b sandbox.Backend
	var err error
	switch sc.Backend {
	case "off":
		return nil, errors.New("sandbox.backend is off")
	case "auto":
		var why []string
		for _, name := range SandboxAutoOrder {
			if b, err = try(name); err == nil {
				break
			}
			why = append(why, err.Error())
		}
		if b == nil && sc.AllowUnisolated {
			b, err = try(sandbox.UnisolatedName)
			if err != nil {
				why = append(why, err.Error())
			}
		}
		if b == nil {
			return nil, fmt.Errorf("no sandbox backend works here (%s); install bubblewrap or docker, or set sandbox.allow_unisolated: true to run code without isolation", strings.Join(why, "; "))
		}
	case sandbox.UnisolatedName:
		if !sc.AllowUnisolated {
			return nil, errors.New("sandbox.backend unisolated needs sandbox.allow_unisolated: true")
		}
		if b, err = try(sc.Backend); err != nil {
			return nil, err
		}
	default:
		if b, err = try(sc.Backend); err != nil {
			return nil, err
		}
	}
	if b.Name() == sandbox.UnisolatedName {
		log.Warn("execute_code runs UNISOLATED: model-written code runs as a plain process with this server's user, files and network (sandbox.allow_unisolated is on)")
	}
	return b, nil
}

// NewSandboxManager builds the sandbox manager of cfg over db, calling back
// into ts. It does not register execute_code.
func NewSandboxManager(ctx context.Context, cfg *config.Config, db *store.DB, ts *tools.ToolService, opts Options) (*sandbox.Manager, error) {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	b, err := SelectSandboxBackend(ctx, cfg, opts.Log)
	if err != nil {
		return nil, err
	}
	sc := cfg.Sandbox
	allowed := sc.AllowedTools
	if allowed == nil {
		allowed = []string{}
	}
	mo := sandbox.Options{
		Backend: b, Store: db, Dir: filepath.Join(cfg.Home, "sandboxes"),
		Limits: sandbox.Limits{
			CPUSeconds: sc.Limits.CPUSeconds, MemoryBytes: sc.Limits.MemoryBytes, FileSizeBytes: sc.Limits.FileSizeBytes,
			OpenFiles: sc.Limits.OpenFiles, Processes: sc.Limits.Processes, OutputBytes: sc.Limits.OutputBytes,
		},
		IdleTimeout: sc.IdleTimeout.Std(), Timeout: sc.Timeout.Std(), MaxToolCalls: sc.MaxToolCalls,
		AllowedTools: allowed, Now: opts.Now, Log: opts.Log,
	}
	if ts != nil {
		mo.Tools = ts
	}
	return sandbox.NewManager(mo)
}

// newSandbox wires execute_code: the manager, and the tool registered in
// ts. A machine where no backend works keeps running without execute_code
// (logged with the reason); nil is returned then.
func newSandbox(ctx context.Context, cfg *config.Config, db *store.DB, ts *tools.ToolService, opts Options) (*sandbox.Manager, error) {
	if cfg.Sandbox.Backend == "off" {
		return nil, nil
	}
	m, err := NewSandboxManager(ctx, cfg, db, ts, opts)
	if err != nil {
		// A backend chosen by name that fails is worth a warning; auto
		// finding none on a machine without bwrap or docker is expected.
		level := slog.LevelWarn
		if cfg.Sandbox.Backend == "auto" {
			level = slog.LevelInfo
		}
		opts.Log.Log(ctx, level, "execute_code is unavailable", "err", err)
		return nil, nil
	}
	if err := ts.Register(m.Tool()); err != nil {
		m.Close()
		return nil, fmt.Errorf("app: %w", err)
	}
	return m, nil
}
