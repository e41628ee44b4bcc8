// Package holographic owns the holographic retrieval provider: facts in the
// local SQLite store with an FTS5 index and holographic reduced
// representation (HRR) vectors, and the MemoryRetriever that ranks them.
//
// # Scoring
//
// A query is split into terms (memory.Terms). Candidates are the facts
// whose terms match any query term in the FTS5 index, up to Candidates of
// them by bm25. An HRR vector built from deterministic atoms is lexical, so
// a fact that shares no term with the query has an expected similarity of
// zero; full-text candidate generation therefore loses nothing, and keeps
// a turn's cost independent of the number of facts. Each candidate is then
// scored with a documented blend:
//
//	score = (0.5 + 0.5·trust) × (0.40·fts + 0.30·lexical + 0.30·hrr)
//
//	fts     = b / (b + 1), b = −bm25 (SQLite's bm25 is ≤ 0, lower is better)
//	lexical = share of the query's distinct terms the fact contains
//	hrr     = max(0, cosine of the query's and the fact's HRR vectors),
//	          which also rewards shared word order (bound neighbour pairs)
//	trust   = the fact's trust in [0, 1]: 0.5 when added, +0.1 for each
//	          helpful feedback, −0.15 for each unhelpful one
//
// Facts scoring below MinScore are dropped; the best TopK are returned.
package holographic

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/nagent/nagent/runtime/memory"
	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/store"
)

// Name is the provider's name in a session's selection.
const Name = "holographic"

// Blend weights (see the package documentation).
const (
	WeightFTS     = 0.40
	WeightLexical = 0.30
	WeightHRR     = 0.30
	HelpfulStep   = 0.10
	UnhelpfulStep = -0.15
)

// Options tune the provider. Zero fields take the defaults.
type Options struct {
	Dimensions int     // HRR vector length, a power of two (default 256)
	TopK       int     // facts returned by a prefetch (default 5)
	Candidates int     // full-text candidates scored (default 64)
	MinScore   float64 // facts below are dropped (default 0.2)
}

// Provider is the holographic retrieval provider.
type Provider struct {
	db    *store.DB
	enc   *Encoder
	opts  Options
	tools []memory.ProviderTool

	mu      sync.RWMutex
	vectors map[int64][]float32 // facts' HRR vectors: immutable, so cached
}

// maxCachedVectors bounds the vector cache (1 KiB each at 256 dimensions).
const maxCachedVectors = 200_000

var (
	_ memory.Prefetcher   = (*Provider)(nil)
	_ memory.ToolProvider = (*Provider)(nil)
)

// New returns the provider over db.
func New(db *store.DB, opts Options) *Provider {
	if opts.TopK <= 0 {
		opts.TopK = 5
	}
	if opts.Candidates <= 0 {
		opts.Candidates = 64
	}
	if opts.MinScore <= 0 {
		opts.MinScore = 0.2
	}
	p := &Provider{db: db, enc: NewEncoder(opts.Dimensions), opts: opts, vectors: make(map[int64][]float32)}
	p.tools = p.buildTools()
	return p
}

// Name implements memory.Provider.
func (p *Provider) Name() string { return Name }

// Encoder is the provider's HRR encoder.
func (p *Provider) Encoder() *Encoder { return p.enc }

// Fact builds a storable fact: its terms and HRR vector.
func (p *Provider) Fact(content, category, sessionID string) *store.Fact {
	content = strings.TrimSpace(content)
	terms := memory.Terms(content)
	return &store.Fact{Content: content, Category: category, SessionID: sessionID,
		Terms: strings.Join(terms, " "), Vector: p.enc.Encode(terms)}
}

// Add stores facts (a fact already stored is kept as it is).
func (p *Provider) Add(ctx context.Context, facts ...*store.Fact) error {
	return p.db.AddFacts(ctx, facts...)
}

// Hit is one scored fact.
type Hit struct {
	ID       int64   `json:"id"`
	Content  string  `json:"content"`
	Category string  `json:"category,omitempty"`
	Score    float64 `json:"score"`
	Trust    float64 `json:"trust"`
	FTS      float64 `json:"fts"`
	Lexical  float64 `json:"lexical"`
	HRR      float64 `json:"hrr"`
}

// Search scores the candidates of query and returns the best limit hits
// that reach MinScore.
func (p *Provider) Search(ctx context.Context, query string, limit int) ([]Hit, error) {
	terms := memory.Terms(query)
	if len(terms) == 0 {
		return nil, nil
	}
	distinct := make([]string, 0, len(terms))
	qset := make(map[string]struct{}, len(terms))
	for _, t := range terms {
		if _, ok := qset[t]; !ok {
			qset[t] = struct{}{}
			distinct = append(distinct, t)
		}
	}
	cands, err := p.db.SearchFacts(ctx, distinct, p.opts.Candidates)
	if err != nil {
		return nil, err
	}
	vecs, err := p.vectorsOf(ctx, cands)
	if err != nil {
		return nil, err
	}
	qv := p.enc.Encode(terms)
	hits := make([]Hit, 0, len(cands))
	for _, f := range cands {
		b := max(0, -f.BM25)
		h := Hit{ID: f.ID, Content: f.Content, Category: f.Category, Trust: f.Trust,
			FTS: b / (b + 1), Lexical: memory.Overlap(qset, fieldSet(f.Terms)), HRR: max(0, Cosine(qv, vecs[f.ID]))}
		h.Score = (0.5 + 0.5*f.Trust) * (WeightFTS*h.FTS + WeightLexical*h.Lexical + WeightHRR*h.HRR)
		if h.Score >= p.opts.MinScore {
			hits = append(hits, h)
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].Score > hits[j].Score })
	if limit <= 0 {
		limit = p.opts.TopK
	}
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return hits, nil
}

