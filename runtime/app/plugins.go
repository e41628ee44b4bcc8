package app

import (
	"context"
	"fmt"
	"sync"

	"github.com/nagent/nagent/runtime/config"
	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/store"
	"github.com/nagent/nagent/wasm"
)

// pluginHost is the wiring of WASM plugins: the host, and the watch that
// reloads them while a server runs.
type pluginHost struct {
	host *wasm.Host
	stop context.CancelFunc
	done sync.WaitGroup
}

// NewPluginHost builds the WASM plugin host for cfg over
// $NAGENT_HOME/plugins, publishing into slot (may be nil) and asking policy
// about host calls. It does not load anything; call Load.
func NewPluginHost(cfg *config.Config, db *store.DB, slot wasm.Slot, policy tools.Policy, opts Options) (*wasm.Host, error) {
	settings := make(map[string]wasm.Settings, len(cfg.Plugins))
	for name, p := range cfg.Plugins {
		settings[name] = wasm.Settings{Config: p.Config, Secrets: p.Secrets}
	}
	h, err := wasm.NewHost(wasm.Options{
		Dir: cfg.PluginsDir(), CacheDir: cfg.PluginCacheDir(), Store: db, Policy: policy, Slot: slot,
		Settings: settings, Log: opts.Log, Now: opts.Now,
	})
	if err != nil {
		return nil, fmt.Errorf("app: plugins: %w", err)
	}
	return h, nil
}

// newPlugins loads the installed plugins into ts and, with
// opts.WatchPlugins, keeps reloading them as the directory changes. A
// plugin that fails to load is logged and left out; it never stops the
// runtime.
func newPlugins(ctx context.Context, cfg *config.Config, db *store.DB, ts *tools.ToolService, policy tools.Policy, opts Options) (*pluginHost, error) {
	h, err := NewPluginHost(cfg, db, ts, policy, opts)
	if err != nil {
		return nil, err
	}
	if _, err := h.Load(ctx); err != nil {
		opts.Log.Error("loading plugins", "dir", cfg.PluginsDir(), "err", err)
	}
	ph := &pluginHost{host: h, stop: func() {}}
	if opts.WatchPlugins {
		wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		ph.stop = stop
		ph.done.Add(1)
		go func() {
			defer ph.done.Done()
			if err := h.Watch(wctx, 0); err != nil {
				opts.Log.Error("plugin hot reload is off", "dir", cfg.PluginsDir(), "err", err)
			}
		}()
	}
	return ph, nil
}

// close stops the watch, then the plugins after their running calls.
func (ph *pluginHost) close() error {
	if ph == nil {
		return nil
	}
	ph.stop()
	ph.done.Wait()
	return ph.host.Close(context.Background())
}
