package wasm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/nagent/nagent/runtime/tools"
)

// ManifestFile is the name of a plugin's manifest, next to its module.
const ManifestFile = "plugin.yaml"

// DefaultModule is the module file a manifest without "module" names.
const DefaultModule = "plugin.wasm"

// Limit defaults and bounds. A manifest may lower or raise a limit within
// the bounds.
const (
	DefaultMemoryMiB         = 64
	MaxMemoryMiB             = 4096
	DefaultTimeout           = 10 * time.Second
	MaxTimeout               = 10 * time.Minute
	DefaultOutputBytes       = 1 << 20
	MaxOutputBytes           = 64 << 20
	DefaultHTTPTimeout       = 10 * time.Second
	DefaultHTTPResponseBytes = 1 << 20
	MaxHTTPResponseBytes     = 64 << 20
)

// Manifest is a parsed and validated plugin.yaml.
type Manifest struct {
	Name        string `yaml:"name" json:"name"`
	Version     string `yaml:"version" json:"version"`
	Description string `yaml:"description" json:"description"`
	// Module is the WebAssembly file, relative to the manifest (default plugin.wasm).
	Module string `yaml:"module" json:"module"`
	// Check asks the host to run the module once at load with the request
	// {"tool": "nagent.check", ...}; an {"error"} result makes the plugin
	// unusable. A module may instead export nagent_check (see README.md).
	Check bool           `yaml:"check" json:"check,omitempty"`
	Tools []ManifestTool `yaml:"tools" json:"tools"`
	// Config is the JSON Schema of the plugin's configuration object, whose
	// values come from N-Agent's config (plugins.<name>.config).
	Config map[string]any `yaml:"config" json:"config,omitempty"`
	// Secrets names the secrets the plugin receives; their values come from
	// N-Agent's config or environment, never from the manifest.
	Secrets     []Secret    `yaml:"secrets" json:"secrets,omitempty"`
	Permissions Permissions `yaml:"permissions" json:"permissions"`
	Limits      Limits      `yaml:"limits" json:"limits"`

	configSchema *jsonschema.Schema
}

// ManifestTool is one tool a plugin exposes.
type ManifestTool struct {
	Name        string          `yaml:"name" json:"name"`
	Description string          `yaml:"description" json:"description"`
	Parameters  map[string]any  `yaml:"parameters" json:"parameters,omitempty"`
	RiskLevel   tools.RiskLevel `yaml:"risk_level" json:"risk_level"`
}

// Secret is one secret a plugin declares.
type Secret struct {
	Name        string `yaml:"name" json:"name"`
	Description string `yaml:"description" json:"description,omitempty"`
	// Optional secrets may be missing; a missing required one makes the
	// plugin unusable.
	Optional bool `yaml:"optional" json:"optional,omitempty"`
}

// Permissions is everything a plugin may reach beyond its own memory.
type Permissions struct {
	// AllowedHosts are glob patterns (path.Match) for nagent.http_request. A
	// pattern without a port matches the host name on any port; one with a
	// port ("127.0.0.1:*") matches host:port.
	AllowedHosts []string `yaml:"allowed_hosts" json:"allowed_hosts,omitempty"`
	// AllowedPaths are host directories mounted into the guest.
	AllowedPaths []PathGrant `yaml:"allowed_paths" json:"allowed_paths,omitempty"`
	// Env lists the environment variables passed from the host, by name.
	Env []string `yaml:"env" json:"env,omitempty"`
}

// PathGrant mounts a host directory at a guest path, read-only unless Writable.
type PathGrant struct {
	Host     string `yaml:"host" json:"host"`
	Guest    string `yaml:"guest" json:"guest"`
	Writable bool   `yaml:"writable" json:"writable,omitempty"`
}

// Limits bound one call. Zero fields take the defaults.
type Limits struct {
	MemoryMiB         int      `yaml:"memory_mib" json:"memory_mib"`
	Timeout           Duration `yaml:"timeout" json:"timeout"`
	OutputBytes       int      `yaml:"output_bytes" json:"output_bytes"`
	HTTPTimeout       Duration `yaml:"http_timeout" json:"http_timeout"`
	HTTPResponseBytes int      `yaml:"http_response_bytes" json:"http_response_bytes"`
}

// Duration is a time.Duration written as "5s" in YAML and JSON.
type Duration time.Duration

// UnmarshalYAML parses a Go duration such as "500ms" or "5s".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration such as 500ms or 5s", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

