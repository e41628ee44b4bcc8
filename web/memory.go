package web

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"time"
	"unicode/utf8"

	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/runtime/memory"
	"github.com/nagent/nagent/store"
)

// providerName is an external-memory provider (builtin or a project).
var providerName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// Memory files the dashboard shows.
var (
	editableMemoryFiles = []string{"memory.md", "user.md"}
	builtinMemoryFiles  = []string{"memory.md", "user.md", "observations.md"}
)

type memoryFile struct {
	Name       string     `json:"name"`
	Size       int64      `json:"size"`
	ModifiedAt *time.Time `json:"modified_at"`
	ReadOnly   bool       `json:"read_only"`
}

// memoryDir is the directory of a provider's Markdown files.
func (s *Server) memoryDir(provider string) string {
	if provider == "builtin" {
		return s.app.Config.MemoryDir()
	}
	return filepath.Join(s.app.Config.ProjectsDir(), provider)
}

func (s *Server) memoryFiles(provider string) []memoryFile {
	names := editableMemoryFiles
	if provider == "builtin" {
		names = builtinMemoryFiles
	}
	out := make([]memoryFile, 0, len(names))
	for _, n := range names {
		f := memoryFile{Name: n, ReadOnly: n == "observations.md"}
		if st, err := os.Stat(filepath.Join(s.memoryDir(provider), n)); err == nil {
			mt := st.ModTime().UTC()
			f.Size, f.ModifiedAt = st.Size(), &mt
		}
		out = append(out, f)
	}
	return out
}

// handleListMemory is GET /api/memory.
func (s *Server) handleListMemory(w http.ResponseWriter, r *http.Request) error {
	type providerJSON struct {
		Name  string       `json:"name"`
		Files []memoryFile `json:"files"`
	}
	providers := []providerJSON{{Name: "builtin", Files: s.memoryFiles("builtin")}}
	entries, err := os.ReadDir(s.app.Config.ProjectsDir())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	var projects []string
	for _, e := range entries {
		if e.IsDir() && providerName.MatchString(e.Name()) && e.Name() != "builtin" {
			projects = append(projects, e.Name())
		}
	}
	sort.Strings(projects)
	for _, p := range projects {
		providers = append(providers, providerJSON{Name: p, Files: s.memoryFiles(p)})
	}
	health, err := s.memoryHealth(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"providers": providers, "health": health})
	return nil
}

func (s *Server) memoryHealth(r *http.Request) ([]store.MemoryFailureCount, error) {
	c, err := s.app.DB.ListMemoryFailures(r.Context())
	if c == nil {
		c = []store.MemoryFailureCount{}
	}
	return c, err
}

// handleMemoryHealth is GET /api/memory/health.
func (s *Server) handleMemoryHealth(w http.ResponseWriter, r *http.Request) error {
	c, err := s.memoryHealth(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"counters": c})
	return nil
}

// memoryTarget validates {provider}/{file}.
func memoryTarget(r *http.Request, write bool) (provider, file string, err error) {
	provider, file = r.PathValue("provider"), r.PathValue("file")
	if !providerName.MatchString(provider) {
		return "", "", invalid("provider", "provider must be builtin or a project name ([a-z0-9][a-z0-9_-]{0,63})")
	}
	allowed := editableMemoryFiles
	if provider == "builtin" && !write {
		allowed = builtinMemoryFiles
	}
	for _, a := range allowed {
		if a == file {
			return provider, file, nil
		}
	}
	if write && file == "observations.md" {
		return "", "", invalid("file", "observations.md is written by the runtime and is read-only")
	}
	return "", "", invalid("file", "file must be memory.md or user.md (or observations.md, builtin only, to read)")
}

// handleGetMemory is GET /api/memory/{provider}/{file}.
func (s *Server) handleGetMemory(w http.ResponseWriter, r *http.Request) error {
	provider, file, err := memoryTarget(r, false)
	if err != nil {
		return err
	}
	dir := s.memoryDir(provider)
	if provider != "builtin" {
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			return errs.Errorf(errs.ENOTFOUND, "no project %q in %s; create it by writing its memory.md", provider, s.app.Config.ProjectsDir())
		}
	}
	p := filepath.Join(dir, file)
	b, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	var mt *time.Time
	if st, err := os.Stat(p); err == nil {
		t := st.ModTime().UTC()
		mt = &t
	}
	writeJSON(w, http.StatusOK, map[string]any{"provider": provider, "file": file, "content": string(b),
		"read_only": file == "observations.md", "modified_at": mt})
	return nil
}

// handlePutMemory is PUT /api/memory/{provider}/{file} {"content"}.
func (s *Server) handlePutMemory(w http.ResponseWriter, r *http.Request) error {
	provider, file, err := memoryTarget(r, true)
	if err != nil {
		return err
	}
	var req struct {
		Content *string `json:"content"`
	}
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if req.Content == nil {
		return invalid("content", "content is required (the whole file)")
	}
	if !utf8.ValidString(*req.Content) {
		return invalid("content", "content must be UTF-8 text")
	}
	limit := s.app.Config.ExternalMemory.Builtin.MaxFileChars
	if limit <= 0 {
		limit = 32000
	}
	if n := utf8.RuneCountInString(*req.Content); n > limit {
		return invalid("content", "content is %d characters, over external_memory.builtin.max_file_chars (%d)", n, limit)
	}
	p := filepath.Join(s.memoryDir(provider), file)
	if err := memory.WriteFileAtomic(p, []byte(*req.Content), 0o600); err != nil {
		return err
	}
	var mt time.Time
	if st, err := os.Stat(p); err == nil {
		mt = st.ModTime().UTC()
	}
	writeJSON(w, http.StatusOK, map[string]any{"saved": true, "modified_at": mt})
	return nil
}
