package config

import "path/filepath"

// Skills configures where skills are found, beyond the bundled ones and
// $NAGENT_HOME/skills.
type Skills struct {
	// Dirs are extra directories of skills, read after $NAGENT_HOME/skills;
	// a later directory overrides an earlier one by skill name. A relative
	// path is relative to $NAGENT_HOME.
	Dirs []string `yaml:"dirs"`
}

// SkillsDir holds the user's skills, one directory per skill.
func (c *Config) SkillsDir() string { return filepath.Join(c.Home, "skills") }

// SkillDirs returns the extra skill directories, made absolute.
func (c *Config) SkillDirs() []string {
	out := make([]string, 0, len(c.Skills.Dirs))
	for _, d := range c.Skills.Dirs {
		if !filepath.IsAbs(d) {
			d = filepath.Join(c.Home, d)
		}
		out = append(out, d)
	}
	return out
}
