package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nagent/nagent/runtime/config"
)

func TestSkillDirs(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte("skills:\n  dirs: [team-skills, /opt/skills]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.LoadEnv(func(k string) string {
		if k == "NAGENT_HOME" {
			return home
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.SkillDirs()
	if len(got) != 2 || got[0] != filepath.Join(home, "team-skills") || got[1] != "/opt/skills" {
		t.Errorf("SkillDirs = %v", got)
	}
	if cfg.SkillsDir() != filepath.Join(home, "skills") {
		t.Errorf("SkillsDir = %s", cfg.SkillsDir())
	}
}
