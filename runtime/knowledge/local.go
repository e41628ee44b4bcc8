package knowledge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/store"
)

// TypeLocal is the retriever type of documents ingested into SQLite FTS5.
const TypeLocal = "local"

// Defaults of LocalConfig.
const (
	DefaultChunkSize    = 1200 // characters
	DefaultChunkOverlap = 200  // characters
	maxDocumentBytes    = 4 << 20
)

// DefaultExtensions are the file types a local knowledge base ingests.
var DefaultExtensions = []string{".md", ".markdown", ".txt", ".text", ".rst", ".adoc", ".org", ".csv", ".json", ".yaml", ".yml", ".html", ".htm"}

// LocalConfig configures a local knowledge base.
type LocalConfig struct {
	// Dir is the directory ingested by default.
	Dir string `json:"dir,omitempty"`
	// ChunkSize and ChunkOverlap are in characters.
	ChunkSize    int      `json:"chunk_size,omitempty"`
	ChunkOverlap int      `json:"chunk_overlap,omitempty"`
	Extensions   []string `json:"extensions,omitempty"`
}

func (c *LocalConfig) defaults() error {
	if c.ChunkSize == 0 {
		c.ChunkSize = DefaultChunkSize
	}
	if c.ChunkOverlap == 0 {
		c.ChunkOverlap = min(DefaultChunkOverlap, c.ChunkSize/4)
	}
	if len(c.Extensions) == 0 {
		c.Extensions = DefaultExtensions
	}
	switch {
	case c.ChunkSize < 100:
		return errs.Errorf(errs.EINVALID, "config: chunk_size is %d; it must be at least 100", c.ChunkSize)
	case c.ChunkOverlap < 0 || c.ChunkOverlap >= c.ChunkSize/2:
		return errs.Errorf(errs.EINVALID, "config: chunk_overlap is %d; it must be between 0 and half of chunk_size", c.ChunkOverlap)
	}
	return nil
}

// LocalStore is the storage a local knowledge base needs; *store.DB is one.
type LocalStore interface {
	ListKnowledgeDocuments(ctx context.Context, kbID string) ([]*store.KnowledgeDocument, error)
	PutKnowledgeDocument(ctx context.Context, kbID string, doc *store.KnowledgeDocument, chunks []store.KnowledgeChunk) error
	DeleteKnowledgeDocument(ctx context.Context, kbID, path string) error
	SearchKnowledgeChunks(ctx context.Context, kbID string, terms []string, limit int) ([]store.KnowledgeChunk, error)
}

// LocalFactory builds local retrievers over a store.
type LocalFactory struct{ Store LocalStore }

var _ Factory = LocalFactory{}

// Validate checks a local configuration.
func (LocalFactory) Validate(raw json.RawMessage) error {
	var c LocalConfig
	if err := decodeConfig(raw, &c); err != nil {
		return err
	}
	return c.defaults()
}

// Create returns the retriever of kb; local knowledge bases take no secret.
func (f LocalFactory) Create(_ context.Context, kb Instance, _ string) (Retriever, error) {
	return &LocalRetriever{store: f.Store, kbID: kb.ID}, nil
}

// LocalRetriever ranks a local knowledge base's chunks with BM25.
type LocalRetriever struct {
	store LocalStore
	kbID  string
}

var _ Retriever = (*LocalRetriever)(nil)

// Search returns the chunks matching any term of query, best BM25 first;
// Score is the BM25 rank mapped onto [0, 1).
func (r *LocalRetriever) Search(ctx context.Context, query string, topK int) ([]Chunk, error) {
	terms := Terms(query)
	if len(terms) == 0 {
		return nil, errs.Errorf(errs.EINVALID, "the query %q has no searchable words", query)
	}
	hits, err := r.store.SearchKnowledgeChunks(ctx, r.kbID, terms, topK)
	if err != nil {
		return nil, err
	}
	out := make([]Chunk, 0, len(hits))
	for _, h := range hits {
		s := max(-h.BM25, 0)
		out = append(out, Chunk{
			Content: h.Content, Score: s / (1 + s), Title: h.Title, Source: h.Path,
			Metadata: map[string]any{"chunk": h.Seq, "bm25": h.BM25},
		})
	}
	return out, nil
}

