package app

import (
	"context"
	"sync"
	"time"

	"github.com/nagent/nagent/runtime/knowledge"
	"github.com/nagent/nagent/skills"
)

// sourceRefreshInterval is how often a server re-reads skills and
// knowledge bases, so that `nagent kb add` or a new SKILL.md reaches it.
const sourceRefreshInterval = 2 * time.Second

// sourceRefresh keeps the skill and knowledge slots up to date while a
// server runs. Each pass is cheap when nothing changed: the slots are set
// again only when their definitions differ.
type sourceRefresh struct {
	stop context.CancelFunc
	done sync.WaitGroup
}

// startSourceRefresh starts the refresh when opts.WatchPlugins asks for a
// live server; otherwise it returns nil, which close accepts.
func startSourceRefresh(ctx context.Context, sk *skills.Service, kn *knowledge.KnowledgeService, slot skills.Slot, opts Options) *sourceRefresh {
	if !opts.WatchPlugins {
		return nil
	}
	ctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	r := &sourceRefresh{stop: stop}
	r.done.Go(func() {
		t := time.NewTicker(sourceRefreshInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if err := sk.Reload(ctx, slot); err != nil {
				opts.Log.WarnContext(ctx, "refreshing skills", "err", err)
			}
			if err := kn.Publish(ctx, slot); err != nil && ctx.Err() == nil {
				opts.Log.WarnContext(ctx, "refreshing knowledge bases", "err", err)
			}
		}
	})
	return r
}

// close stops the refresh and waits for a running pass.
func (r *sourceRefresh) close() {
	if r == nil {
		return
	}
	r.stop()
	r.done.Wait()
}
