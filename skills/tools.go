package skills

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/runtime/tools"
)

//go:embed bundled
var bundled embed.FS

// Bundled is the source of the skills shipped inside the binary.
func Bundled() Source {
	sub, _ := fs.Sub(bundled, "bundled")
	return Source{Name: "bundled", FS: sub, Root: "bundled"}
}

// Dir is the source of the skills in one directory.
func Dir(name, dir string) Source {
	return Source{Name: name, FS: os.DirFS(dir), Root: dir}
}

// Tool names.
const (
	ListTool = "skills_list"
	ViewTool = "skill_view"
)

// Slot is where the skill tools are published; *tools.ToolService is one.
type Slot interface {
	SetSlot(source tools.SourceType, defs []tools.ToolDefinition, exec tools.Executor) error
}

// Service holds the current catalog and runs the skill tools.
type Service struct {
	sources []Source
	log     *slog.Logger
	cat     atomic.Pointer[Catalog]

	mu        sync.Mutex      // serialises Reload
	warned    map[string]bool // warnings already logged
	published bool
	lastDefs  string // skills_list's description when last published
}

var _ tools.Executor = (*Service)(nil)

// NewService returns a service over sources, in override order. Call Reload
// to read them.
func NewService(log *slog.Logger, sources ...Source) *Service {
	if log == nil {
		log = slog.Default()
	}
	s := &Service{sources: sources, log: log}
	s.cat.Store(&Catalog{skills: map[string]*Skill{}})
	return s
}

// Catalog returns the skills read by the last Reload.
func (s *Service) Catalog() *Catalog { return s.cat.Load() }

// Reload re-reads the sources and publishes the tools into slot (when not
// nil). Only what changed since the last Reload is acted on: a skipped
// skill is logged once, and the slot is set again only when the tool
// definitions changed, so that calling Reload often is cheap and keeps the
// provider's prompt cache warm.
func (s *Service) Reload(ctx context.Context, slot Slot) error {
	c := Load(s.sources...)
	defs := Definitions(c)
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := make(map[string]bool, len(c.Warnings))
	for _, w := range c.Warnings {
		seen[w.String()] = true
		if !s.warned[w.String()] {
			s.log.WarnContext(ctx, "skill skipped", "file", w.File, "field", w.Field, "err", w.Error)
		}
	}
	s.warned = seen
	s.cat.Store(c)
	if slot == nil {
		return nil
	}
	key := defs[0].Description
	if s.published && key == s.lastDefs {
		return nil
	}
	if err := slot.SetSlot(tools.SourceSkill, defs, s); err != nil {
		return fmt.Errorf("skills.Reload: %w", err)
	}
	s.published, s.lastDefs = true, key
	return nil
}