// stopWords are dropped from queries: they match nearly every chunk.
var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an and are as at be by can do does for from has have how i in is it its
		me my of on or our so that the their there this to was we what when where which who why will with you your`) {
		stopWords[w] = true
	}
}

// Terms splits a query into lowercase search terms without stop words or
// repeats. A query of stop words only keeps them. A run of CJK characters,
// which has no spaces between words, becomes its overlapping character
// pairs ("年假几天" → 年假, 假几, 几天), so that a chunk sharing more of them
// ranks higher.
func Terms(query string) []string {
	var words []string
	for _, w := range strings.FieldsFunc(strings.ToLower(query), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_'
	}) {
		words = append(words, splitCJK(w)...)
	}
	var out, all []string
	for _, w := range words {
		if slices.Contains(all, w) {
			continue
		}
		all = append(all, w)
		if !stopWords[w] {
			out = append(out, w)
		}
	}
	if len(out) == 0 {
		return all
	}
	return out
}

// IngestReport says what an ingest changed.
type IngestReport struct {
	KB        string   `json:"kb"`
	Dir       string   `json:"dir"`
	Added     []string `json:"added"`
	Updated   []string `json:"updated"`
	Unchanged int      `json:"unchanged"`
	Removed   []string `json:"removed"`
	Chunks    int      `json:"chunks"` // chunks written by this ingest
	Skipped   []string `json:"skipped,omitempty"`
}

// Ingest brings the local knowledge base kb up to date with dir (kb's
// configured dir when empty): new and changed files (by content hash) are
// chunked and indexed, unchanged ones are left alone, and files that
// disappeared are removed.
func Ingest(ctx context.Context, st LocalStore, kb *store.KnowledgeBase, dir string) (*IngestReport, error) {
	if kb.Type != TypeLocal {
		return nil, errs.Errorf(errs.EINVALID, "knowledge base %s has type %s; only %s knowledge bases are ingested", kb.Name, kb.Type, TypeLocal)
	}
	var cfg LocalConfig
	if err := decodeConfig(kb.Config, &cfg); err != nil {
		return nil, fmt.Errorf("knowledge.Ingest %s: %w", kb.Name, err)
	}
	if err := cfg.defaults(); err != nil {
		return nil, fmt.Errorf("knowledge.Ingest %s: %w", kb.Name, err)
	}
	if dir == "" {
		dir = cfg.Dir
	}
	if dir == "" {
		return nil, errs.Errorf(errs.EINVALID, "knowledge base %s has no dir in its config; name the directory to ingest", kb.Name)
	}
	info, err := os.Stat(dir)
	if err != nil || !info.IsDir() {
		return nil, errs.Errorf(errs.EINVALID, "knowledge base %s: %s is not a readable directory", kb.Name, dir)
	}
	old, err := st.ListKnowledgeDocuments(ctx, kb.ID)
	if err != nil {
		return nil, err
	}
	known := make(map[string]string, len(old))
	for _, d := range old {
		known[d.Path] = d.Hash
	}
	rep := &IngestReport{KB: kb.Name, Dir: dir, Added: []string{}, Updated: []string{}, Removed: []string{}}
	seen := map[string]bool{}
	err = fs.WalkDir(os.DirFS(dir), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") && p != "." {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() || !d.Type().IsRegular() || !slices.Contains(cfg.Extensions, strings.ToLower(path.Ext(p))) {
			return nil
		}
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil {
			return err
		}
		if len(data) > maxDocumentBytes || !utf8.Valid(data) {
			rep.Skipped = append(rep.Skipped, p)
			return nil
		}
		seen[p] = true
		sum := sha256.Sum256(data)
		hash := hex.EncodeToString(sum[:])
		prev, exists := known[p]
		if exists && prev == hash {
			rep.Unchanged++
			return nil
		}
		title, chunks := SplitDocument(p, string(data), cfg.ChunkSize, cfg.ChunkOverlap)
		if err := st.PutKnowledgeDocument(ctx, kb.ID, &store.KnowledgeDocument{Path: p, Hash: hash, Title: title}, chunks); err != nil {
			return err
		}
		rep.Chunks += len(chunks)
		if exists {
			rep.Updated = append(rep.Updated, p)
		} else {
			rep.Added = append(rep.Added, p)
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return rep, err
		}
		return rep, fmt.Errorf("knowledge.Ingest %s: %w", kb.Name, err)
	}
	for _, d := range old {
		if !seen[d.Path] {
			if err := st.DeleteKnowledgeDocument(ctx, kb.ID, d.Path); err != nil {
				return rep, err
			}
			rep.Removed = append(rep.Removed, d.Path)
		}
	}
	return rep, nil
}

func isCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

// splitCJK splits a word at script changes, and each CJK run into its
// overlapping character pairs.
func splitCJK(w string) []string {
	if !strings.ContainsFunc(w, isCJK) {
		return []string{w}
	}
	var out []string
	var run []rune
	flush := func(cjk bool) {
		switch {
		case len(run) == 0:
		case !cjk || len(run) == 1:
			out = append(out, string(run))
		default:
			for i := 0; i+1 < len(run); i++ {
				out = append(out, string(run[i:i+2]))
			}
		}
		run = run[:0]
	}
	inCJK := false
	for _, r := range w {
		if c := isCJK(r); c != inCJK {
			flush(inCJK)
			inCJK = c
		}
		run = append(run, r)
	}
	flush(inCJK)
	return out
}
