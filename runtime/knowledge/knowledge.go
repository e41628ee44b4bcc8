// Package knowledge owns the Knowledge domain: the retriever SPI, the
// registry of retriever types, the knowledge-base instances stored in
// SQLite, and the search_knowledge tool that searches them.
package knowledge

import (
	"context"
	"encoding/json"
	"sort"
	"sync"

	"github.com/nagent/nagent/runtime/errs"
)

// Chunk is one retrieved passage.
type Chunk struct {
	Content string `json:"content"`
	// Score is the relevance in [0, 1], higher is better, after normalising.
	Score float64 `json:"score"`
	Title string  `json:"title,omitempty"`
	// Source says where the passage comes from: a path, a URL, a document id.
	Source   string         `json:"source,omitempty"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

// Retriever searches one knowledge base.
type Retriever interface {
	// Search returns up to topK chunks relevant to query, best first.
	Search(ctx context.Context, query string, topK int) ([]Chunk, error)
}

// Instance is what a factory is given to build a retriever: the stored
// knowledge base without its secret.
type Instance struct {
	ID     string
	Name   string
	Config json.RawMessage
}

// Factory builds the retriever of one knowledge-base type.
type Factory interface {
	// Create returns a retriever for kb, authenticated with secret.
	Create(ctx context.Context, kb Instance, secret string) (Retriever, error)
	// Validate checks a configuration before a knowledge base is stored.
	Validate(config json.RawMessage) error
}

// Factories is the registry of retriever types, keyed by type name. It is
// safe for concurrent use.
type Factories struct {
	mu sync.RWMutex
	m  map[string]Factory
}

// Register adds or replaces the factory of typ.
func (f *Factories) Register(typ string, factory Factory) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = make(map[string]Factory)
	}
	f.m[typ] = factory
}

// Get returns the factory of typ, or an EINVALID error naming the known types.
func (f *Factories) Get(typ string) (Factory, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if factory, ok := f.m[typ]; ok {
		return factory, nil
	}
	return nil, errs.Errorf(errs.EINVALID, "unknown knowledge base type %q; known types: %v", typ, f.typesLocked())
}

// Types returns the registered type names, sorted.
func (f *Factories) Types() []string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.typesLocked()
}

func (f *Factories) typesLocked() []string {
	out := make([]string, 0, len(f.m))
	for t := range f.m {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// decodeConfig decodes a knowledge base's JSON config strictly.
func decodeConfig(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		raw = json.RawMessage(`{}`)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return errs.Errorf(errs.EINVALID, "config: %v", err)
	}
	return nil
}
