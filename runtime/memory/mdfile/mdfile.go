// Package mdfile owns the Markdown memory files that the builtin and the
// multi-project providers share: memory.md and user.md with one entry per
// block (blocks are separated by blank lines), optional trust metadata with
// time decay (memory.meta.json), character budgets, atomic writes, and the
// MemoryRetriever that matches entries to a query by word overlap.
package mdfile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/nagent/nagent/runtime/memory"
)

// File names inside a memory directory.
const (
	MemoryFile = "memory.md"
	UserFile   = "user.md"
	MetaFile   = "memory.meta.json"
)

// Options tune a memory directory. Zero fields take the defaults.
type Options struct {
	// MemoryChars and UserChars bound each file's block of the static
	// snapshot (defaults 4000 and 2000 characters); entries past the budget
	// are left out, lowest trust first.
	MemoryChars int
	UserChars   int
	// MaxFileChars bounds each file; a write that would pass it is refused
	// (default 32000).
	MaxFileChars int
	// PrefetchChars and PrefetchEntries bound what Retrieve returns
	// (defaults 1500 characters, 5 entries).
	PrefetchChars   int
	PrefetchEntries int
	// Meta keeps memory.meta.json: trust and last-confirmed time of each
	// memory.md entry. Without it every entry has trust 1 and file order.
	Meta bool
	// HalfLife is the time after which an unconfirmed entry's trust has
	// halved (default 90 days).
	HalfLife time.Duration
	Now      func() time.Time
}