// Definitions returns the skill tools for c. Only names and descriptions
// are disclosed up front, in skills_list's description; bodies and files
// come through skill_view.
func Definitions(c *Catalog) []tools.ToolDefinition {
	var b strings.Builder
	b.WriteString("List the available skills: reusable instructions for specific tasks. " +
		"Call skill_view with a skill's name to read its instructions before doing a task it covers.")
	list := c.List("")
	if len(list) == 0 {
		b.WriteString("\nNo skills are installed.")
	} else {
		b.WriteString("\nAvailable skills:")
		for _, s := range list {
			fmt.Fprintf(&b, "\n- %s: %s", s.Name, oneLine(s.Description))
		}
	}
	return []tools.ToolDefinition{
		{
			Name:        ListTool,
			Description: b.String(),
			Parameters: json.RawMessage(`{"type":"object","properties":{` +
				`"tag":{"type":"string","description":"only skills with this tag"}},"additionalProperties":false}`),
			RiskLevel:  tools.RiskSafe,
			SourceType: tools.SourceSkill,
		},
		{
			Name: ViewTool,
			Description: "Read a skill: its SKILL.md instructions, or with file, one file inside the skill's directory " +
				"(for example references/api.md or templates/report.md).",
			Parameters: json.RawMessage(`{"type":"object","properties":{` +
				`"name":{"type":"string","description":"the skill's name, as skills_list gives it"},` +
				`"file":{"type":"string","description":"a path relative to the skill's directory; omit for SKILL.md"}},` +
				`"required":["name"],"additionalProperties":false}`),
			RiskLevel:  tools.RiskSafe,
			SourceType: tools.SourceSkill,
		},
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// listEntry is one skill in skills_list's result.
type listEntry struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
}

// Execute runs skills_list and skill_view.
func (s *Service) Execute(ctx context.Context, call tools.ToolCallRequest, _ tools.ExecutionContext) (string, error) {
	c := s.Catalog()
	switch call.Name {
	case ListTool:
		var args struct {
			Tag string `json:"tag"`
		}
		if err := json.Unmarshal([]byte(orEmpty(call.Arguments)), &args); err != nil {
			return "", errs.Errorf(errs.EINVALID, "skills_list: arguments: %v", err)
		}
		out := struct {
			Skills []listEntry `json:"skills"`
		}{Skills: []listEntry{}}
		for _, sk := range c.List(args.Tag) {
			tags := sk.Tags
			if tags == nil {
				tags = []string{}
			}
			out.Skills = append(out.Skills, listEntry{Name: sk.Name, Description: sk.Description, Tags: tags})
		}
		b, err := json.Marshal(out)
		return string(b), err
	case ViewTool:
		var args struct {
			Name string `json:"name"`
			File string `json:"file"`
		}
		if err := json.Unmarshal([]byte(orEmpty(call.Arguments)), &args); err != nil {
			return "", errs.Errorf(errs.EINVALID, "skill_view: arguments: %v", err)
		}
		sk, ok := c.Get(args.Name)
		if !ok {
			for _, w := range c.Warnings {
				if path.Base(path.Dir(w.File)) == args.Name {
					return "", errs.Errorf(errs.EINVALID, "skill_view: skill %s is not available because its SKILL.md is invalid: %s", args.Name, w)
				}
			}
			var names []string
			for _, x := range c.List("") {
				names = append(names, x.Name)
			}
			return "", errs.Errorf(errs.ENOTFOUND, "skill_view: no skill named %q; available: %s", args.Name, strings.Join(names, ", "))
		}
		if args.File == "" || args.File == FileName {
			return View(sk), nil
		}
		data, err := sk.ReadFile(args.File)
		if errors.Is(err, ErrOutsideSkill) {
			return "", errs.Errorf(errs.EFORBIDDEN, "skill_view: refused: %q is outside skill %s's directory", args.File, sk.Name)
		}
		if err != nil {
			return "", errs.Errorf(errs.ENOTFOUND, "skill_view: %v", err)
		}
		if !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
			return fmt.Sprintf("%s is a binary file (%d bytes) of skill %s; it cannot be shown as text.", args.File, len(data), sk.Name), nil
		}
		return string(data), nil
	}
	return "", fmt.Errorf("skills: unknown tool %s", call.Name)
}

// View renders a skill for the model: a short header, then the body, then
// the files it may open with skill_view.
func View(s *Skill) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Skill: %s\n", s.Name)
	if s.Version != "" {
		fmt.Fprintf(&b, "Version: %s\n", s.Version)
	}
	if len(s.RequiredEnv) > 0 {
		var missing []string
		for _, e := range s.RequiredEnv {
			if os.Getenv(e) == "" {
				missing = append(missing, e)
			}
		}
		fmt.Fprintf(&b, "Required environment variables: %s", strings.Join(s.RequiredEnv, ", "))
		if len(missing) > 0 {
			fmt.Fprintf(&b, " (not set: %s)", strings.Join(missing, ", "))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	b.WriteString(strings.TrimSpace(s.Body))
	b.WriteString("\n")
	if len(s.Files) > 0 {
		b.WriteString("\nFiles in this skill (open with skill_view and file):\n")
		for _, f := range s.Files {
			fmt.Fprintf(&b, "- %s\n", f)
		}
	}
	return b.String()
}

func orEmpty(s string) string {
	if strings.TrimSpace(s) == "" {
		return "{}"
	}
	return s
}
