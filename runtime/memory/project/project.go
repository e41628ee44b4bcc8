// Package project owns multi-project file memory (文件记忆): one pair of
// memory.md and user.md per project directory under
// $NAGENT_HOME/projects/<name>/. A session enables projects by name; their
// files go into the static snapshot, their memory.md entries are retrieved
// by query overlap, and their sync_turn does nothing.
package project

import (
	"context"
	"path/filepath"
	"sync"

	"github.com/nagent/nagent/runtime/memory"
	"github.com/nagent/nagent/runtime/memory/mdfile"
)

// Projects is the root of multi-project memory.
type Projects struct {
	root string
	opts mdfile.Options

	mu    sync.Mutex
	cache map[string]*Provider
}

// New returns the projects under root ($NAGENT_HOME/projects).
func New(root string, opts mdfile.Options) *Projects {
	opts.Meta = false
	return &Projects{root: root, opts: opts, cache: make(map[string]*Provider)}
}

// Resolve returns the provider of one project; the name must already be
// valid (memory.ProjectName). The directory need not exist: an empty
// project has no snapshot block and is created by its first write.
func (ps *Projects) Resolve(name string) (memory.Provider, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p, ok := ps.cache[name]
	if !ok {
		p = &Provider{name: name, dir: mdfile.Open(filepath.Join(ps.root, name), name, ps.opts)}
		ps.cache[name] = p
	}
	return p, nil
}

// Provider is the memory of one project.
type Provider struct {
	name string
	dir  *mdfile.Dir
}

var (
	_ memory.Snapshotter = (*Provider)(nil)
	_ memory.Prefetcher  = (*Provider)(nil)
	_ memory.Editor      = (*Provider)(nil)
)

// Name implements memory.Provider: the project's name.
func (p *Provider) Name() string { return p.name }

// Dir is the project's memory directory.
func (p *Provider) Dir() *mdfile.Dir { return p.dir }

// SystemSnapshot implements memory.Snapshotter.
func (p *Provider) SystemSnapshot(context.Context) (string, error) { return p.dir.Snapshot() }

// Prefetch implements memory.Prefetcher with the MemoryRetriever.
func (p *Provider) Prefetch(_ context.Context, q memory.PrefetchQuery) (string, error) {
	return p.dir.Retrieve(q.Query)
}

// Edit implements memory.Editor.
func (p *Provider) Edit(ctx context.Context, e memory.Edit) (memory.EditResult, error) {
	return p.dir.Edit(ctx, e)
}
