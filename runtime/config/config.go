// Package config owns the Environment domain: where N-Agent keeps its data,
// which model it talks to, and the limits of a run. Values come from
// $NAGENT_HOME/config.yaml, overridden by environment variables.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/nagent/nagent/runtime/llm"
)

// Config is the whole runtime configuration.
type Config struct {
	// Home is the data directory ($NAGENT_HOME, default ~/.nagent).
	Home string `yaml:"-"`
	// File is the config file that was read, or "" when none exists.
	File string `yaml:"-"`

	LLM            LLM            `yaml:"llm"`
	Agent          Agent          `yaml:"agent"`
	Server         Server         `yaml:"server"`
	ExternalMemory ExternalMemory `yaml:"external_memory"`
	// Plugins configures WASM plugins by name (see Plugin).
	Plugins map[string]Plugin `yaml:"plugins"`
	// MCP lists MCP servers whose tools join the mcp slot (see MCP).
	MCP MCP `yaml:"mcp"`
	// Skills adds skill directories (see Skills).
	Skills Skills `yaml:"skills"`
	// Web tunes the browser dashboard (see Web).
	Web Web `yaml:"web"`
	// Feishu configures the Feishu bot (see Feishu).
	Feishu Feishu `yaml:"feishu"`
	// Scheduler configures scheduled runs (see Scheduler).
	Scheduler Scheduler `yaml:"scheduler"`
	// Sandbox configures execute_code (see Sandbox).
	Sandbox Sandbox `yaml:"sandbox"`
}

// LLM selects and tunes the model provider.
type LLM struct {
	// Provider is "openai" (any OpenAI-compatible endpoint) or "anthropic".
	Provider string `yaml:"provider"`
	BaseURL  string `yaml:"base_url"`
	APIKey   string `yaml:"api_key"`
	Model    string `yaml:"model"`
	// Aliases maps extra model names that clients may ask for onto Model.
	Aliases []string `yaml:"aliases"`
	// Models lists other models of the same provider that the terminal
	// UI's model picker offers besides Model (optional).
	Models []string             `yaml:"models"`
	Params llm.GenerationParams `yaml:"params"`
	// Timeout bounds one provider attempt.
	Timeout Duration `yaml:"timeout"`
	// MaxAttempts bounds retries on 429, 5xx and connection errors.
	MaxAttempts int `yaml:"max_attempts"`
	// RetryBaseDelay is the first backoff delay; later ones grow exponentially.
	RetryBaseDelay Duration `yaml:"retry_base_delay"`
}

// Agent bounds a run.
type Agent struct {
	// MaxIterations is the iteration limit of one turn (model calls).
	MaxIterations int `yaml:"max_iterations"`
	// TurnTimeout bounds a whole turn; zero means no bound beyond the caller's.
	TurnTimeout Duration `yaml:"turn_timeout"`
	// ToolTimeout bounds one tool call unless the policy sets its own timeout_ms.
	ToolTimeout Duration `yaml:"tool_timeout"`
	// MaxToolResultBytes caps what one tool result may feed back to the model.
	MaxToolResultBytes int `yaml:"max_tool_result_bytes"`
}

// Server configures `nagent serve`.
type Server struct {
	Addr    string   `yaml:"addr"`
	APIKeys []string `yaml:"api_keys"`
	// MaxQueuedPerSession is how many requests may wait behind a running turn
	// of one session before the server answers 429.
	MaxQueuedPerSession int `yaml:"max_queued_per_session"`
	// MaxConcurrentTurns bounds turns running at once across sessions.
	MaxConcurrentTurns int `yaml:"max_concurrent_turns"`
	// ShutdownGrace is how long in-flight turns may finish on shutdown.
	ShutdownGrace Duration `yaml:"shutdown_grace"`
}

// Duration is a time.Duration written as "30s" or "2m" in YAML.
type Duration time.Duration

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration such as 30s or 2m", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// Defaults returns the configuration used when nothing is set.
func Defaults() Config {
	return Config{
		LLM: LLM{
			Provider:    "openai",
			Timeout:     Duration(120 * time.Second),
			MaxAttempts: 4,
		},
		Agent: Agent{
			MaxIterations:      30,
			ToolTimeout:        Duration(60 * time.Second),
			MaxToolResultBytes: 32 << 10,
		},
		Server: Server{
			Addr:                "127.0.0.1:8080",
			MaxQueuedPerSession: 8,
			MaxConcurrentTurns:  64,
			ShutdownGrace:       Duration(10 * time.Second),
		},
		ExternalMemory: defaultExternalMemory(),
		Scheduler:      defaultScheduler(),
		Sandbox:        defaultSandbox(),
	}
}

