package config

import (
	"fmt"
	"path/filepath"
	"slices"
	"time"
)

// ExternalMemory configures external memory: which providers a new session
// enables, their timeouts, the snapshot budgets of the file providers, the
// one active retrieval provider, and history compression.
//
//	external_memory:
//	  enabled: [builtin]            # the selection of a session that asks for none
//	  timeouts: {prefetch: 1500ms}
//	  provider_timeouts: {mem0: {prefetch: 3s}}
//	  builtin: {memory_chars: 4000, user_chars: 2000}
//	  retrieval:
//	    provider: holographic       # "", holographic, mem0 or honcho: at most one is active
//	  compression: {context_window: 128000, budget: 0.75}
type ExternalMemory struct {
	// Enabled is the selection of a session that asks for none: "builtin",
	// project names, and the active retrieval provider's name.
	Enabled []string `yaml:"enabled"`
	// Timeouts bound each operation on one provider.
	Timeouts MemoryTimeouts `yaml:"timeouts"`
	// ProviderTimeouts override Timeouts for one provider (non-zero fields).
	ProviderTimeouts map[string]MemoryTimeouts `yaml:"provider_timeouts"`
	// Builtin tunes $NAGENT_HOME/memory; Projects tunes $NAGENT_HOME/projects/<name>.
	Builtin  FileMemory `yaml:"builtin"`
	Projects FileMemory `yaml:"projects"`
	// Retrieval selects and configures the one active retrieval provider.
	Retrieval Retrieval `yaml:"retrieval"`
	// Compression keeps requests within a share of the context window.
	Compression Compression `yaml:"compression"`
}

// MemoryTimeouts bound external-memory operations on one provider.
type MemoryTimeouts struct {
	Snapshot    Duration `yaml:"snapshot"`
	Prefetch    Duration `yaml:"prefetch"`
	Sync        Duration `yaml:"sync"`
	PreCompress Duration `yaml:"pre_compress"`
	Tool        Duration `yaml:"tool"`
}

// FileMemory tunes a Markdown memory directory.
type FileMemory struct {
	// MemoryChars and UserChars bound memory.md's and user.md's blocks of
	// the static snapshot, in characters.
	MemoryChars int `yaml:"memory_chars"`
	UserChars   int `yaml:"user_chars"`
	// MaxFileChars bounds each file; writes past it are refused.
	MaxFileChars int `yaml:"max_file_chars"`
	// PrefetchChars and PrefetchEntries bound what a prefetch retrieves.
	PrefetchChars   int `yaml:"prefetch_chars"`
	PrefetchEntries int `yaml:"prefetch_entries"`
	// ObservationChars bounds observations.md (builtin only).
	ObservationChars int `yaml:"observation_chars"`
	// TrustHalfLife is how long an unconfirmed memory.md entry takes to
	// lose half its trust (builtin only).
	TrustHalfLife Duration `yaml:"trust_half_life"`
}

// Retrieval is the external-query provider configuration.
type Retrieval struct {
	// Provider is the active retrieval provider: "", "holographic", "mem0"
	// or "honcho". Only one can be active.
	Provider    string            `yaml:"provider"`
	Holographic HolographicConfig `yaml:"holographic"`
	Mem0        Mem0Config        `yaml:"mem0"`
	Honcho      HonchoConfig      `yaml:"honcho"`
}

// HolographicConfig tunes the holographic provider (facts in nagent.db).
type HolographicConfig struct {
	Dimensions int     `yaml:"dimensions"`
	TopK       int     `yaml:"top_k"`
	Candidates int     `yaml:"candidates"`
	MinScore   float64 `yaml:"min_score"`
}

// Mem0Config configures the mem0 provider (the Mem0 Platform REST API).
type Mem0Config struct {
	BaseURL   string `yaml:"base_url"`
	APIKey    string `yaml:"api_key"`
	UserID    string `yaml:"user_id"`
	AgentID   string `yaml:"agent_id"`
	TopK      int    `yaml:"top_k"`
	SyncTurns bool   `yaml:"sync_turns"`
}

// HonchoConfig configures the honcho provider (the Honcho v3 REST API).
type HonchoConfig struct {
	BaseURL         string `yaml:"base_url"`
	APIKey          string `yaml:"api_key"`
	WorkspaceID     string `yaml:"workspace_id"`
	PeerID          string `yaml:"peer_id"`
	AssistantPeerID string `yaml:"assistant_peer_id"`
	ReasoningLevel  string `yaml:"reasoning_level"`
	SyncTurns       bool   `yaml:"sync_turns"`
}

