package config

import "path/filepath"

// Plugin holds what N-Agent's configuration gives one WASM plugin, under
// plugins.<name> in config.yaml. Values never come from the plugin's own
// manifest.
type Plugin struct {
	// Config is checked against the config schema in the plugin's manifest.
	Config map[string]any `yaml:"config"`
	// Secrets maps a secret the manifest declares to its value. A secret
	// may instead come from NAGENT_PLUGIN_<PLUGIN>_<SECRET>.
	Secrets map[string]string `yaml:"secrets"`
}

// PluginsDir holds one directory per installed WASM plugin.
func (c *Config) PluginsDir() string { return filepath.Join(c.Home, "plugins") }

// PluginCacheDir keeps compiled plugin code between runs.
func (c *Config) PluginCacheDir() string { return filepath.Join(c.Home, "cache", "wasm") }
