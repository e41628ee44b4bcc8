package wasm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultWatchDelay is how long Watch waits after the last change before it
// reloads, so that an install's several file operations cause one load.
const DefaultWatchDelay = 150 * time.Millisecond

// Watch reloads the plugins whenever the plugins directory or a plugin
// directory in it changes, until ctx ends. `nagent plugin install` and
// `remove` run in another process; this is how a running server notices
// them. Hidden entries (install's staging directories) are ignored. A
// delay <= 0 means DefaultWatchDelay. Watch returns nil when ctx ends.
func (h *Host) Watch(ctx context.Context, delay time.Duration) error {
	if delay <= 0 {
		delay = DefaultWatchDelay
	}
	if err := os.MkdirAll(h.opts.Dir, 0o755); err != nil {
		return fmt.Errorf("wasm.Watch: %w", err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("wasm.Watch: %w", err)
	}
	defer w.Close()
	if err := w.Add(h.opts.Dir); err != nil {
		return fmt.Errorf("wasm.Watch: %w", err)
	}
	h.watchPlugins(w)

	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if h.relevant(ev.Name) {
				timer.Reset(delay)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			h.opts.Log.WarnContext(ctx, "watching plugins", "dir", h.opts.Dir, "err", err)
			timer.Reset(delay) // events may have been lost: reload to be sure
		case <-timer.C:
			statuses, err := h.Load(ctx)
			if err != nil {
				h.opts.Log.ErrorContext(ctx, "reloading plugins", "dir", h.opts.Dir, "err", err)
			} else {
				ready := 0
				for _, st := range statuses {
					if st.State == StateReady {
						ready++
					}
				}
				h.opts.Log.InfoContext(ctx, "plugins reloaded", "dir", h.opts.Dir, "plugins", len(statuses), "ready", ready)
			}
			h.watchPlugins(w)
		}
	}
}

// relevant reports whether a change at name can change what Load sees.
func (h *Host) relevant(name string) bool {
	rel, err := filepath.Rel(h.opts.Dir, name)
	if err != nil {
		return true
	}
	first := strings.Split(filepath.ToSlash(rel), "/")[0]
	return !strings.HasPrefix(first, ".")
}

// watchPlugins adds a watch on every plugin directory not yet watched; the
// watches of removed directories go with them.
func (h *Host) watchPlugins(w *fsnotify.Watcher) {
	entries, err := os.ReadDir(h.opts.Dir)
	if err != nil {
		return
	}
	watched := map[string]bool{}
	for _, p := range w.WatchList() {
		watched[p] = true
	}
	for _, e := range entries {
		p := filepath.Join(h.opts.Dir, e.Name())
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && !watched[p] {
			if err := w.Add(p); err != nil {
				h.opts.Log.Warn("watching plugin directory", "dir", p, "err", err)
			}
		}
	}
}