func (o *Options) defaults() {
	if o.MemoryChars <= 0 {
		o.MemoryChars = 4000
	}
	if o.UserChars <= 0 {
		o.UserChars = 2000
	}
	if o.MaxFileChars <= 0 {
		o.MaxFileChars = 32000
	}
	if o.PrefetchChars <= 0 {
		o.PrefetchChars = 1500
	}
	if o.PrefetchEntries <= 0 {
		o.PrefetchEntries = 5
	}
	if o.HalfLife <= 0 {
		o.HalfLife = 90 * 24 * time.Hour
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Default trust of an entry without metadata, and the step by which
// confirming an entry raises it.
const (
	DefaultTrust = 0.5
	ConfirmStep  = 0.1
)

// Dir is one memory directory: $NAGENT_HOME/memory for builtin, or
// $NAGENT_HOME/projects/<name>. It is safe for concurrent use within a
// process; writes from several processes are each atomic, and the last
// one wins.
type Dir struct {
	path  string
	label string
	opts  Options

	mu    sync.Mutex // serialises writes and guards cache
	cache map[string]*parsed
	meta  *metaCache
}

// Entry is one block of a memory file.
type Entry struct {
	Text  string
	Key   string  // content hash, the key of its metadata
	Trust float64 // after decay
	terms map[string]struct{}
}

type parsed struct {
	mod     time.Time
	size    int64
	entries []Entry
	index   map[string][]int // term → entries that contain it, for Retrieve
}

type metaCache struct {
	mod  time.Time
	size int64
	doc  metaDoc
}

// metaDoc is memory.meta.json.
type metaDoc struct {
	Version int                   `json:"version"`
	Entries map[string]*entryMeta `json:"entries"`
}

type entryMeta struct {
	Trust         float64   `json:"trust"`
	LastConfirmed time.Time `json:"last_confirmed"`
	Created       time.Time `json:"created"`
}

// Open returns the memory directory at path; label names it in snapshot
// headings ("builtin", or a project's name). The directory is created on
// first write; temporary files a crashed writer left behind are removed.
func Open(path, label string, opts Options) *Dir {
	opts.defaults()
	memory.RemoveStaleTemps(path, time.Minute)
	return &Dir{path: path, label: label, opts: opts, cache: make(map[string]*parsed)}
}

// Path is the directory.
func (d *Dir) Path() string { return d.path }

// Label names the directory in snapshot headings.
func (d *Dir) Label() string { return d.label }

// Entries returns the entries of file (MemoryFile or UserFile) in file
// order, with their decayed trust.
func (d *Dir) Entries(file string) ([]Entry, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.entriesLocked(file)
}

func (d *Dir) entriesLocked(file string) ([]Entry, error) {
	c, err := d.parsedLocked(file)
	if c == nil || err != nil {
		return nil, err
	}
	out := make([]Entry, len(c.entries))
	copy(out, c.entries)
	trust, err := d.truster(file)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Trust = trust(out[i].Key)
	}
	return out, nil
}

// parsedLocked returns the parsed file, read again only when it changed on
// disk; nil when the file does not exist.
func (d *Dir) parsedLocked(file string) (*parsed, error) {
	p := filepath.Join(d.path, file)
	info, err := os.Stat(p)
	if errors.Is(err, os.ErrNotExist) {
		delete(d.cache, file)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	c := d.cache[file]
	if c == nil || !c.mod.Equal(info.ModTime()) || c.size != info.Size() {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		c = &parsed{mod: info.ModTime(), size: info.Size(), entries: parse(string(data)), index: make(map[string][]int)}
		for i, e := range c.entries {
			for t := range e.terms {
				c.index[t] = append(c.index[t], i)
			}
		}
		d.cache[file] = c
	}
	return c, nil
}

// truster returns the function that gives an entry's decayed trust: from
// memory.meta.json for memory.md when metadata is kept, else 1.
func (d *Dir) truster(file string) (func(key string) float64, error) {
	if file != MemoryFile || !d.opts.Meta {
		return func(string) float64 { return 1 }, nil
	}
	meta, err := d.metaLocked()
	if err != nil {
		return nil, err
	}
	now := d.opts.Now()
	return func(key string) float64 { return d.decayed(meta.Entries[key], now) }, nil
}

// decayed is an entry's trust after decay: trust × 0.5^(age/half-life),
// where age is the time since the entry was last confirmed.
func (d *Dir) decayed(m *entryMeta, now time.Time) float64 {
	if m == nil {
		return DefaultTrust
	}
	age := now.Sub(m.LastConfirmed)
	if age <= 0 {
		return m.Trust
	}
	return m.Trust * math.Pow(0.5, float64(age)/float64(d.opts.HalfLife))
}

func (d *Dir) metaLocked() (metaDoc, error) {
	p := filepath.Join(d.path, MetaFile)
	info, err := os.Stat(p)
	if errors.Is(err, os.ErrNotExist) {
		d.meta = nil
		return metaDoc{Version: 1, Entries: map[string]*entryMeta{}}, nil
	}
	if err != nil {
		return metaDoc{}, err
	}
	if c := d.meta; c != nil && c.mod.Equal(info.ModTime()) && c.size == info.Size() {
		return c.doc, nil
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return metaDoc{}, err
	}
	doc := metaDoc{}
	if err := json.Unmarshal(data, &doc); err != nil {
		return metaDoc{}, fmt.Errorf("%s: %w", p, err)
	}
	if doc.Entries == nil {
		doc.Entries = map[string]*entryMeta{}
	}
	d.meta = &metaCache{mod: info.ModTime(), size: info.Size(), doc: doc}
	return doc, nil
}

// parse splits a memory file into its blocks.
func parse(text string) []Entry {
	var out []Entry
	var block []string
	flush := func() {
		if len(block) == 0 {
			return
		}
		t := strings.TrimSpace(strings.Join(block, "\n"))
		block = block[:0]
		if t != "" {
			out = append(out, Entry{Text: t, Key: key(t), terms: memory.TermSet(t)})
		}
	}
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		block = append(block, strings.TrimRight(line, " \t"))
	}
	flush()
	return out
}

func key(text string) string {
	h := sha256.Sum256([]byte(text))
	return hex.EncodeToString(h[:6])
}

func render(entries []Entry) string {
	if len(entries) == 0 {
		return ""
	}
	parts := make([]string, len(entries))
	for i, e := range entries {
		parts[i] = e.Text
	}
	return strings.Join(parts, "\n\n") + "\n"
}

// Snapshot returns the directory's block of the static snapshot: a section
// per non-empty file, its entries by trust (highest first, file order on a
// tie) within the file's character budget. Empty files give no section.
func (d *Dir) Snapshot() (string, error) {
	var sections []string
	for _, f := range []struct {
		name   string
		budget int
	}{{MemoryFile, d.opts.MemoryChars}, {UserFile, d.opts.UserChars}} {
		entries, err := d.Entries(f.name)
		if err != nil {
			return "", err
		}
		if len(entries) == 0 {
			continue
		}
		byTrust(entries)
		var kept []string
		used, omitted := 0, 0
		for _, e := range entries {
			n := utf8.RuneCountInString(e.Text) + 2
			if used+n > f.budget {
				omitted++
				continue
			}
			used += n
			kept = append(kept, e.Text)
		}
		s := "## External memory: " + d.label + "/" + f.name + "\n" + strings.Join(kept, "\n\n")
		if omitted > 0 {
			s += fmt.Sprintf("\n\n(%d more entries are not shown here; read them with the memory tool.)", omitted)
		}
		sections = append(sections, s)
	}
	return strings.Join(sections, "\n\n"), nil
}

func byTrust(entries []Entry) {
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].Trust > entries[j].Trust })
}

