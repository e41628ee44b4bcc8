package knowledge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/store"
)

// ToolName is the knowledge tool.
const ToolName = "search_knowledge"

// Search limits.
const (
	DefaultTopK     = 5
	MaxTopK         = 20
	maxChunkContent = 4000 // characters of one chunk fed to the model
)

// Registry is where knowledge-base instances and their secrets are kept;
// *store.DB is one.
type Registry interface {
	GetKnowledgeBase(ctx context.Context, idOrName string) (*store.KnowledgeBase, error)
	ListKnowledgeBases(ctx context.Context) ([]*store.KnowledgeBase, error)
	GetKnowledgeSecret(ctx context.Context, id string) (string, error)
}

// Slot is where the knowledge tool is published; *tools.ToolService is one.
type Slot interface {
	SetSlot(source tools.SourceType, defs []tools.ToolDefinition, exec tools.Executor) error
}

// Result is one chunk found by the knowledge service, with its knowledge base.
type Result struct {
	KBID   string `json:"kb_id"`
	KBName string `json:"kb_name"`
	Chunk
}

// KnowledgeService searches the registered knowledge bases.
type KnowledgeService struct {
	Registry  Registry
	Factories *Factories
	Log       *slog.Logger

	mu        sync.Mutex // serialises Publish
	published bool
	lastDefs  string // search_knowledge's description when last published
}

var _ tools.Executor = (*KnowledgeService)(nil)

// NewService returns a service over reg with the built-in retriever types:
// local (over st) and dify.
func NewService(reg Registry, st LocalStore, log *slog.Logger) *KnowledgeService {
	if log == nil {
		log = slog.Default()
	}
	f := &Factories{}
	f.Register(TypeLocal, LocalFactory{Store: st})
	f.Register(TypeDify, DifyFactory{})
	return &KnowledgeService{Registry: reg, Factories: f, Log: log}
}

// Search runs registry.get → get_secret → factory.create → retriever.search
// on one knowledge base (by id or name) and normalises the result: scores
// clamped to [0, 1], best first, at most topK, content capped. The secret
// never appears in an error.
func (s *KnowledgeService) Search(ctx context.Context, kbID, query string, topK int) ([]Result, error) {
	kb, err := s.Registry.GetKnowledgeBase(ctx, kbID)
	if err != nil {
		return nil, err
	}
	if !kb.Enabled {
		return nil, errs.Errorf(errs.EFORBIDDEN, "knowledge base %s is disabled", kb.Name)
	}
	return s.search(ctx, kb, query, topK)
}

func (s *KnowledgeService) search(ctx context.Context, kb *store.KnowledgeBase, query string, topK int) ([]Result, error) {
	topK = clampTopK(topK)
	if strings.TrimSpace(query) == "" {
		return nil, errs.Errorf(errs.EINVALID, "the query is empty")
	}
	inst := Instance{ID: kb.ID, Name: kb.Name, Config: kb.Config}
	factory, err := s.Factories.Get(kb.Type)
	if err != nil {
		return nil, kbError(kb, err, "")
	}
	secret, err := s.Registry.GetKnowledgeSecret(ctx, kb.ID)
	if err != nil {
		return nil, kbError(kb, err, "")
	}
	r, err := factory.Create(ctx, inst, secret)
	if err != nil {
		return nil, kbError(kb, err, secret)
	}
	chunks, err := r.Search(ctx, query, topK)
	if err != nil {
		return nil, kbError(kb, err, secret)
	}
	out := make([]Result, 0, len(chunks))
	for _, c := range chunks {
		if math.IsNaN(c.Score) {
			c.Score = 0
		}
		c.Score = math.Round(min(max(c.Score, 0), 1)*1e4) / 1e4
		if r := []rune(c.Content); len(r) > maxChunkContent {
			c.Content = string(r[:maxChunkContent]) + "…"
		}
		out = append(out, Result{KBID: kb.ID, KBName: kb.Name, Chunk: c})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	if len(out) > topK {
		out = out[:topK]
	}
	return out, nil
}

// kbError names the knowledge base in err's message, keeps its code, and
// removes the secret from it. The model and the operator read it.
func kbError(kb *store.KnowledgeBase, err error, secret string) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	return &errs.Error{Code: errs.Code(err),
		Message: fmt.Sprintf("knowledge base %s (%s): %s", kb.Name, kb.Type, redact(errs.MessageOrError(err), secret))}
}

func clampTopK(k int) int {
	if k <= 0 {
		return DefaultTopK
	}
	return min(k, MaxTopK)
}

// Enabled returns the enabled knowledge bases.
func (s *KnowledgeService) Enabled(ctx context.Context) ([]*store.KnowledgeBase, error) {
	all, err := s.Registry.ListKnowledgeBases(ctx)
	if err != nil {
		return nil, err
	}
	var out []*store.KnowledgeBase
	for _, kb := range all {
		if kb.Enabled {
			out = append(out, kb)
		}
	}
	return out, nil
}

