// Package skills owns the Skill domain: SKILL.md packages found in the
// bundled, user and configured directories, and the skills_list and
// skill_view tools that disclose them to the model a step at a time.
package skills

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// FileName is the file that makes a directory a skill.
const FileName = "SKILL.md"

// Limits from the agentskills.io specification.
const (
	MaxNameLen        = 64
	MaxDescriptionLen = 1024
)

var (
	nameRE     = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	yamlLineRE = regexp.MustCompile(`line \d+`)
)

// Skill is one parsed SKILL.md with where it came from.
type Skill struct {
	Name         string   `json:"name" yaml:"name"`
	Description  string   `json:"description" yaml:"description"`
	Version      string   `json:"version,omitempty" yaml:"version"`
	License      string   `json:"license,omitempty" yaml:"license"`
	Platforms    []string `json:"platforms,omitempty" yaml:"platforms"`
	Tags         []string `json:"tags,omitempty" yaml:"tags"`
	RequiredEnv  []string `json:"required_env,omitempty" yaml:"required_env"`
	AllowedTools []string `json:"allowed_tools,omitempty" yaml:"-"`
	// Body is the Markdown after the frontmatter.
	Body string `json:"-" yaml:"-"`
	// Source names where the skill was found: "bundled", "home" or a directory.
	Source string `json:"source"`
	// Location is the skill's SKILL.md, for messages.
	Location string `json:"location"`
	// Files lists the other files of the skill, relative to its directory.
	Files []string `json:"files,omitempty"`

	fsys fs.FS  // the skill's source
	dir  string // the skill's directory inside fsys
}

// frontmatter is the YAML header, with the aliases other agents use.
type frontmatter struct {
	Name        string         `yaml:"name"`
	Description string         `yaml:"description"`
	Version     any            `yaml:"version"`
	License     string         `yaml:"license"`
	Platforms   any            `yaml:"platforms"`
	Tags        any            `yaml:"tags"`
	RequiredEnv any            `yaml:"required_environment_variables"`
	Env         any            `yaml:"required_env"`
	Allowed     any            `yaml:"allowed-tools"`
	Metadata    map[string]any `yaml:"metadata"`
	Compat      string         `yaml:"compatibility"`
}

// FieldError is a validation failure of one frontmatter field.
type FieldError struct {
	File  string // the SKILL.md
	Field string // the frontmatter field, or "frontmatter"
	Msg   string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%s: field %s: %s", e.File, e.Field, e.Msg)
}