// vectorsOf returns the candidates' vectors, from the cache or the store.
func (p *Provider) vectorsOf(ctx context.Context, cands []*store.Fact) (map[int64][]float32, error) {
	out := make(map[int64][]float32, len(cands))
	var missing []int64
	p.mu.RLock()
	for _, f := range cands {
		if v, ok := p.vectors[f.ID]; ok {
			out[f.ID] = v
		} else {
			missing = append(missing, f.ID)
		}
	}
	p.mu.RUnlock()
	if len(missing) == 0 {
		return out, nil
	}
	got, err := p.db.FactVectors(ctx, missing)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	if len(p.vectors)+len(got) > maxCachedVectors {
		clear(p.vectors)
	}
	for id, v := range got {
		p.vectors[id] = v
		out[id] = v
	}
	p.mu.Unlock()
	return out, nil
}

func fieldSet(terms string) map[string]struct{} {
	fs := strings.Fields(terms)
	m := make(map[string]struct{}, len(fs))
	for _, t := range fs {
		m[t] = struct{}{}
	}
	return m
}

// Prefetch implements memory.Prefetcher: the best facts for the query, one
// line each with its id (for fact_feedback).
func (p *Provider) Prefetch(ctx context.Context, q memory.PrefetchQuery) (string, error) {
	hits, err := p.Search(ctx, q.Query, p.opts.TopK)
	if err != nil {
		return "", err
	}
	lines := make([]string, len(hits))
	for i, h := range hits {
		lines[i] = fmt.Sprintf("- [fact %d] %s", h.ID, strings.ReplaceAll(h.Content, "\n", " "))
	}
	return strings.Join(lines, "\n"), nil
}

// Feedback records whether a fact helped and moves its trust.
func (p *Provider) Feedback(ctx context.Context, id int64, helpful bool) (*store.Fact, error) {
	delta := UnhelpfulStep
	if helpful {
		delta = HelpfulStep
	}
	return p.db.FactFeedback(ctx, id, helpful, delta)
}

// Tools implements memory.ToolProvider: fact_add, fact_search, fact_feedback.
func (p *Provider) Tools() []memory.ProviderTool { return p.tools }

func (p *Provider) buildTools() []memory.ProviderTool {
	def := func(name, desc, params string) tools.ToolDefinition {
		return tools.ToolDefinition{Name: name, Description: desc, Parameters: json.RawMessage(params),
			RiskLevel: tools.RiskLow, SourceType: tools.SourceBuiltin}
	}
	return []memory.ProviderTool{
		{
			Definition: def("fact_add", "Store a durable fact in long-term memory (the holographic fact store), to be recalled in later sessions when relevant.",
				`{"type":"object","properties":{"content":{"type":"string","description":"one self-contained fact"},"category":{"type":"string","description":"optional label such as preference, project, person"}},"required":["content"],"additionalProperties":false}`),
			Write: &memory.ToolWrite{Operation: "add", Target: "facts"},
			Executor: tools.ExecutorFunc(func(ctx context.Context, call tools.ToolCallRequest, ec tools.ExecutionContext) (string, error) {
				var a struct{ Content, Category string }
				if err := json.Unmarshal([]byte(call.Arguments), &a); err != nil || strings.TrimSpace(a.Content) == "" {
					return "", fmt.Errorf("give the fact to store in content")
				}
				f := p.Fact(a.Content, a.Category, ec.SessionID)
				if err := p.Add(ctx, f); err != nil {
					return "", err
				}
				return jsonString(map[string]any{"id": f.ID, "status": "stored"})
			}),
		},
		{
			Definition: def("fact_search", "Search long-term memory (the holographic fact store) for facts about a topic.",
				`{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":20}},"required":["query"],"additionalProperties":false}`),
			Executor: tools.ExecutorFunc(func(ctx context.Context, call tools.ToolCallRequest, _ tools.ExecutionContext) (string, error) {
				var a struct {
					Query string
					Limit int
				}
				if err := json.Unmarshal([]byte(call.Arguments), &a); err != nil {
					return "", fmt.Errorf("invalid arguments: %v", err)
				}
				hits, err := p.Search(ctx, a.Query, a.Limit)
				if err != nil {
					return "", err
				}
				if hits == nil {
					hits = []Hit{}
				}
				return jsonString(map[string]any{"facts": hits})
			}),
		},
		{
			Definition: def("fact_feedback", "Say whether a recalled fact was helpful; helpful facts gain trust and rank higher, unhelpful ones lose it.",
				`{"type":"object","properties":{"id":{"type":"integer"},"helpful":{"type":"boolean"}},"required":["id","helpful"],"additionalProperties":false}`),
			Write: &memory.ToolWrite{Operation: "feedback", Target: "facts"},
			Executor: tools.ExecutorFunc(func(ctx context.Context, call tools.ToolCallRequest, _ tools.ExecutionContext) (string, error) {
				var a struct {
					ID      int64 `json:"id"`
					Helpful bool  `json:"helpful"`
				}
				if err := json.Unmarshal([]byte(call.Arguments), &a); err != nil {
					return "", fmt.Errorf("invalid arguments: %v", err)
				}
				f, err := p.Feedback(ctx, a.ID, a.Helpful)
				if err != nil {
					return "", err
				}
				return jsonString(map[string]any{"id": f.ID, "trust": f.Trust, "helpful": f.Helpful, "unhelpful": f.Unhelpful})
			}),
		},
	}
}

func jsonString(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}