// Publish registers search_knowledge in slot, listing the enabled
// knowledge bases in its description; with none, the slot is emptied. The
// slot is set again only when the definition changed since the last
// Publish, so calling it often is cheap.
func (s *KnowledgeService) Publish(ctx context.Context, slot Slot) error {
	kbs, err := s.Enabled(ctx)
	if err != nil {
		return fmt.Errorf("knowledge.Publish: %w", err)
	}
	var defs []tools.ToolDefinition
	key := ""
	if len(kbs) > 0 {
		defs = []tools.ToolDefinition{Definition(kbs)}
		key = defs[0].Description
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.published && key == s.lastDefs {
		return nil
	}
	if err := slot.SetSlot(tools.SourceKnowledge, defs, s); err != nil {
		return fmt.Errorf("knowledge.Publish: %w", err)
	}
	s.published, s.lastDefs = true, key
	return nil
}

// Definition is search_knowledge for the given knowledge bases.
func Definition(kbs []*store.KnowledgeBase) tools.ToolDefinition {
	var b strings.Builder
	b.WriteString("Search the knowledge bases for passages relevant to a query, best first. " +
		"Use distinctive key terms. Cite each passage's source in your answer. Knowledge bases:")
	for _, kb := range kbs {
		fmt.Fprintf(&b, "\n- %s (kb_id %q)", kb.Name, kb.Name)
		if d := strings.Join(strings.Fields(kb.Description), " "); d != "" {
			b.WriteString(": " + d)
		}
	}
	return tools.ToolDefinition{
		Name:        ToolName,
		Description: b.String(),
		Parameters: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
			`"query":{"type":"string","minLength":1,"description":"what to search for"},`+
			`"kb_id":{"type":"string","description":"one knowledge base to search; omit to search all"},`+
			`"top_k":{"type":"integer","minimum":1,"maximum":%d,"description":"how many passages (default %d)"}},`+
			`"required":["query"],"additionalProperties":false}`, MaxTopK, DefaultTopK)),
		RiskLevel:  tools.RiskSafe,
		SourceType: tools.SourceKnowledge,
	}
}

// searchOutput is search_knowledge's result.
type searchOutput struct {
	Query   string      `json:"query"`
	Results []Result    `json:"results"`
	Errors  []kbFailure `json:"errors,omitempty"`
}

type kbFailure struct {
	KBName string `json:"kb_name"`
	Error  string `json:"error"`
}

// Execute runs search_knowledge. With kb_id, a failure of that knowledge
// base is the call's error; without, each enabled knowledge base is
// searched and failures are reported next to the others' results, unless
// every one failed.
func (s *KnowledgeService) Execute(ctx context.Context, call tools.ToolCallRequest, _ tools.ExecutionContext) (string, error) {
	var args struct {
		Query string `json:"query"`
		KBID  string `json:"kb_id"`
		TopK  int    `json:"top_k"`
	}
	if err := json.Unmarshal([]byte(call.Arguments), &args); err != nil {
		return "", errs.Errorf(errs.EINVALID, "arguments: %v", err)
	}
	out := searchOutput{Query: args.Query, Results: []Result{}}
	if args.KBID != "" {
		res, err := s.Search(ctx, args.KBID, args.Query, args.TopK)
		if err != nil {
			s.logFailure(ctx, args.KBID, err)
			return "", errs.Errorf(errs.Code(err), "%s", errs.MessageOrError(err))
		}
		out.Results = res
	} else {
		kbs, err := s.Enabled(ctx)
		if err != nil {
			return "", err
		}
		if len(kbs) == 0 {
			return "", errs.Errorf(errs.ENOTFOUND, "no knowledge base is enabled")
		}
		var wg sync.WaitGroup
		results := make([][]Result, len(kbs))
		failures := make([]error, len(kbs))
		for i, kb := range kbs {
			wg.Go(func() { results[i], failures[i] = s.search(ctx, kb, args.Query, args.TopK) })
		}
		wg.Wait()
		for i, kb := range kbs {
			if failures[i] != nil {
				s.logFailure(ctx, kb.Name, failures[i])
				out.Errors = append(out.Errors, kbFailure{KBName: kb.Name, Error: errs.MessageOrError(failures[i])})
				continue
			}
			out.Results = append(out.Results, results[i]...)
		}
		if len(out.Errors) == len(kbs) {
			return "", errors.New(out.Errors[0].Error + joinRest(out.Errors[1:]))
		}
		sort.SliceStable(out.Results, func(i, j int) bool { return out.Results[i].Score > out.Results[j].Score })
		if k := clampTopK(args.TopK); len(out.Results) > k {
			out.Results = out.Results[:k]
		}
	}
	b, err := json.Marshal(out)
	return string(b), err
}

func joinRest(fs []kbFailure) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString("; " + f.Error)
	}
	return b.String()
}

func (s *KnowledgeService) logFailure(ctx context.Context, kb string, err error) {
	s.Log.WarnContext(ctx, "knowledge search failed", "kb", kb, "code", errs.Code(err), "err", errs.MessageOrError(err))
}
