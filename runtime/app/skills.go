package app

import (
	"context"
	"fmt"

	"github.com/nagent/nagent/runtime/config"
	"github.com/nagent/nagent/skills"
)

// SkillSources returns the skill sources of cfg in override order: the
// bundled skills, $NAGENT_HOME/skills, then the configured directories.
func SkillSources(cfg *config.Config) []skills.Source {
	src := []skills.Source{skills.Bundled(), skills.Dir("home", cfg.SkillsDir())}
	for _, d := range cfg.SkillDirs() {
		src = append(src, skills.Dir(d, d))
	}
	return src
}

// newSkills loads the skills of cfg and publishes skills_list and
// skill_view into slot. Invalid skills are logged and skipped.
func newSkills(ctx context.Context, cfg *config.Config, slot skills.Slot, opts Options) (*skills.Service, error) {
	svc := skills.NewService(opts.Log, SkillSources(cfg)...)
	if err := svc.Reload(ctx, slot); err != nil {
		return nil, fmt.Errorf("app: skills: %w", err)
	}
	return svc, nil
}
