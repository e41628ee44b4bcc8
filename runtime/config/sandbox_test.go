package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/config"
)

var sandboxConfigTests = []struct {
	name, yaml, wantErr string
}{
	{"Defaults", "", ""},
	{"Local", "sandbox:\n  backend: local\n  idle_timeout: 1m\n  limits: {processes: 16}\n", ""},
	{"UnknownBackend", "sandbox:\n  backend: chroot\n", `sandbox.backend is "chroot"`},
	{"UnisolatedNeedsConsent", "sandbox:\n  backend: unisolated\n", "sandbox.allow_unisolated: true"},
	{"UnisolatedAllowed", "sandbox:\n  backend: unisolated\n  allow_unisolated: true\n", ""},
	{"NoNestedSandbox", "sandbox:\n  allowed_tools: [get_current_time, execute_code]\n", "lists execute_code"},
	{"TinyIdle", "sandbox:\n  idle_timeout: 10ms\n", "idle_timeout"},
}

func TestSandboxConfig(t *testing.T) {
	for _, tt := range sandboxConfigTests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.LoadEnv(func(k string) string {
				if k == "NAGENT_HOME" {
					return home
				}
				return ""
			})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to mention %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.name == "Defaults" {
				s := cfg.Sandbox
				if s.Backend != "auto" || s.AllowUnisolated || s.IdleTimeout.Std() != 10*time.Minute || len(s.AllowedTools) == 0 || s.Python != "/usr/bin/python3" {
					t.Errorf("defaults = %+v", s)
				}
			}
		})
	}
}
