package app

import (
	"fmt"

	"github.com/nagent/nagent/runtime/config"
	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/memory"
	"github.com/nagent/nagent/runtime/memory/builtin"
	"github.com/nagent/nagent/runtime/memory/holographic"
	"github.com/nagent/nagent/runtime/memory/honcho"
	"github.com/nagent/nagent/runtime/memory/mdfile"
	"github.com/nagent/nagent/runtime/memory/mem0"
	"github.com/nagent/nagent/runtime/memory/project"
	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/store"
)

// newExternalMemory wires external memory from cfg: the builtin provider,
// multi-project memory, the active retrieval provider, the manager with its
// tools registered in ts, and the history compressor.
func newExternalMemory(cfg *config.Config, db *store.DB, ts *tools.ToolService, provider llm.Provider, opts Options) (*memory.ExternalMemoryManager, *memory.HistoryCompressor, error) {
	em := cfg.ExternalMemory
	b := em.Builtin
	bi := builtin.New(cfg.MemoryDir(), builtin.Options{
		Options: mdfile.Options{
			MemoryChars: b.MemoryChars, UserChars: b.UserChars, MaxFileChars: b.MaxFileChars,
			PrefetchChars: b.PrefetchChars, PrefetchEntries: b.PrefetchEntries,
			HalfLife: b.TrustHalfLife.Std(), Now: opts.Now,
		},
		ObservationChars: b.ObservationChars,
	})
	p := em.Projects
	projects := project.New(cfg.ProjectsDir(), mdfile.Options{
		MemoryChars: p.MemoryChars, UserChars: p.UserChars, MaxFileChars: p.MaxFileChars,
		PrefetchChars: p.PrefetchChars, PrefetchEntries: p.PrefetchEntries, Now: opts.Now,
	})

	var retrieval memory.Provider
	switch r := em.Retrieval; r.Provider {
	case holographic.Name:
		h := r.Holographic
		retrieval = holographic.New(db, holographic.Options{Dimensions: h.Dimensions, TopK: h.TopK, Candidates: h.Candidates, MinScore: h.MinScore})
	case mem0.Name:
		m := r.Mem0
		retrieval = mem0.New(mem0.Options{BaseURL: m.BaseURL, APIKey: m.APIKey, UserID: m.UserID, AgentID: m.AgentID, TopK: m.TopK, SyncTurns: m.SyncTurns})
	case honcho.Name:
		h := r.Honcho
		retrieval = honcho.New(honcho.Options{BaseURL: h.BaseURL, APIKey: h.APIKey, WorkspaceID: h.WorkspaceID, PeerID: h.PeerID,
			AssistantPeerID: h.AssistantPeerID, ReasoningLevel: h.ReasoningLevel, SyncTurns: h.SyncTurns})
	}

	providerTimeouts := make(map[string]memory.Timeouts, len(em.ProviderTimeouts))
	for name, t := range em.ProviderTimeouts {
		providerTimeouts[name] = memoryTimeouts(t)
	}
	mgr := memory.NewExternalMemoryManager(memory.ManagerOptions{
		DB: db, Log: opts.Log, Now: opts.Now,
		Defaults:         em.Enabled,
		Timeouts:         memoryTimeouts(em.Timeouts),
		ProviderTimeouts: providerTimeouts,
		Builtin:          bi,
		Projects:         projects.Resolve,
		Retrieval:        retrieval,
		Extra:            opts.MemoryProviders,
		Policy:           opts.MemoryPolicy,
	})
	for _, t := range mgr.Tools() {
		if err := ts.Register(t.Definition, t.Executor); err != nil {
			return nil, nil, fmt.Errorf("app: external memory: %w", err)
		}
	}

	c := em.Compression
	if c.Disabled || c.ContextWindow <= 0 {
		return mgr, nil, nil
	}
	comp := &memory.HistoryCompressor{
		DB: db, External: mgr, ContextWindow: c.ContextWindow, Budget: c.Budget,
		TailFraction: c.TailFraction, KeepFirstTurns: c.KeepFirstTurns, Log: opts.Log,
	}
	if c.Summarizer == "llm" {
		comp.Summarizer = memory.LLMHistorySummarizer{Provider: provider, Model: cfg.LLM.Model}
	}
	return mgr, comp, nil
}

func memoryTimeouts(t config.MemoryTimeouts) memory.Timeouts {
	return memory.Timeouts{
		Snapshot: t.Snapshot.Std(), Prefetch: t.Prefetch.Std(), Sync: t.Sync.Std(),
		PreCompress: t.PreCompress.Std(), Tool: t.Tool.Std(),
	}
}