var (
	pluginNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	toolNamePattern   = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	envNamePattern    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// ManifestError is a manifest that failed validation; Field names the
// offending field, such as "tools[1].parameters".
type ManifestError struct {
	File    string
	Field   string
	Message string
}

func (e *ManifestError) Error() string {
	if e.Field == "" {
		return e.File + ": " + e.Message
	}
	return e.File + ": " + e.Field + ": " + e.Message
}

// ReadManifest reads and validates dir/plugin.yaml.
func ReadManifest(dir string) (*Manifest, error) {
	file := filepath.Join(dir, ManifestFile)
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("wasm.ReadManifest: %w", err)
	}
	return ParseManifest(file, data)
}

// ParseManifest parses and validates a manifest; file names it in errors.
// Unknown fields are rejected, so a misspelt key is not silently ignored.
func ParseManifest(file string, data []byte) (*Manifest, error) {
	var m Manifest
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &ManifestError{File: file, Message: "empty manifest; it needs at least name and tools"}
		}
		return nil, &ManifestError{File: file, Message: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if err := m.validate(); err != nil {
		err.File = file
		return nil, err
	}
	return &m, nil
}

func invalid(field, format string, args ...any) *ManifestError {
	return &ManifestError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// validate checks every field and fills in the defaults.
func (m *Manifest) validate() *ManifestError {
	switch {
	case m.Name == "":
		return invalid("name", "is required")
	case !pluginNamePattern.MatchString(m.Name):
		return invalid("name", "%q must be lower-case letters, digits, _ and -, starting with a letter or digit, at most 64 characters", m.Name)
	}
	if m.Module == "" {
		m.Module = DefaultModule
	}
	if m.Module != filepath.Base(m.Module) || !strings.HasSuffix(m.Module, ".wasm") {
		return invalid("module", "%q must be a .wasm file name next to plugin.yaml, without directories", m.Module)
	}
	if len(m.Tools) == 0 {
		return invalid("tools", "a plugin needs at least one tool")
	}
	seen := map[string]bool{}
	for i := range m.Tools {
		t := &m.Tools[i]
		field := fmt.Sprintf("tools[%d]", i)
		switch {
		case t.Name == "":
			return invalid(field+".name", "is required")
		case !toolNamePattern.MatchString(t.Name):
			return invalid(field+".name", "%q must be letters, digits, _ and -, at most 64 characters", t.Name)
		case seen[t.Name]:
			return invalid(field+".name", "%q appears twice", t.Name)
		case strings.TrimSpace(t.Description) == "":
			return invalid(field+".description", "is required: the model reads it to decide when to call %s", t.Name)
		}
		seen[t.Name] = true
		switch t.RiskLevel {
		case "":
			t.RiskLevel = tools.RiskMedium
		case tools.RiskSafe, tools.RiskLow, tools.RiskMedium, tools.RiskHigh:
		default:
			return invalid(field+".risk_level", "%q must be safe, low, medium or high", t.RiskLevel)
		}
		if t.Parameters == nil {
			t.Parameters = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		if typ, _ := t.Parameters["type"].(string); typ != "object" {
			return invalid(field+".parameters", `top-level "type" must be "object"`)
		}
		if _, err := compileSchema(t.Parameters); err != nil {
			return invalid(field+".parameters", "%v", err)
		}
	}
	if m.Config != nil {
		s, err := compileSchema(m.Config)
		if err != nil {
			return invalid("config", "%v", err)
		}
		m.configSchema = s
	}
	secrets := map[string]bool{}
	for i, s := range m.Secrets {
		field := fmt.Sprintf("secrets[%d].name", i)
		switch {
		case !envNamePattern.MatchString(s.Name):
			return invalid(field, "%q must be letters, digits and _, not starting with a digit", s.Name)
		case secrets[s.Name]:
			return invalid(field, "%q appears twice", s.Name)
		}
		secrets[s.Name] = true
	}
	if err := m.Permissions.validate(); err != nil {
		return err
	}
	return m.Limits.validate()
}

func (p *Permissions) validate() *ManifestError {
	for i, h := range p.AllowedHosts {
		field := fmt.Sprintf("permissions.allowed_hosts[%d]", i)
		if h == "" || strings.ContainsAny(h, "/@ ") {
			return invalid(field, "%q must be a host name pattern such as api.example.com, *.example.com or 127.0.0.1:*, without scheme or path", h)
		}
		if _, err := path.Match(strings.ToLower(h), ""); err != nil {
			return invalid(field, "%q is not a valid glob pattern: %v", h, err)
		}
	}
	guests := map[string]bool{}
	for i := range p.AllowedPaths {
		g := &p.AllowedPaths[i]
		field := fmt.Sprintf("permissions.allowed_paths[%d]", i)
		switch {
		case g.Host == "":
			return invalid(field+".host", "is required")
		case !filepath.IsAbs(g.Host):
			return invalid(field+".host", "%q must be an absolute path", g.Host)
		}
		if g.Guest == "" {
			g.Guest = g.Host
		}
		if !path.IsAbs(g.Guest) {
			return invalid(field+".guest", "%q must be an absolute path such as /data", g.Guest)
		}
		g.Host, g.Guest = filepath.Clean(g.Host), path.Clean(g.Guest)
		if guests[g.Guest] {
			return invalid(field+".guest", "%q is mounted twice", g.Guest)
		}
		guests[g.Guest] = true
	}
	for i, k := range p.Env {
		if !envNamePattern.MatchString(k) {
			return invalid(fmt.Sprintf("permissions.env[%d]", i), "%q is not an environment variable name", k)
		}
	}
	return nil
}

func (l *Limits) validate() *ManifestError {
	switch {
	case l.MemoryMiB == 0:
		l.MemoryMiB = DefaultMemoryMiB
	case l.MemoryMiB < 1 || l.MemoryMiB > MaxMemoryMiB:
		return invalid("limits.memory_mib", "%d must be between 1 and %d", l.MemoryMiB, MaxMemoryMiB)
	}
	switch {
	case l.Timeout == 0:
		l.Timeout = Duration(DefaultTimeout)
	case l.Timeout < Duration(time.Millisecond) || l.Timeout > Duration(MaxTimeout):
		return invalid("limits.timeout", "%s must be between 1ms and %s", l.Timeout.Std(), MaxTimeout)
	}
	switch {
	case l.OutputBytes == 0:
		l.OutputBytes = DefaultOutputBytes
	case l.OutputBytes < 64 || l.OutputBytes > MaxOutputBytes:
		return invalid("limits.output_bytes", "%d must be between 64 and %d", l.OutputBytes, MaxOutputBytes)
	}
	switch {
	case l.HTTPTimeout == 0:
		l.HTTPTimeout = Duration(DefaultHTTPTimeout)
	case l.HTTPTimeout < Duration(time.Millisecond) || l.HTTPTimeout > Duration(MaxTimeout):
		return invalid("limits.http_timeout", "%s must be between 1ms and %s", l.HTTPTimeout.Std(), MaxTimeout)
	}
	switch {
	case l.HTTPResponseBytes == 0:
		l.HTTPResponseBytes = DefaultHTTPResponseBytes
	case l.HTTPResponseBytes < 1 || l.HTTPResponseBytes > MaxHTTPResponseBytes:
		return invalid("limits.http_response_bytes", "%d must be between 1 and %d", l.HTTPResponseBytes, MaxHTTPResponseBytes)
	}
	return nil
}

// memoryPages is the memory limit in 64 KiB WebAssembly pages.
func (l Limits) memoryPages() uint32 { return uint32(l.MemoryMiB) * 16 }

// Definitions returns the plugin's tools as tool definitions of source plugin.
func (m *Manifest) Definitions() []tools.ToolDefinition {
	defs := make([]tools.ToolDefinition, len(m.Tools))
	for i, t := range m.Tools {
		params, _ := json.Marshal(t.Parameters) // validated: a JSON-compatible tree
		defs[i] = tools.ToolDefinition{
			Name: t.Name, Description: t.Description, Parameters: params,
			RiskLevel: t.RiskLevel, SourceType: tools.SourcePlugin,
		}
	}
	return defs
}

// refusingLoader keeps a manifest's schemas from loading anything by $ref.
type refusingLoader struct{}

func (refusingLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external $ref %q is not allowed", url)
}

// compileSchema compiles a JSON Schema given as a YAML-decoded tree.
func compileSchema(doc map[string]any) (*jsonschema.Schema, error) {
	// A JSON round trip turns YAML's ints into the json.Number the library wants.
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("not representable as JSON: %w", err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	const url = "mem:///schema.json"
	c := jsonschema.NewCompiler()
	c.UseLoader(refusingLoader{})
	if err := c.AddResource(url, v); err != nil {
		return nil, err
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("not a valid JSON Schema: %s", oneLine(err.Error()))
	}
	return s, nil
}

// oneLine flattens a multi-line library message.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