// Parse reads a SKILL.md. file names it in errors; dirName, when not empty,
// is the directory the skill lives in, which its name must match.
func Parse(file, dirName string, data []byte) (*Skill, error) {
	fail := func(field, format string, args ...any) error {
		return &FieldError{File: file, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	if !strings.HasPrefix(text, "---\n") {
		return nil, fail("frontmatter", "SKILL.md must start with a YAML frontmatter block between --- lines")
	}
	head, body, ok := strings.Cut(text[4:], "\n---")
	if !ok {
		return nil, fail("frontmatter", "the frontmatter block has no closing --- line")
	}
	body = strings.TrimPrefix(body, "\n")
	if i := strings.IndexByte(body, '\n'); i >= 0 && strings.TrimSpace(body[:i]) == "" {
		body = body[i+1:]
	} else if strings.TrimSpace(body) == "" {
		body = ""
	}
	var fm frontmatter
	if err := yaml.Unmarshal([]byte(head), &fm); err != nil {
		// yaml counts lines from the first line after ---; report file lines.
		msg := yamlLineRE.ReplaceAllStringFunc(err.Error(), func(m string) string {
			n, _ := strconv.Atoi(strings.TrimPrefix(m, "line "))
			return fmt.Sprintf("line %d", n+1)
		})
		return nil, fail("frontmatter", "not valid YAML: %s", strings.TrimPrefix(msg, "yaml: "))
	}
	s := &Skill{Name: fm.Name, Description: strings.TrimSpace(fm.Description), License: fm.License, Body: body, Location: file}
	switch {
	case s.Name == "":
		return nil, fail("name", "is required")
	case len(s.Name) > MaxNameLen:
		return nil, fail("name", "is %d characters; at most %d", len(s.Name), MaxNameLen)
	case !nameRE.MatchString(s.Name):
		return nil, fail("name", "%q must be lowercase letters, digits and single hyphens", s.Name)
	case dirName != "" && dirName != s.Name:
		return nil, fail("name", "%q does not match its directory %q", s.Name, dirName)
	}
	switch {
	case s.Description == "":
		return nil, fail("description", "is required: say what the skill does and when to use it")
	case len(s.Description) > MaxDescriptionLen:
		return nil, fail("description", "is %d characters; at most %d", len(s.Description), MaxDescriptionLen)
	}
	switch v := fm.Version.(type) {
	case nil:
	case string:
		s.Version = v
	case int, float64:
		s.Version = fmt.Sprint(v)
	default:
		return nil, fail("version", "must be a string such as 1.0.0")
	}
	if fm.Version == nil && fm.Metadata != nil {
		if v, ok := fm.Metadata["version"].(string); ok {
			s.Version = v
		}
	}
	var err error
	if s.Platforms, err = stringList(fm.Platforms); err != nil {
		return nil, fail("platforms", "%v", err)
	}
	if s.Tags, err = stringList(fm.Tags); err != nil {
		return nil, fail("tags", "%v", err)
	}
	if fm.Tags == nil && fm.Metadata != nil {
		s.Tags, _ = stringList(fm.Metadata["tags"])
	}
	for _, t := range s.Tags {
		if strings.TrimSpace(t) == "" {
			return nil, fail("tags", "has an empty tag")
		}
	}
	env := fm.RequiredEnv
	field := "required_environment_variables"
	if env == nil {
		env, field = fm.Env, "required_env"
	}
	if s.RequiredEnv, err = envList(env); err != nil {
		return nil, fail(field, "%v", err)
	}
	if s.AllowedTools, err = stringList(fm.Allowed); err != nil {
		return nil, fail("allowed-tools", "%v", err)
	}
	return s, nil
}

// stringList accepts a YAML list of strings, or one space- or
// comma-separated string.
func stringList(v any) ([]string, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case string:
		return strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' }), nil
	case []any:
		out := make([]string, 0, len(v))
		for i, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("item %d is %T; want a string", i, e)
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("is %T; want a list of strings", v)
}

var envRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// envList accepts names, or objects with a name (Hermes Agent's form).
func envList(v any) ([]string, error) {
	items, ok := v.([]any)
	if v != nil && !ok {
		return nil, fmt.Errorf("is %T; want a list of variable names", v)
	}
	var out []string
	for i, e := range items {
		var name string
		switch e := e.(type) {
		case string:
			name = e
		case map[string]any:
			name, _ = e["name"].(string)
		}
		if !envRE.MatchString(name) {
			return nil, fmt.Errorf("item %d is not an environment variable name", i)
		}
		out = append(out, name)
	}
	return out, nil
}

// Source is one place skills are found. Later sources override earlier
// ones by name.
type Source struct {
	// Name says where the skills come from: "bundled", "home", or a path.
	Name string
	// FS holds one directory per skill at its root.
	FS fs.FS
	// Root is how file names are shown, e.g. the directory path.
	Root string
}

// Warning is a skill that was skipped.
type Warning struct {
	File  string `json:"file"`
	Field string `json:"field,omitempty"`
	Error string `json:"error"`
}

func (w Warning) String() string {
	if w.Field != "" {
		return fmt.Sprintf("%s: field %s: %s", w.File, w.Field, w.Error)
	}
	return w.File + ": " + w.Error
}

// Catalog is the set of skills loaded from the sources, by name.
type Catalog struct {
	skills   map[string]*Skill
	Warnings []Warning
	// Unsupported lists the SKILL.md files left out because their
	// platforms do not include this one.
	Unsupported []string
}

// goos is the platform skills are matched against; a variable for tests.
var goos = runtime.GOOS

// platformAliases maps the names skills use onto GOOS values.
var platformAliases = map[string]string{"macos": "darwin", "osx": "darwin", "mac": "darwin", "win32": "windows"}

// Supports reports whether the skill may run on os (a GOOS value). A skill
// without platforms runs everywhere.
func (s *Skill) Supports(os string) bool {
	if len(s.Platforms) == 0 {
		return true
	}
	for _, p := range s.Platforms {
		p = strings.ToLower(p)
		if a, ok := platformAliases[p]; ok {
			p = a
		}
		if p == os || p == "any" || p == "all" {
			return true
		}
	}
	return false
}

// Load reads every source in order. An invalid skill is skipped with a
// warning naming its file and field; a missing directory is no skill.
func Load(sources ...Source) *Catalog {
	c := &Catalog{skills: make(map[string]*Skill)}
	for _, src := range sources {
		entries, err := fs.ReadDir(src.FS, ".")
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				c.Warnings = append(c.Warnings, Warning{File: src.Root, Error: err.Error()})
			}
			continue
		}
		for _, e := range entries {
			if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			file := path.Join(src.Root, e.Name(), FileName)
			data, err := fs.ReadFile(src.FS, path.Join(e.Name(), FileName))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				c.Warnings = append(c.Warnings, Warning{File: file, Error: err.Error()})
				continue
			}
			s, err := Parse(file, e.Name(), data)
			if err != nil {
				w := Warning{File: file, Error: err.Error()}
				var fe *FieldError
				if errors.As(err, &fe) {
					w.Field, w.Error = fe.Field, fe.Msg
				}
				c.Warnings = append(c.Warnings, w)
				continue
			}
			if !s.Supports(goos) {
				c.Unsupported = append(c.Unsupported, file)
				continue
			}
			s.Source, s.fsys, s.dir = src.Name, src.FS, e.Name()
			s.Files = listFiles(src.FS, e.Name())
			c.skills[s.Name] = s
		}
	}
	return c
}