// Compression configures history compression.
type Compression struct {
	// Disabled turns compression off.
	Disabled bool `yaml:"disabled"`
	// ContextWindow is the model's context window in tokens.
	ContextWindow int `yaml:"context_window"`
	// Budget is the share of the context window a request may use before
	// its history is compressed (0 < budget ≤ 1).
	Budget float64 `yaml:"budget"`
	// TailFraction is the share of the budget kept as the recent tail.
	TailFraction float64 `yaml:"tail_fraction"`
	// KeepFirstTurns is how many turns at the start are always kept.
	KeepFirstTurns int `yaml:"keep_first_turns"`
	// Summarizer is "heuristic" (default) or "llm" (the configured model
	// writes the summary).
	Summarizer string `yaml:"summarizer"`
}

// retrievalProviders are the valid values of retrieval.provider.
var retrievalProviders = []string{"holographic", "mem0", "honcho"}

func defaultExternalMemory() ExternalMemory {
	return ExternalMemory{
		Enabled: []string{"builtin"},
		Timeouts: MemoryTimeouts{
			Snapshot:    Duration(3 * time.Second),
			Prefetch:    Duration(1500 * time.Millisecond),
			Sync:        Duration(5 * time.Second),
			PreCompress: Duration(10 * time.Second),
			Tool:        Duration(15 * time.Second),
		},
		Builtin:  FileMemory{MemoryChars: 4000, UserChars: 2000, MaxFileChars: 32000, PrefetchChars: 1500, PrefetchEntries: 5, ObservationChars: 8000, TrustHalfLife: Duration(90 * 24 * time.Hour)},
		Projects: FileMemory{MemoryChars: 4000, UserChars: 2000, MaxFileChars: 32000, PrefetchChars: 1500, PrefetchEntries: 5},
		Compression: Compression{
			ContextWindow:  128000,
			Budget:         0.75,
			TailFraction:   0.4,
			KeepFirstTurns: 1,
			Summarizer:     "heuristic",
		},
	}
}

func (m *ExternalMemory) applyEnv(getenv func(string) string) {
	first := func(keys ...string) string {
		for _, k := range keys {
			if v := getenv(k); v != "" {
				return v
			}
		}
		return ""
	}
	if v := first("NAGENT_MEM0_API_KEY", "MEM0_API_KEY"); v != "" {
		m.Retrieval.Mem0.APIKey = v
	}
	if v := first("NAGENT_HONCHO_API_KEY", "HONCHO_API_KEY"); v != "" {
		m.Retrieval.Honcho.APIKey = v
	}
}

// Validate checks the section: one retrieval provider at most, the one a
// default selection names, and the settings the active one needs.
func (m *ExternalMemory) Validate() error {
	r := m.Retrieval.Provider
	if r != "" && !slices.Contains(retrievalProviders, r) {
		return fmt.Errorf("config: external_memory.retrieval.provider is %q; use holographic, mem0, honcho or leave it empty", r)
	}
	for _, name := range m.Enabled {
		if slices.Contains(retrievalProviders, name) && name != r {
			active := "empty"
			if r != "" {
				active = r
			}
			return fmt.Errorf("config: external_memory.enabled lists %s, but external_memory.retrieval.provider is %s; "+
				"at most one retrieval provider is active, so set retrieval.provider to %s or remove it from enabled", name, active, name)
		}
	}
	for name := range m.ProviderTimeouts {
		if name == "" {
			return fmt.Errorf("config: external_memory.provider_timeouts has an empty provider name")
		}
	}
	switch r {
	case "mem0":
		if m.Retrieval.Mem0.APIKey == "" {
			return fmt.Errorf("config: external_memory.retrieval.mem0.api_key is not set: export NAGENT_MEM0_API_KEY (or MEM0_API_KEY)")
		}
	case "honcho":
		if m.Retrieval.Honcho.APIKey == "" && m.Retrieval.Honcho.BaseURL == "" {
			return fmt.Errorf("config: external_memory.retrieval.honcho.api_key is not set: export NAGENT_HONCHO_API_KEY (or HONCHO_API_KEY), " +
				"or point external_memory.retrieval.honcho.base_url at a self-hosted Honcho")
		}
	}
	c := m.Compression
	if c.Budget < 0 || c.Budget > 1 {
		return fmt.Errorf("config: external_memory.compression.budget is %v; it is a share of the context window between 0 and 1", c.Budget)
	}
	if c.TailFraction < 0 || c.TailFraction >= 1 {
		return fmt.Errorf("config: external_memory.compression.tail_fraction is %v; it must be between 0 and 1", c.TailFraction)
	}
	if c.Summarizer != "" && c.Summarizer != "heuristic" && c.Summarizer != "llm" {
		return fmt.Errorf("config: external_memory.compression.summarizer is %q; use heuristic or llm", c.Summarizer)
	}
	return nil
}

// MemoryDir is the builtin provider's directory.
func (c *Config) MemoryDir() string { return filepath.Join(c.Home, "memory") }

// ProjectsDir is the root of multi-project memory.
func (c *Config) ProjectsDir() string { return filepath.Join(c.Home, "projects") }
