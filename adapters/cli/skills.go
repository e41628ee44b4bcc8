package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/nagent/nagent/runtime/app"
	"github.com/nagent/nagent/runtime/config"
	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/skills"
)

const skillsAbout = `
Shows the skills the agent can use: the bundled ones, those in
$NAGENT_HOME/skills, and those in skills.dirs of config.yaml (later
sources override earlier ones by name).

  list [--tag TAG]        name, description, tags and source of each skill
  view NAME [--file F]    a skill's SKILL.md as the model sees it, or one file
  validate [DIR]          check SKILL.md frontmatter; DIR is one skill or a
                          directory of skills (default: every source); exits 1
                          when a skill is invalid, naming the file and field

Every subcommand takes --json for scripts.`

var skillsSynopsis = map[string]string{
	"list":     "skills list [--tag TAG] [--json]",
	"view":     "skills view NAME [--file PATH] [--json]",
	"validate": "skills validate [DIR] [--json]",
}

// Skills is `nagent skills list|view|validate`.
func Skills(ctx context.Context, args []string, stdio IO) int {
	sub, fset, rest, code, ok := subcommand(stdio, "skills", "skills list|view|validate ...", skillsAbout, skillsSynopsis, args)
	if !ok {
		return code
	}
	asJSON := fset.Bool("json", false, "print JSON")
	tag := fset.String("tag", "", "with list: only skills with this tag")
	file := fset.String("file", "", "with view: a file inside the skill's directory")
	operands, code, ok := parseInterleaved(fset, rest, stdio)
	if !ok {
		return code
	}
	n := map[string][2]int{"list": {0, 0}, "view": {1, 1}, "validate": {0, 1}}[sub]
	if len(operands) < n[0] || len(operands) > n[1] {
		fmt.Fprintf(stdio.Err, "nagent skills %s: usage: nagent %s\n", sub, skillsSynopsis[sub])
		return ExitUsage
	}
	cfg, err := config.Load()
	if err != nil {
		return Fail(stdio, err)
	}
	sources := app.SkillSources(cfg)
	switch sub {
	case "list":
		c := skills.Load(sources...)
		printWarnings(stdio, c.Warnings)
		list := c.List(*tag)
		if *asJSON {
			if list == nil {
				list = []*skills.Skill{}
			}
			return Fail(stdio, writeJSON(stdio.Out, map[string]any{"skills": list, "warnings": nonNil(c.Warnings)}))
		}
		tw := tabwriter.NewWriter(stdio.Out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tSOURCE\tTAGS\tDESCRIPTION")
		for _, s := range list {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, s.Source, strings.Join(s.Tags, ","), truncate(s.Description, 70))
		}
		return Fail(stdio, tw.Flush())
	case "view":
		c := skills.Load(sources...)
		s, ok := c.Get(operands[0])
		if !ok {
			return Fail(stdio, errs.Errorf(errs.ENOTFOUND, "no skill named %q (see nagent skills list)", operands[0]))
		}
		content := skills.View(s)
		if *file != "" {
			b, err := s.ReadFile(*file)
			if err != nil {
				return Fail(stdio, err)
			}
			content = string(b)
		}
		if *asJSON {
			return Fail(stdio, writeJSON(stdio.Out, map[string]any{"skill": s, "file": *file, "content": content}))
		}
		fmt.Fprint(stdio.Out, content)
		return ExitOK
	}
	// validate
	if len(operands) == 1 {
		sources, err = validateSources(operands[0])
		if err != nil {
			return Fail(stdio, err)
		}
	}
	c := skills.Load(sources...)
	if *asJSON {
		if err := writeJSON(stdio.Out, map[string]any{"valid": len(c.Warnings) == 0, "skills": len(c.List("")), "warnings": nonNil(c.Warnings)}); err != nil {
			return Fail(stdio, err)
		}
	} else {
		for _, w := range c.Warnings {
			fmt.Fprintln(stdio.Out, "invalid:", w)
		}
		fmt.Fprintf(stdio.Out, "%d valid skill(s), %d invalid\n", len(c.List("")), len(c.Warnings))
	}
	if len(c.Warnings) > 0 {
		return ExitFailed
	}
	return ExitOK
}

// validateSources reads dir as a directory of skills; a directory holding
// SKILL.md (or the file itself) is checked alone.
func validateSources(dir string) ([]skills.Source, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		if filepath.Base(dir) != skills.FileName {
			return nil, errs.Errorf(errs.EINVALID, "%s is neither a directory nor a %s", dir, skills.FileName)
		}
		dir = filepath.Dir(dir)
	}
	if _, err := os.Stat(filepath.Join(dir, skills.FileName)); err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		return []skills.Source{skills.Dir(dir, dir)}, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	// One skill: a file system holding only that skill's directory.
	name := filepath.Base(abs)
	sub := os.DirFS(filepath.Dir(abs))
	return []skills.Source{{Name: filepath.Dir(abs), Root: filepath.Dir(abs), FS: onlyDir{sub, name}}}, nil
}

// onlyDir shows one directory of a file system at its root listing.
type onlyDir struct {
	fs.FS
	name string
}

func (o onlyDir) ReadDir(name string) ([]fs.DirEntry, error) {
	entries, err := fs.ReadDir(o.FS, name)
	if err != nil || name != "." {
		return entries, err
	}
	for _, e := range entries {
		if e.Name() == o.name {
			return []fs.DirEntry{e}, nil
		}
	}
	return nil, nil
}

func printWarnings(stdio IO, ws []skills.Warning) {
	for _, w := range ws {
		fmt.Fprintln(stdio.Err, "warning: skill skipped:", w)
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// parseInterleaved parses flags that may follow the operands and returns
// the operands.
func parseInterleaved(fs *flag.FlagSet, rest []string, stdio IO) (operands []string, code int, ok bool) {
	if err := parse(fs, rest); err != nil {
		return nil, Fail(stdio, err), false
	}
	return fs.Args(), ExitOK, true
}

func truncate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
