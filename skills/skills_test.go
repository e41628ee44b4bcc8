package skills_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/skills"
)

var parseTests = []struct {
	name, dir, text string
	field           string // "" means valid
}{
	{"Valid", "pdf", "---\nname: pdf\ndescription: Work with PDFs.\nversion: 1.0.0\ntags: [docs]\n---\nBody", ""},
	{"NoFrontmatter", "", "# just markdown", "frontmatter"},
	{"Unclosed", "", "---\nname: x\n", "frontmatter"},
	{"BadYAML", "", "---\nname: [x\n---\n", "frontmatter"},
	{"ErrNameRequired", "", "---\ndescription: d\n---\n", "name"},
	{"ErrNameUppercase", "", "---\nname: PDF\ndescription: d\n---\n", "name"},
	{"ErrNameDirMismatch", "other", "---\nname: pdf\ndescription: d\n---\n", "name"},
	{"ErrDescriptionRequired", "", "---\nname: pdf\n---\n", "description"},
	{"ErrDescriptionTooLong", "", "---\nname: pdf\ndescription: " + strings.Repeat("x", 1025) + "\n---\n", "description"},
	{"ErrTagsNotList", "", "---\nname: pdf\ndescription: d\ntags: {a: b}\n---\n", "tags"},
	{"ErrPlatformsNotStrings", "", "---\nname: pdf\ndescription: d\nplatforms: [1, 2]\n---\n", "platforms"},
	{"ErrVersionObject", "", "---\nname: pdf\ndescription: d\nversion: {a: 1}\n---\n", "version"},
	{"ErrEnvBadName", "", "---\nname: pdf\ndescription: d\nrequired_environment_variables: [\"not a var\"]\n---\n", "required_environment_variables"},
}

func TestParse(t *testing.T) {
	for _, tt := range parseTests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := skills.Parse("x/SKILL.md", tt.dir, []byte(tt.text))
			if tt.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				if s.Name != "pdf" || s.Version != "1.0.0" || s.Body != "Body" || len(s.Tags) != 1 {
					t.Errorf("skill = %+v", s)
				}
				return
			}
			var fe *skills.FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field || fe.File != "x/SKILL.md" {
				t.Fatalf("err = %v, want a FieldError on %s naming x/SKILL.md", err, tt.field)
			}
			if !strings.Contains(err.Error(), "x/SKILL.md") || !strings.Contains(err.Error(), tt.field) {
				t.Errorf("message %q does not name the file and field", err)
			}
		})
	}
}

func TestBundledSkillsAreValid(t *testing.T) {
	c := skills.Load(skills.Bundled())
	if len(c.Warnings) > 0 {
		t.Fatalf("warnings: %v", c.Warnings)
	}
	if n := len(c.List("")); n < 2 {
		t.Fatalf("bundled skills = %d, want at least 2", n)
	}
	sc, ok := c.Get("skill-creator")
	if !ok {
		t.Fatal("skill-creator missing")
	}
	tmpl, err := sc.ReadFile("templates/SKILL.md")
	if err != nil {
		t.Fatal(err)
	}
	// The template itself is a valid skill.
	if _, err := skills.Parse("templates/SKILL.md", "", tmpl); err != nil {
		t.Errorf("template: %v", err)
	}
}

func TestLoad(t *testing.T) {
	c := skills.Load(skills.Bundled(), skills.Dir("home", "testdata/user"))
	t.Run("LaterSourceOverrides", func(t *testing.T) {
		s, ok := c.Get("code-review")
		if !ok || s.Source != "home" || !strings.Contains(s.Body, "Team checklist") {
			t.Fatalf("code-review = %+v", s)
		}
	})
	t.Run("InvalidSkippedWithWarning", func(t *testing.T) {
		if _, ok := c.Get("broken"); ok {
			t.Error("broken skill loaded")
		}
		got := map[string]string{}
		for _, w := range c.Warnings {
			got[filepath.Base(filepath.Dir(w.File))] = w.Field
		}
		if got["broken"] != "frontmatter" || got["noname"] != "name" {
			t.Errorf("warnings = %+v", c.Warnings)
		}
	})
	t.Run("FilterByTag", func(t *testing.T) {
		l := c.List("writing")
		if len(l) != 1 || l[0].Name != "notes" {
			t.Errorf("List(writing) = %v", l)
		}
	})
	t.Run("HermesEnvForm", func(t *testing.T) {
		s, _ := c.Get("notes")
		if len(s.RequiredEnv) != 1 || s.RequiredEnv[0] != "NOTES_DIR" || s.Version != "2" {
			t.Errorf("notes = %+v", s)
		}
	})
}

