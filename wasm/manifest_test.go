package wasm_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/nagent/nagent/wasm"
)

const validManifest = `
name: demo
version: 0.1.0
description: demo plugin
tools:
  - name: hello
    description: says hello
`

// manifestTests: each invalid manifest is rejected with the field it names.
var manifestTests = []struct {
	name   string
	yaml   string
	field  string // want ManifestError.Field
	substr string // in the message
}{
	{"ErrNameRequired", "tools: [{name: a, description: b}]", "name", "is required"},
	{"ErrNameInvalid", "name: Demo Plugin\ntools: [{name: a, description: b}]", "name", "lower-case"},
	{"ErrNoTools", "name: demo", "tools", "at least one tool"},
	{"ErrToolName", "name: demo\ntools: [{name: 'say hi', description: b}]", "tools[0].name", "letters, digits"},
	{"ErrToolTwice", "name: demo\ntools: [{name: a, description: b}, {name: a, description: c}]", "tools[1].name", "appears twice"},
	{"ErrToolDescription", "name: demo\ntools: [{name: a}]", "tools[0].description", "is required"},
	{"ErrRiskLevel", "name: demo\ntools: [{name: a, description: b, risk_level: extreme}]", "tools[0].risk_level", "safe, low, medium or high"},
	{"ErrParametersNotObject", "name: demo\ntools: [{name: a, description: b, parameters: {type: string}}]", "tools[0].parameters", `"type" must be "object"`},
	{"ErrParametersSchema", "name: demo\ntools: [{name: a, description: b, parameters: {type: object, properties: {x: {type: 12}}}}]", "tools[0].parameters", "not a valid JSON Schema"},
	{"ErrModulePath", "name: demo\nmodule: ../x.wasm\ntools: [{name: a, description: b}]", "module", "without directories"},
	{"ErrConfigSchema", "name: demo\nconfig: {type: 3}\ntools: [{name: a, description: b}]", "config", "not a valid JSON Schema"},
	{"ErrSecretName", "name: demo\nsecrets: [{name: 'api-key'}]\ntools: [{name: a, description: b}]", "secrets[0].name", "letters, digits and _"},
	{"ErrAllowedHost", "name: demo\npermissions: {allowed_hosts: ['https://x.com/']}\ntools: [{name: a, description: b}]", "permissions.allowed_hosts[0]", "without scheme or path"},
	{"ErrAllowedHostGlob", "name: demo\npermissions: {allowed_hosts: ['[x']}\ntools: [{name: a, description: b}]", "permissions.allowed_hosts[0]", "not a valid glob"},
	{"ErrPathRelative", "name: demo\npermissions: {allowed_paths: [{host: data, guest: /data}]}\ntools: [{name: a, description: b}]", "permissions.allowed_paths[0].host", "absolute path"},
	{"ErrGuestTwice", "name: demo\npermissions: {allowed_paths: [{host: /a, guest: /d}, {host: /b, guest: /d/}]}\ntools: [{name: a, description: b}]", "permissions.allowed_paths[1].guest", "mounted twice"},
	{"ErrEnvName", "name: demo\npermissions: {env: ['A=B']}\ntools: [{name: a, description: b}]", "permissions.env[0]", "not an environment variable name"},
	{"ErrMemory", "name: demo\nlimits: {memory_mib: 100000}\ntools: [{name: a, description: b}]", "limits.memory_mib", "between 1 and"},
	{"ErrTimeout", "name: demo\nlimits: {timeout: 1h}\ntools: [{name: a, description: b}]", "limits.timeout", "between 1ms and"},
	{"ErrOutput", "name: demo\nlimits: {output_bytes: 10}\ntools: [{name: a, description: b}]", "limits.output_bytes", "between 64 and"},
}

func TestParseManifestErrors(t *testing.T) {
	for _, tt := range manifestTests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := wasm.ParseManifest("plugin.yaml", []byte(tt.yaml))
			var me *wasm.ManifestError
			if !errors.As(err, &me) {
				t.Fatalf("err = %v, want a ManifestError", err)
			}
			if me.Field != tt.field || !strings.Contains(me.Message, tt.substr) {
				t.Errorf("err = %q (field %q), want field %q and %q", err, me.Field, tt.field, tt.substr)
			}
			if !strings.HasPrefix(err.Error(), "plugin.yaml: "+tt.field) {
				t.Errorf("message %q does not start with the file and field", err)
			}
		})
	}
	t.Run("ErrUnknownField", func(t *testing.T) {
		_, err := wasm.ParseManifest("plugin.yaml", []byte(validManifest+"colour: blue\n"))
		if err == nil || !strings.Contains(err.Error(), "field colour not found") {
			t.Errorf("err = %v, want the unknown field named", err)
		}
	})
	t.Run("ErrDuration", func(t *testing.T) {
		_, err := wasm.ParseManifest("plugin.yaml", []byte(validManifest+"limits: {timeout: soon}\n"))
		if err == nil || !strings.Contains(err.Error(), `"soon" is not a duration`) {
			t.Errorf("err = %v", err)
		}
	})
}

func TestParseManifestDefaults(t *testing.T) {
	m, err := wasm.ParseManifest("plugin.yaml", []byte(validManifest))
	if err != nil {
		t.Fatal(err)
	}
	if m.Module != wasm.DefaultModule || m.Limits.MemoryMiB != wasm.DefaultMemoryMiB || m.Limits.Timeout.Std() != wasm.DefaultTimeout ||
		m.Limits.OutputBytes != wasm.DefaultOutputBytes || m.Tools[0].RiskLevel != "medium" {
		t.Errorf("defaults not applied: %+v", m)
	}
	defs := m.Definitions()
	if len(defs) != 1 || defs[0].SourceType != "plugin" || string(defs[0].Parameters) != `{"properties":{},"type":"object"}` {
		t.Errorf("definitions = %+v", defs)
	}
}

// TestExampleManifests: the shipped examples are valid.
func TestExampleManifests(t *testing.T) {
	for _, name := range []string{"textstats", "hashing", "fetch"} {
		if _, err := wasm.ReadManifest("../examples/plugins/" + name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