// listFiles returns the regular files of a skill other than SKILL.md.
func listFiles(fsys fs.FS, dir string) []string {
	var out []string
	fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		rel := strings.TrimPrefix(p, dir+"/")
		if rel != FileName {
			out = append(out, rel)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// List returns the skills by name, only those tagged tag when tag is set.
func (c *Catalog) List(tag string) []*Skill {
	out := make([]*Skill, 0, len(c.skills))
	for _, s := range c.skills {
		if tag == "" || slices.ContainsFunc(s.Tags, func(t string) bool { return strings.EqualFold(t, tag) }) {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Get returns the skill called name.
func (c *Catalog) Get(name string) (*Skill, bool) {
	s, ok := c.skills[name]
	return s, ok
}

// ErrOutsideSkill is matched by the error ReadFile returns for a path that
// would leave the skill's directory.
var ErrOutsideSkill = errors.New("path leaves the skill directory")

// ReadFile returns one file of the skill, by a slash-separated path relative
// to the skill's directory. Absolute paths, ".." segments and symbolic links
// that leave the directory are refused.
func (s *Skill) ReadFile(name string) ([]byte, error) {
	clean := path.Clean(strings.ReplaceAll(name, `\`, "/"))
	if name == "" || path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") || strings.Contains(name, "\x00") ||
		(len(name) > 1 && name[1] == ':') {
		return nil, fmt.Errorf("skill %s: %q: %w", s.Name, name, ErrOutsideSkill)
	}
	if clean == "." {
		return nil, fmt.Errorf("skill %s: %q is the skill directory, not a file", s.Name, name)
	}
	// os.DirFS and os.Root-backed file systems follow symbolic links; refuse
	// any link on the way, so a link cannot point outside.
	p := s.dir
	for _, seg := range strings.Split(clean, "/") {
		p = path.Join(p, seg)
		if info, err := fs.Lstat(s.fsys, p); err == nil && info.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("skill %s: %q: %w (symbolic link)", s.Name, name, ErrOutsideSkill)
		}
	}
	data, err := fs.ReadFile(s.fsys, p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("skill %s has no file %q; its files are: %s", s.Name, name, strings.Join(s.Files, ", "))
		}
		return nil, fmt.Errorf("skill %s: %w", s.Name, err)
	}
	return data, nil
}