var traversalTests = []string{"../code-review/SKILL.md", "references/../../x", "/etc/passwd", `..\..\x`, "C:/Windows/win.ini"}

func TestReadFileRefusesTraversal(t *testing.T) {
	c := skills.Load(skills.Dir("home", "testdata/user"))
	s, _ := c.Get("notes")
	if b, err := s.ReadFile("references/format.md"); err != nil || !strings.Contains(string(b), "Format") {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
	for _, p := range traversalTests {
		if _, err := s.ReadFile(p); !errors.Is(err, skills.ErrOutsideSkill) {
			t.Errorf("ReadFile(%q) err = %v, want ErrOutsideSkill", p, err)
		}
	}
	t.Run("Symlink", func(t *testing.T) {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "s"), 0o755)
		os.WriteFile(filepath.Join(dir, "s", "SKILL.md"), []byte("---\nname: s\ndescription: d\n---\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("secret"), 0o644)
		if err := os.Symlink(filepath.Join(dir, "secret.txt"), filepath.Join(dir, "s", "link.txt")); err != nil {
			t.Skip(err)
		}
		s, _ := skills.Load(skills.Dir("d", dir)).Get("s")
		if b, err := s.ReadFile("link.txt"); !errors.Is(err, skills.ErrOutsideSkill) {
			t.Errorf("ReadFile(link) = %q, %v", b, err)
		}
	})
}

func TestTools(t *testing.T) {
	svc := skills.NewService(nil, skills.Bundled(), skills.Dir("home", "testdata/user"))
	ts := tools.NewToolService(nil, tools.Options{})
	ctx := context.Background()
	if err := svc.Reload(ctx, ts); err != nil {
		t.Fatal(err)
	}
	def, ok := ts.Lookup(skills.ListTool)
	if !ok || !strings.Contains(def.Description, "- notes: Take meeting notes") {
		t.Fatalf("skills_list description = %q", def.Description)
	}
	if strings.Contains(def.Description, "bullet points") {
		t.Error("a skill body leaked into the tool description")
	}
	run := func(name, args string) (string, error) {
		return svc.Execute(ctx, tools.ToolCallRequest{Name: name, Arguments: args}, tools.ExecutionContext{})
	}
	out, err := run(skills.ListTool, `{"tag":"team"}`)
	if err != nil || out != `{"skills":[{"name":"code-review","description":"The team's own review checklist, overriding the bundled one.","tags":["team"]}]}` {
		t.Errorf("skills_list = %s, %v", out, err)
	}
	out, err = run(skills.ViewTool, `{"name":"notes"}`)
	if err != nil || !strings.Contains(out, "bullet points") || !strings.Contains(out, "references/format.md") {
		t.Errorf("skill_view = %s, %v", out, err)
	}
	_, err = run(skills.ViewTool, `{"name":"notes","file":"../code-review/SKILL.md"}`)
	if errs.Code(err) != errs.EFORBIDDEN || !strings.Contains(err.Error(), "outside") {
		t.Errorf("traversal err = %v", err)
	}
	out, err = run(skills.ViewTool, `{"name":"notes","file":"assets/logo.png"}`)
	if err != nil || !strings.Contains(out, "binary file (6 bytes)") {
		t.Errorf("skill_view binary = %q, %v", out, err)
	}
	_, err = run(skills.ViewTool, `{"name":"nope"}`)
	if errs.Code(err) != errs.ENOTFOUND || !strings.Contains(err.Error(), "notes") {
		t.Errorf("unknown skill err = %v", err)
	}
}

func TestLoadMissingDir(t *testing.T) {
	c := skills.Load(skills.Source{Name: "x", FS: fstest.MapFS{}, Root: "x"}, skills.Dir("y", filepath.Join(t.TempDir(), "absent")))
	if len(c.Warnings) != 0 || len(c.List("")) != 0 {
		t.Errorf("catalog = %+v", c)
	}
}

var platformTests = []struct {
	platforms []string
	os        string
	want      bool
}{
	{nil, "linux", true},
	{[]string{"linux"}, "linux", true},
	{[]string{"macos"}, "darwin", true},
	{[]string{"macOS", "windows"}, "linux", false},
}

func TestSupports(t *testing.T) {
	for _, tt := range platformTests {
		s := &skills.Skill{Platforms: tt.platforms}
		if got := s.Supports(tt.os); got != tt.want {
			t.Errorf("%v.Supports(%s) = %v", tt.platforms, tt.os, got)
		}
	}
}
