package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/config"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func writeConfig(tb testing.TB, body string) string {
	tb.Helper()
	home := tb.TempDir()
	if body != "" {
		if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(body), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	return home
}

func TestDefaultsNeedNoFile(t *testing.T) {
	home := writeConfig(t, "")
	cfg, err := config.LoadEnv(envOf(map[string]string{"NAGENT_HOME": home}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Agent.MaxIterations != 30 || cfg.Server.Addr != "127.0.0.1:8080" || cfg.File != "" {
		t.Errorf("defaults = %+v", cfg)
	}
	if cfg.DBPath() != filepath.Join(home, "nagent.db") {
		t.Errorf("DBPath = %s", cfg.DBPath())
	}
	err = cfg.RequireLLM()
	if err == nil || !strings.Contains(err.Error(), "llm.model") || !strings.Contains(err.Error(), "NAGENT_LLM_MODEL") {
		t.Errorf("RequireLLM = %v, want it to name the setting and the variable", err)
	}
}

// The README's config block promises defaults for everything but the model:
// api_key and model are enough for either provider.
var baseURLDefaultTests = []struct {
	name, file, want string
}{
	{"OpenAI", "llm:\n  api_key: sk-1\n  model: gpt-4o-mini\n", config.DefaultOpenAIBaseURL},
	{"Anthropic", "llm:\n  provider: anthropic\n  api_key: sk-1\n  model: claude\n", config.DefaultAnthropicBaseURL},
	{"Explicit", "llm:\n  base_url: http://local/v1\n  model: m\n", "http://local/v1"},
}

func TestBaseURLDefault(t *testing.T) {
	for _, tt := range baseURLDefaultTests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.LoadEnv(envOf(map[string]string{"NAGENT_HOME": writeConfig(t, tt.file)}))
			if err != nil {
				t.Fatal(err)
			}
			if err := cfg.RequireLLM(); err != nil {
				t.Fatalf("RequireLLM = %v", err)
			}
			if cfg.LLM.BaseURL != tt.want {
				t.Errorf("base_url = %q, want %q", cfg.LLM.BaseURL, tt.want)
			}
		})
	}
}

var precedenceTests = []struct {
	name string
	file string
	env  map[string]string
	want func(*config.Config) bool
}{
	{"FileOnly", "llm:\n  base_url: http://file/v1\n  model: file-model\n", nil,
		func(c *config.Config) bool { return c.LLM.BaseURL == "http://file/v1" && c.LLM.Model == "file-model" }},
	{"EnvBeatsFile", "llm:\n  base_url: http://file/v1\n", map[string]string{"NAGENT_LLM_BASE_URL": "http://env/v1"},
		func(c *config.Config) bool { return c.LLM.BaseURL == "http://env/v1" }},
	{"OpenAIFallbacks", "", map[string]string{"OPENAI_BASE_URL": "http://oai/v1", "OPENAI_API_KEY": "sk-1"},
		func(c *config.Config) bool { return c.LLM.BaseURL == "http://oai/v1" && c.LLM.APIKey == "sk-1" }},
	{"NagentBeatsOpenAI", "", map[string]string{"OPENAI_API_KEY": "sk-1", "NAGENT_LLM_API_KEY": "sk-2"},
		func(c *config.Config) bool { return c.LLM.APIKey == "sk-2" }},
	{"GenerationParams", "llm:\n  params:\n    temperature: 0.2\n    max_tokens: 100\n    stop: [x]\n", nil,
		func(c *config.Config) bool {
			p := c.LLM.Params
			return *p.Temperature == 0.2 && *p.MaxTokens == 100 && p.Stop[0] == "x" && p.TopP == nil
		}},
	{"Durations", "llm:\n  timeout: 3s\nagent:\n  turn_timeout: 2m\n", nil,
		func(c *config.Config) bool {
			return c.LLM.Timeout.Std() == 3*time.Second && c.Agent.TurnTimeout.Std() == 2*time.Minute
		}},
	{"APIKeysFromEnv", "", map[string]string{"NAGENT_API_KEYS": "k1, k2,"},
		func(c *config.Config) bool { return len(c.Server.APIKeys) == 2 && c.Server.APIKeys[1] == "k2" }},
}

func TestPrecedence(t *testing.T) {
	for _, tt := range precedenceTests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"NAGENT_HOME": writeConfig(t, tt.file)}
			for k, v := range tt.env {
				env[k] = v
			}
			cfg, err := config.LoadEnv(envOf(env))
			if err != nil {
				t.Fatal(err)
			}
			if !tt.want(cfg) {
				t.Errorf("config = %+v", cfg.LLM)
			}
		})
	}
}

var badConfigTests = []struct {
	name, file string
	env        map[string]string
	says       string
}{
	{"UnknownKey", "llm:\n  modle: x\n", nil, "modle"},
	{"BadDuration", "llm:\n  timeout: soon\n", nil, "not a duration"},
	{"BadProvider", "llm:\n  provider: gemini\n", nil, "llm.provider"},
	{"ZeroIterations", "agent:\n  max_iterations: 0\n", nil, "agent.max_iterations"},
	{"BadIterationsEnv", "", map[string]string{"NAGENT_MAX_ITERATIONS": "many"}, "NAGENT_MAX_ITERATIONS"},
}

func TestBadConfigNamesTheProblem(t *testing.T) {
	for _, tt := range badConfigTests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"NAGENT_HOME": writeConfig(t, tt.file)}
			for k, v := range tt.env {
				env[k] = v
			}
			_, err := config.LoadEnv(envOf(env))
			if err == nil || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("err = %v, want it to mention %q", err, tt.says)
			}
		})
	}
}