// Retrieve is the MemoryRetriever: the memory.md entries that share words
// with the query, best first (overlap × trust), within the prefetch
// budgets. It returns "" when no entry shares a word with the query. In a
// file of ten entries or more, a word that most entries contain is no
// evidence of relevance and does not count as shared.
func (d *Dir) Retrieve(query string) (string, error) {
	q := memory.TermSet(query)
	if len(q) == 0 {
		return "", nil
	}
	type hit struct {
		e     Entry
		pos   int
		score float64
	}
	var hits []hit
	err := func() error {
		d.mu.Lock()
		defer d.mu.Unlock()
		c, err := d.parsedLocked(MemoryFile)
		if c == nil || err != nil {
			return err
		}
		shared := make(map[int]int) // entry → query terms it contains
		for t := range q {
			post := c.index[t]
			if len(c.entries) >= 10 && 2*len(post) > len(c.entries) {
				continue // in most entries: no evidence of relevance
			}
			for _, i := range post {
				shared[i]++
			}
		}
		trust, err := d.truster(MemoryFile)
		if err != nil {
			return err
		}
		for i, n := range shared {
			e := c.entries[i]
			hits = append(hits, hit{e, i, float64(n) / float64(len(q)) * trust(e.Key)})
		}
		return nil
	}()
	if err != nil {
		return "", err
	}
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].score != hits[j].score {
			return hits[i].score > hits[j].score
		}
		return hits[i].pos < hits[j].pos
	})
	var lines []string
	used := 0
	for _, h := range hits {
		if len(lines) == d.opts.PrefetchEntries {
			break
		}
		line := "- " + strings.ReplaceAll(h.e.Text, "\n", "\n  ")
		n := utf8.RuneCountInString(line)
		if used+n > d.opts.PrefetchChars {
			continue
		}
		used += n
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n"), nil
}

