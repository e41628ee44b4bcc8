package mcp_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/config"
	"github.com/nagent/nagent/runtime/mcp"
)

func TestConfigSites(t *testing.T) {
	home := t.TempDir()
	const yaml = `
mcp:
  health_interval: 5s
  sites:
    everything:
      transport: stdio
      command: npx
      args: [mcp-server-everything, stdio]
      env: {TOKEN: x}
      call_timeout: 90s
    web:
      transport: streamable_http
      url: http://127.0.0.1:3001/mcp
      enabled: false
`
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.LoadEnv(func(k string) string { return map[string]string{"NAGENT_HOME": home}[k] })
	if err != nil {
		t.Fatal(err)
	}
	sites, err := mcp.ConfigSites(cfg.MCP)
	if err != nil {
		t.Fatal(err)
	}
	if len(sites) != 2 || cfg.MCP.HealthInterval.Std() != 5*time.Second {
		t.Fatalf("sites = %+v", sites)
	}
	if s := sites[0]; s.Name != "everything" || !s.Enabled || s.Args[1] != "stdio" || s.Env["TOKEN"] != "x" || s.CallTimeout != 90*time.Second || s.Source != "config" {
		t.Errorf("everything = %+v", s)
	}
	if s := sites[1]; s.Name != "web" || s.Enabled || s.Transport != mcp.TransportStreamableHTTP {
		t.Errorf("web = %+v", s)
	}

	t.Run("ErrInvalidSite", func(t *testing.T) {
		_, err := mcp.ConfigSites(config.MCP{Sites: map[string]config.MCPSite{"x": {Transport: "stdio"}}})
		if err == nil || err.Error() != "config: mcp.sites.x: MCP site x: transport stdio needs a command" {
			t.Errorf("err = %v", err)
		}
	})
}
