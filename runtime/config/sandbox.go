package config

import (
	"fmt"
	"slices"
	"time"
)

// Sandbox configures execute_code (runtime/sandbox), under sandbox in
// config.yaml:
//
//	sandbox:
//	  backend: auto          # auto | local | docker | unisolated | off
//	  allow_unisolated: false
//	  idle_timeout: 10m
//	  timeout: 30s
//	  max_tool_calls: 20
//	  allowed_tools: [get_current_time, search_knowledge, skill_view, skills_list]
//	  limits: {cpu_seconds: 30, memory_bytes: 536870912, file_size_bytes: 67108864,
//	           open_files: 256, processes: 64, output_bytes: 65536}
type Sandbox struct {
	// Backend selects the isolation: auto picks the strongest that works
	// (docker, then local); local is Linux namespaces through bubblewrap;
	// unisolated is a plain subprocess and needs AllowUnisolated; off
	// removes execute_code.
	Backend string `yaml:"backend"`
	// AllowUnisolated lets auto fall back to, and backend unisolated use, a
	// plain subprocess with no isolation. Off by default.
	AllowUnisolated bool `yaml:"allow_unisolated"`
	// IdleTimeout releases a session's sandbox after this long unused.
	IdleTimeout Duration `yaml:"idle_timeout"`
	// Timeout is the default wall-clock limit of one execution; the tool
	// call's own timeout (agent.tool_timeout) still bounds it.
	Timeout Duration `yaml:"timeout"`
	// MaxToolCalls bounds the callbacks of one execution.
	MaxToolCalls int `yaml:"max_tool_calls"`
	// AllowedTools may be called back from sandboxed code (through the
	// policy again). execute_code itself is never allowed.
	AllowedTools []string `yaml:"allowed_tools"`
	// Python is the interpreter path inside the sandbox (default
	// /usr/bin/python3; an absolute path, not a pyenv shim).
	Python string        `yaml:"python"`
	Limits SandboxLimits `yaml:"limits"`
	// Docker configures the docker backend (see SandboxDocker).
	Docker SandboxDocker `yaml:"docker"`
}

// SandboxLimits bound one execution; zero fields take the sandbox defaults.
type SandboxLimits struct {
	CPUSeconds    int   `yaml:"cpu_seconds"`
	MemoryBytes   int64 `yaml:"memory_bytes"`
	FileSizeBytes int64 `yaml:"file_size_bytes"`
	OpenFiles     int   `yaml:"open_files"`
	Processes     int   `yaml:"processes"`
	OutputBytes   int   `yaml:"output_bytes"`
}

// SandboxBackends are the accepted values of sandbox.backend.
var SandboxBackends = []string{"auto", "local", "docker", "unisolated", "off"}

func defaultSandbox() Sandbox {
	return Sandbox{
		Backend:      "auto",
		IdleTimeout:  Duration(10 * time.Minute),
		Timeout:      Duration(30 * time.Second),
		MaxToolCalls: 20,
		AllowedTools: []string{"get_current_time", "search_knowledge", "skill_view", "skills_list"},
		Python:       "/usr/bin/python3",
	}
}

// Validate reports the first invalid sandbox setting.
func (s Sandbox) Validate() error {
	switch {
	case !slices.Contains(SandboxBackends, s.Backend):
		return fmt.Errorf("config: sandbox.backend is %q; use one of %v", s.Backend, SandboxBackends)
	case s.Backend == "unisolated" && !s.AllowUnisolated:
		return fmt.Errorf("config: sandbox.backend is unisolated, which runs model-written code with no isolation; set sandbox.allow_unisolated: true to accept that, or use auto, local or docker")
	case s.IdleTimeout.Std() < time.Second:
		return fmt.Errorf("config: sandbox.idle_timeout is %s; it must be at least 1s", s.IdleTimeout.Std())
	case s.Timeout.Std() < 100*time.Millisecond:
		return fmt.Errorf("config: sandbox.timeout is %s; it must be at least 100ms", s.Timeout.Std())
	case s.MaxToolCalls < 0:
		return fmt.Errorf("config: sandbox.max_tool_calls is %d; it must not be negative", s.MaxToolCalls)
	case slices.Contains(s.AllowedTools, "execute_code"):
		return fmt.Errorf("config: sandbox.allowed_tools lists execute_code; code in the sandbox may not start another sandbox, remove it")
	}
	return nil
}
