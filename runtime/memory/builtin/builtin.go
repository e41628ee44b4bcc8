// Package builtin owns the builtin external-memory provider (系统记忆): the
// Markdown files under $NAGENT_HOME/memory. memory.md holds stable
// knowledge and user.md the user's preferences, one entry per block;
// memory.meta.json keeps each memory.md entry's trust and last-confirmed
// time, which decays; observations.md collects the keywords that sync_turn
// extracts from each completed turn.
package builtin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/memory"
	"github.com/nagent/nagent/runtime/memory/mdfile"
)

// ObservationsFile is the file sync_turn appends to.
const ObservationsFile = "observations.md"

// Options tune the builtin provider.
type Options struct {
	mdfile.Options
	// ObservationChars bounds observations.md; the oldest lines go first
	// (default 8000 characters).
	ObservationChars int
	// Keywords is how many keywords one turn contributes (default 8).
	Keywords int
}

// Provider is the builtin provider.
type Provider struct {
	dir  *mdfile.Dir
	opts Options
	mu   sync.Mutex // serialises observation writes
}

var (
	_ memory.Snapshotter   = (*Provider)(nil)
	_ memory.Prefetcher    = (*Provider)(nil)
	_ memory.TurnSyncer    = (*Provider)(nil)
	_ memory.PreCompressor = (*Provider)(nil)
	_ memory.Editor        = (*Provider)(nil)
)

// New returns the builtin provider over dir ($NAGENT_HOME/memory).
func New(dir string, opts Options) *Provider {
	opts.Meta = true
	if opts.ObservationChars <= 0 {
		opts.ObservationChars = 8000
	}
	if opts.Keywords <= 0 {
		opts.Keywords = 8
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Provider{dir: mdfile.Open(dir, memory.BuiltinProvider, opts.Options), opts: opts}
}

// Name implements memory.Provider.
func (p *Provider) Name() string { return memory.BuiltinProvider }

// Dir is the provider's memory directory.
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

// SyncTurn implements memory.TurnSyncer: it appends one line with the
// turn's keywords to observations.md, for example
//
//   - 2026-06-27T15:52:06Z sess_1: UTC, 时间, 现在, 几点, 打印
//
// A turn without keywords adds nothing. The line is appended with a single
// write, which a crashed process cannot leave half done, so a turn pays
// for no file rewrite; once the file grows past three times its budget it
// is compacted to the newest lines within the budget, through a temporary
// file and a rename like every other memory file.
func (p *Provider) SyncTurn(ctx context.Context, t memory.SyncTurn) error {
	kws := memory.Keywords(p.opts.Keywords, t.User, t.Assistant)
	if len(kws) == 0 {
		return nil
	}
	when := t.Time
	if when.IsZero() {
		when = p.opts.Now()
	}
	line := fmt.Sprintf("- %s %s: %s\n", when.UTC().Format(time.RFC3339), t.SessionID, strings.Join(kws, ", "))
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	path := filepath.Join(p.dir.Path(), ObservationsFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if errors.Is(err, os.ErrNotExist) {
		if err = os.MkdirAll(p.dir.Path(), 0o700); err == nil {
			f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		}
	}
	if err != nil {
		return err
	}
	_, err = f.Write([]byte(line))
	info, serr := f.Stat()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil || serr != nil || info.Size() <= int64(3*p.opts.ObservationChars) {
		return err
	}
	return p.compactObservations(path)
}

// compactObservations keeps the newest whole lines of observations.md
// within its budget.
func (p *Provider) compactObservations(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "- ") { // a line torn by a power loss is dropped
			lines = append(lines, l)
		}
	}
	text := strings.Join(lines, "\n") + "\n"
	for utf8.RuneCountInString(text) > p.opts.ObservationChars && len(lines) > 1 {
		lines = lines[1:]
		text = strings.Join(lines, "\n") + "\n"
	}
	return memory.ReplaceFileAtomic(path, []byte(text), 0o600)
}

// OnPreCompress implements memory.PreCompressor: it salvages the keywords
// of the messages about to be compressed, so the summary keeps the topics
// even when it is short.
func (p *Provider) OnPreCompress(_ context.Context, c memory.PreCompress) (string, error) {
	var texts []string
	for _, m := range c.Messages {
		if m.Role == llm.RoleUser || m.Role == llm.RoleAssistant {
			texts = append(texts, m.Content)
		}
	}
	kws := memory.Keywords(2*p.opts.Keywords, texts...)
	if len(kws) == 0 {
		return "", nil
	}
	return "topics: " + strings.Join(kws, ", "), nil
}
