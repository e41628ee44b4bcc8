package config

// MCP configures the MCP client (runtime/mcp), under mcp in config.yaml.
type MCP struct {
	// HealthInterval is how often a connected site is pinged (default 15s).
	HealthInterval Duration `yaml:"health_interval"`
	// Sites are MCP servers by name; they shadow sites of the same name
	// added with `nagent mcp add`.
	Sites map[string]MCPSite `yaml:"sites"`
}

// MCPSite is one MCP server from config.yaml.
type MCPSite struct {
	// Transport is stdio, sse or streamable_http.
	Transport string            `yaml:"transport"`
	Command   string            `yaml:"command"`
	Args      []string          `yaml:"args"`
	Env       map[string]string `yaml:"env"`
	URL       string            `yaml:"url"`
	Headers   map[string]string `yaml:"headers"`
	// Enabled defaults to true.
	Enabled        *bool    `yaml:"enabled"`
	ConnectTimeout Duration `yaml:"connect_timeout"`
	CallTimeout    Duration `yaml:"call_timeout"`
}