// Edit runs one memory-tool operation on memory.md or user.md.
func (d *Dir) Edit(_ context.Context, e memory.Edit) (memory.EditResult, error) {
	if e.Target != memory.TargetMemory && e.Target != memory.TargetUser {
		return memory.EditResult{}, fmt.Errorf("target must be %q or %q", memory.TargetMemory, memory.TargetUser)
	}
	file := memory.TargetFile(e.Target)
	now := e.Time
	if now.IsZero() {
		now = d.opts.Now()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	entries, err := d.entriesLocked(file)
	if err != nil {
		return memory.EditResult{}, err
	}
	content := normalise(e.Content)
	var msg string
	var confirm, drop []string // metadata changes: keys confirmed, keys removed
	carry := map[string]string{}
	switch e.Action {
	case memory.ActionRead:
		return d.result(file, entries, ""), nil
	case memory.ActionAdd:
		if content == "" {
			return memory.EditResult{}, errors.New("content is empty; give the entry to add")
		}
		if i := indexOf(entries, content); i >= 0 {
			confirm = append(confirm, entries[i].Key)
			msg = "the entry was already present; it is now confirmed"
			break
		}
		entries = append(entries, Entry{Text: content, Key: key(content)})
		confirm = append(confirm, key(content))
		msg = "entry added"
	case memory.ActionReplace, memory.ActionRemove:
		i, err := match(entries, e.OldText, file)
		if err != nil {
			return memory.EditResult{}, err
		}
		old := entries[i]
		if e.Action == memory.ActionRemove {
			entries = append(entries[:i:i], entries[i+1:]...)
			drop = append(drop, old.Key)
			msg = "entry removed"
			break
		}
		if content == "" {
			return memory.EditResult{}, errors.New("content is empty; to delete an entry use action remove")
		}
		entries[i] = Entry{Text: content, Key: key(content)}
		if entries[i].Key != old.Key {
			drop = append(drop, old.Key)
			carry[entries[i].Key] = old.Key
		}
		confirm = append(confirm, entries[i].Key)
		msg = "entry replaced"
	default:
		return memory.EditResult{}, fmt.Errorf("unknown action %q; use read, add, replace or remove", e.Action)
	}
	text := render(entries)
	if n := utf8.RuneCountInString(text); n > d.opts.MaxFileChars && e.Action != memory.ActionRemove {
		return memory.EditResult{}, fmt.Errorf("%s would hold %d characters, over its limit of %d; replace or remove entries first",
			file, n, d.opts.MaxFileChars)
	}
	if err := memory.WriteFileAtomic(filepath.Join(d.path, file), []byte(text), 0o600); err != nil {
		return memory.EditResult{}, err
	}
	delete(d.cache, file)
	if file == MemoryFile && d.opts.Meta {
		if err := d.updateMeta(now, confirm, drop, carry); err != nil {
			return memory.EditResult{}, fmt.Errorf("%s written, but its metadata not: %w", file, err)
		}
	}
	entries, err = d.entriesLocked(file)
	if err != nil {
		return memory.EditResult{}, err
	}
	return d.result(file, entries, msg), nil
}

// updateMeta confirms and drops entries in memory.meta.json. A confirmed
// entry's trust rises by ConfirmStep (a replacement starts from the trust of
// the entry it replaced) and its decay restarts.
func (d *Dir) updateMeta(now time.Time, confirm, drop []string, carry map[string]string) error {
	doc, err := d.metaLocked()
	if err != nil {
		return err
	}
	next := metaDoc{Version: 1, Entries: make(map[string]*entryMeta, len(doc.Entries)+1)}
	for k, v := range doc.Entries {
		c := *v
		next.Entries[k] = &c
	}
	for _, k := range confirm {
		m := next.Entries[k]
		if m == nil {
			m = &entryMeta{Trust: DefaultTrust - ConfirmStep, Created: now}
			if from := next.Entries[carry[k]]; from != nil {
				m.Trust, m.Created = from.Trust, from.Created
			}
			next.Entries[k] = m
		}
		m.Trust = math.Min(1, m.Trust+ConfirmStep)
		m.LastConfirmed = now
	}
	for _, k := range drop {
		delete(next.Entries, k)
	}
	data, err := json.MarshalIndent(next, "", "  ")
	if err != nil {
		return err
	}
	if err := memory.WriteFileAtomic(filepath.Join(d.path, MetaFile), append(data, '\n'), 0o600); err != nil {
		return err
	}
	d.meta = nil
	return nil
}

func (d *Dir) result(file string, entries []Entry, msg string) memory.EditResult {
	res := memory.EditResult{Target: file, Count: len(entries), MaxChars: d.opts.MaxFileChars, Message: msg}
	for _, e := range entries {
		res.Entries = append(res.Entries, e.Text)
	}
	res.Chars = utf8.RuneCountInString(render(entries))
	return res
}

func normalise(s string) string {
	var lines []string
	for _, l := range strings.Split(strings.ReplaceAll(strings.TrimSpace(s), "\r\n", "\n"), "\n") {
		if l = strings.TrimRight(l, " \t"); strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

func indexOf(entries []Entry, text string) int {
	for i, e := range entries {
		if e.Text == text {
			return i
		}
	}
	return -1
}

// match finds the one entry containing old.
func match(entries []Entry, old, file string) (int, error) {
	old = strings.TrimSpace(old)
	if old == "" {
		return -1, errors.New("old_text is empty; give a unique part of the entry")
	}
	found := -1
	n := 0
	for i, e := range entries {
		if strings.Contains(e.Text, old) {
			if found < 0 {
				found = i
			}
			n++
		}
	}
	switch {
	case n == 0:
		return -1, fmt.Errorf("no entry of %s contains %q; read the file to see its entries", file, old)
	case n > 1:
		return -1, fmt.Errorf("%d entries of %s contain %q; give a longer, unique old_text", n, file, old)
	}
	return found, nil
}