// Load reads the configuration for the current environment: the data
// directory from NAGENT_HOME, config.yaml inside it if present, then
// environment overrides. It does not require any LLM setting; callers that
// talk to a model call RequireLLM.
func Load() (*Config, error) {
	return LoadEnv(os.Getenv)
}

// LoadEnv is Load with an explicit environment lookup, for tests.
func LoadEnv(getenv func(string) string) (*Config, error) {
	cfg := Defaults()
	home := getenv("NAGENT_HOME")
	if home == "" {
		dir, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("config: cannot find a home directory; set NAGENT_HOME: %w", err)
		}
		home = filepath.Join(dir, ".nagent")
	}
	cfg.Home = home

	path := filepath.Join(home, "config.yaml")
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("config: %w", err)
	default:
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("config: %s: %w", path, err)
		}
		cfg.File = path
	}
	if err := cfg.applyEnv(getenv); err != nil {
		return nil, err
	}
	cfg.ExternalMemory.applyEnv(getenv)
	cfg.Feishu.applyEnv(getenv)
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &cfg, nil
}

func (c *Config) applyEnv(getenv func(string) string) error {
	first := func(keys ...string) string {
		for _, k := range keys {
			if v := getenv(k); v != "" {
				return v
			}
		}
		return ""
	}
	if v := first("NAGENT_LLM_PROVIDER"); v != "" {
		c.LLM.Provider = v
	}
	if v := first("NAGENT_LLM_BASE_URL", "OPENAI_BASE_URL"); v != "" {
		c.LLM.BaseURL = v
	}
	if v := first("NAGENT_LLM_API_KEY", "OPENAI_API_KEY"); v != "" {
		c.LLM.APIKey = v
	}
	if v := first("NAGENT_LLM_MODEL"); v != "" {
		c.LLM.Model = v
	}
	if v := first("NAGENT_MAX_ITERATIONS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("config: NAGENT_MAX_ITERATIONS=%q is not a whole number", v)
		}
		c.Agent.MaxIterations = n
	}
	if v := first("NAGENT_API_KEYS"); v != "" {
		c.Server.APIKeys = nil
		for _, k := range strings.Split(v, ",") {
			if k = strings.TrimSpace(k); k != "" {
				c.Server.APIKeys = append(c.Server.APIKeys, k)
			}
		}
	}
	if v := first("NAGENT_ADDR"); v != "" {
		c.Server.Addr = v
	}
	return nil
}

func (c *Config) validate() error {
	switch c.LLM.Provider {
	case "openai", "anthropic":
	default:
		return fmt.Errorf("config: llm.provider is %q; use \"openai\" (any OpenAI-compatible endpoint) or \"anthropic\"", c.LLM.Provider)
	}
	if c.Agent.MaxIterations < 1 {
		return fmt.Errorf("config: agent.max_iterations is %d; it must be at least 1", c.Agent.MaxIterations)
	}
	if c.LLM.MaxAttempts < 1 {
		return fmt.Errorf("config: llm.max_attempts is %d; it must be at least 1", c.LLM.MaxAttempts)
	}
	if err := c.Scheduler.Validate(); err != nil {
		return err
	}
	if err := c.Sandbox.Validate(); err != nil {
		return err
	}
	return c.ExternalMemory.Validate()
}

// Default base URLs, used when llm.base_url is not set.
const (
	DefaultOpenAIBaseURL    = "https://api.openai.com/v1"
	DefaultAnthropicBaseURL = "https://api.anthropic.com"
)

// RequireLLM reports the first missing setting needed to call a model, naming
// the setting and how to provide it. An unset llm.base_url becomes the
// provider's public endpoint (DefaultOpenAIBaseURL, DefaultAnthropicBaseURL).
func (c *Config) RequireLLM() error {
	if c.LLM.BaseURL == "" {
		if c.LLM.Provider == "anthropic" {
			c.LLM.BaseURL = DefaultAnthropicBaseURL
		} else {
			c.LLM.BaseURL = DefaultOpenAIBaseURL
		}
	}
	if c.LLM.Model == "" {
		return fmt.Errorf("config: llm.model is not set: export NAGENT_LLM_MODEL, e.g. gpt-4o-mini, or set llm.model in %s", filepath.Join(c.Home, "config.yaml"))
	}
	return nil
}

// DBPath is the SQLite file of session memory.
func (c *Config) DBPath() string { return filepath.Join(c.Home, "nagent.db") }
