package policy

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watcher reloads the engine when a file under its directory changes.
type watcher struct {
	fsw  *fsnotify.Watcher
	quit chan struct{}
	done chan struct{}
}

// Start watches Options.Dir (creating it if missing) and its subdirectories,
// and reloads the policy set when files change, once they have been quiet
// for Options.Debounce. A reload that fails keeps the last good set (see
// Reload). Close stops the watcher. Start does nothing without a Dir or
// after Close, and an error only means there is no hot reload.
func (e *Engine) Start() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.opts.Dir == "" || e.closed || e.watch != nil {
		return nil
	}
	if err := os.MkdirAll(e.opts.Dir, 0o700); err != nil {
		return fmt.Errorf("policy.Start: %w", err)
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("policy.Start: %w", err)
	}
	w := &watcher{fsw: fsw, quit: make(chan struct{}), done: make(chan struct{})}
	if err := w.addTree(e.opts.Dir); err != nil {
		fsw.Close()
		return fmt.Errorf("policy.Start: %w", err)
	}
	e.watch = w
	go e.watchLoop(w)
	return nil
}

// addTree watches dir and every directory below it; watching one twice is
// harmless.
func (w *watcher) addTree(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed meanwhile
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			return fs.SkipDir
		}
		return w.fsw.Add(p)
	})
}

func (e *Engine) watchLoop(w *watcher) {
	defer close(w.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-w.quit:
			timer.Stop()
			return
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return
			}
			if ev.Has(fsnotify.Chmod) && !ev.Has(fsnotify.Write) {
				continue
			}
			timer.Reset(e.opts.Debounce)
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return
			}
			e.opts.Log.Warn("policy: file watcher error; reloading to be safe", "err", err)
			timer.Reset(e.opts.Debounce)
		case <-timer.C:
			if err := w.addTree(e.opts.Dir); err != nil {
				e.opts.Log.Warn("policy: cannot watch new policy directories", "dir", e.opts.Dir, "err", err)
			}
			_ = e.Reload(context.Background()) // logs and records its own error
		}
	}
}

// stop ends the watch loop and releases the watcher.
func (w *watcher) stop() error {
	close(w.quit)
	<-w.done
	return w.fsw.Close()
}
