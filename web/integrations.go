package web

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/runtime/knowledge"
	"github.com/nagent/nagent/runtime/mcp"
	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/store"
)

var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

func checkName(field, v string) error {
	if !namePattern.MatchString(v) {
		return invalid(field, "%s must be 1-64 characters of a-z 0-9 _ -, starting with a letter or digit", field)
	}
	return nil
}

// --- skills ---

// handleListSkills is GET /api/skills.
func (s *Server) handleListSkills(w http.ResponseWriter, r *http.Request) error {
	if s.app.Skills == nil {
		return errs.Errorf(errs.EUNAVAILABLE, "skills are not loaded in this server")
	}
	cat := s.app.Skills.Catalog()
	list := cat.List("")
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	warnings := make([]string, 0, len(cat.Warnings))
	for _, wn := range cat.Warnings {
		b, _ := json.Marshal(wn)
		warnings = append(warnings, string(b))
	}
	type skillJSON struct {
		Name        string   `json:"name"`
		Description string   `json:"description"`
		Version     string   `json:"version,omitempty"`
		Source      string   `json:"source"`
		Path        string   `json:"path"`
		Tags        []string `json:"tags"`
	}
	out := make([]skillJSON, 0, len(list))
	for _, sk := range list {
		tags := sk.Tags
		if tags == nil {
			tags = []string{}
		}
		out = append(out, skillJSON{Name: sk.Name, Description: sk.Description, Version: sk.Version, Source: sk.Source, Path: sk.Location, Tags: tags})
	}
	writeJSON(w, http.StatusOK, map[string]any{"skills": out, "warnings": warnings})
	return nil
}

// handleGetSkill is GET /api/skills/{name}?file=.
func (s *Server) handleGetSkill(w http.ResponseWriter, r *http.Request) error {
	if s.app.Skills == nil {
		return errs.Errorf(errs.EUNAVAILABLE, "skills are not loaded in this server")
	}
	name := r.PathValue("name")
	if len(name) > 64 || name == "" {
		return invalid("name", "a skill name is 1-64 characters")
	}
	sk, ok := s.app.Skills.Catalog().Get(name)
	if !ok {
		return errs.Errorf(errs.ENOTFOUND, "no skill %q; GET /api/skills lists them", name)
	}
	files := sk.Files
	if files == nil {
		files = []string{}
	}
	content := sk.Body
	if file := r.URL.Query().Get("file"); file != "" {
		if len(file) > 300 || strings.Contains(file, "..") || strings.HasPrefix(file, "/") {
			return invalid("file", "file must be a path inside the skill, as listed in files")
		}
		b, err := sk.ReadFile(file)
		if err != nil {
			return errs.Errorf(errs.ENOTFOUND, "skill %s has no file %q", name, file)
		}
		content = string(b)
	}
	writeJSON(w, http.StatusOK, map[string]any{"name": sk.Name, "description": sk.Description, "source": sk.Source,
		"path": sk.Location, "content": content, "files": files})
	return nil
}

// --- knowledge bases ---

// handleListKB is GET /api/kb.
func (s *Server) handleListKB(w http.ResponseWriter, r *http.Request) error {
	kbs, err := s.app.DB.ListKnowledgeBases(r.Context())
	if err != nil {
		return err
	}
	if kbs == nil {
		kbs = []*store.KnowledgeBase{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"knowledge_bases": kbs})
	return nil
}

type addKBRequest struct {
	Name         string  `json:"name"`
	Type         string  `json:"type"`
	Description  string  `json:"description"`
	Dir          string  `json:"dir"`
	ChunkSize    int     `json:"chunk_size"`
	ChunkOverlap int     `json:"chunk_overlap"`
	Endpoint     string  `json:"endpoint"`
	KnowledgeID  string  `json:"knowledge_id"`
	Threshold    float64 `json:"score_threshold"`
	Secret       string  `json:"secret"`
	Disabled     bool    `json:"disabled"`
}

// handleAddKB is POST /api/kb.
func (s *Server) handleAddKB(w http.ResponseWriter, r *http.Request) error {
	if s.app.Knowledge == nil {
		return errs.Errorf(errs.EUNAVAILABLE, "knowledge bases are not loaded in this server")
	}
	var req addKBRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if err := checkName("name", req.Name); err != nil {
		return err
	}
	if utf8.RuneCountInString(req.Description) > 1000 {
		return invalid("description", "description is over 1000 characters")
	}
	if req.Type == "" {
		return invalid("type", "type is required: one of %s", strings.Join(s.app.Knowledge.Factories.Types(), ", "))
	}
	factory, err := s.app.Knowledge.Factories.Get(req.Type)
	if err != nil {
		return invalid("type", "%s", errs.MessageOrError(err))
	}
	var conf json.RawMessage
	switch req.Type {
	case knowledge.TypeLocal:
		if req.Dir == "" || !filepath.IsAbs(req.Dir) {
			return invalid("dir", "dir is required for a local knowledge base: an absolute directory on the server")
		}
		conf, _ = json.Marshal(knowledge.LocalConfig{Dir: filepath.Clean(req.Dir), ChunkSize: req.ChunkSize, ChunkOverlap: req.ChunkOverlap})
	case knowledge.TypeDify:
		if req.Secret == "" {
			return invalid("secret", "a dify knowledge base needs its API key in secret")
		}
		conf, _ = json.Marshal(knowledge.DifyConfig{Endpoint: req.Endpoint, KnowledgeID: req.KnowledgeID, ScoreThreshold: req.Threshold})
	default:
		conf = json.RawMessage(`{}`)
	}
	if err := factory.Validate(conf); err != nil {
		return invalid("", "knowledge base %s: %s", req.Name, errs.MessageOrError(err))
	}
	kb := &store.KnowledgeBase{Name: req.Name, Type: req.Type, Description: req.Description, Config: conf, Enabled: !req.Disabled}
	if err := s.app.DB.CreateKnowledgeBase(r.Context(), kb, req.Secret); err != nil {
		return err
	}
	resp := map[string]any{"knowledge_base": kb}
	if kb.Type == knowledge.TypeLocal {
		rep, err := knowledge.Ingest(r.Context(), s.app.DB, kb, "")
		if err != nil {
			resp["ingest_error"] = errs.MessageOrError(err)
		} else {
			resp["ingest"] = rep
		}
	}
	writeJSON(w, http.StatusCreated, resp)
	return nil
}

func (s *Server) knowledgeBase(r *http.Request) (*store.KnowledgeBase, error) {
	name := r.PathValue("name")
	if name == "" || len(name) > 64 {
		return nil, invalid("name", "a knowledge base name or id is 1-64 characters")
	}
	return s.app.DB.GetKnowledgeBase(r.Context(), name)
}

// handleIngestKB is POST /api/kb/{name}/ingest.
func (s *Server) handleIngestKB(w http.ResponseWriter, r *http.Request) error {
	kb, err := s.knowledgeBase(r)
	if err != nil {
		return err
	}
	if kb.Type != knowledge.TypeLocal {
		return invalid("name", "knowledge base %s is %s; only local knowledge bases are ingested", kb.Name, kb.Type)
	}
	rep, err := knowledge.Ingest(r.Context(), s.app.DB, kb, "")
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"kb_id": kb.ID, "ingest": rep})
	return nil
}

// handleDeleteKB is DELETE /api/kb/{name}.
func (s *Server) handleDeleteKB(w http.ResponseWriter, r *http.Request) error {
	kb, err := s.knowledgeBase(r)
	if err != nil {
		return err
	}
	if err := s.app.DB.DeleteKnowledgeBase(r.Context(), kb.ID); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"deleted": true, "id": kb.ID})
	return nil
}

// handleSearchKB is POST /api/kb/search {"query","kb","limit"}.
func (s *Server) handleSearchKB(w http.ResponseWriter, r *http.Request) error {
	if s.app.Knowledge == nil {
		return errs.Errorf(errs.EUNAVAILABLE, "knowledge bases are not loaded in this server")
	}
	var req struct {
		Query string `json:"query"`
		KB    string `json:"kb"`
		Limit int    `json:"limit"`
	}
	if err := decode(w, r, &req); err != nil {
		return err
	}
	switch {
	case strings.TrimSpace(req.Query) == "":
		return invalid("query", "query is required")
	case utf8.RuneCountInString(req.Query) > 2000:
		return invalid("query", "query is over 2000 characters")
	case len(req.KB) > 64:
		return invalid("kb", "kb is a knowledge base name or id of at most 64 characters")
	case req.Limit < 0 || req.Limit > 50:
		return invalid("limit", "limit must be between 1 and 50 (0 means 5)")
	}
	if req.Limit == 0 {
		req.Limit = 5
	}
	args, _ := json.Marshal(map[string]any{"query": req.Query, "kb_id": req.KB, "top_k": req.Limit})
	out, err := s.app.Knowledge.Execute(r.Context(), tools.ToolCallRequest{Name: knowledge.ToolName, Arguments: string(args)}, tools.ExecutionContext{})
	if err != nil {
		return invalid("", "%s", errs.MessageOrError(err))
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, err = w.Write([]byte(out))
	return err
}

// --- MCP sites ---

// mcpSiteJSON is a site with its health; env and header values never leave.
type mcpSiteJSON struct {
	mcp.Site
	EnvKeys    []string        `json:"env_keys"`
	HeaderKeys []string        `json:"header_keys"`
	Health     *mcp.SiteStatus `json:"health"`
}

func keysOf(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (s *Server) mcpService() (*mcp.Service, error) {
	if s.app.MCP == nil {
		return nil, errs.Errorf(errs.EUNAVAILABLE, "MCP is not running in this server")
	}
	return s.app.MCP, nil
}

// handleListMCP is GET /api/mcp.
func (s *Server) handleListMCP(w http.ResponseWriter, r *http.Request) error {
	svc, err := s.mcpService()
	if err != nil {
		return err
	}
	sites, err := svc.Sites(r.Context())
	if err != nil {
		return err
	}
	out := make([]mcpSiteJSON, 0, len(sites))
	for _, site := range sites {
		v := mcpSiteJSON{Site: site, EnvKeys: keysOf(site.Env), HeaderKeys: keysOf(site.Headers)}
		if st, ok := svc.SiteStatus(site.Name); ok {
			v.Health = &st
		}
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"sites": out})
	return nil
}

type addMCPRequest struct {
	Name             string            `json:"name"`
	Transport        string            `json:"transport"`
	Command          string            `json:"command"`
	Args             []string          `json:"args"`
	Env              map[string]string `json:"env"`
	URL              string            `json:"url"`
	Headers          map[string]string `json:"headers"`
	Disabled         bool              `json:"disabled"`
	ConnectTimeoutMS int64             `json:"connect_timeout_ms"`
	CallTimeoutMS    int64             `json:"call_timeout_ms"`
	NoProbe          bool              `json:"no_probe"`
}

// handleAddMCP is POST /api/mcp.
func (s *Server) handleAddMCP(w http.ResponseWriter, r *http.Request) error {
	if _, err := s.mcpService(); err != nil {
		return err
	}
	var req addMCPRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if req.ConnectTimeoutMS < 0 || req.ConnectTimeoutMS > 600000 {
		return invalid("connect_timeout_ms", "connect_timeout_ms must be between 0 (default) and 600000")
	}
	if req.CallTimeoutMS < 0 || req.CallTimeoutMS > 3600000 {
		return invalid("call_timeout_ms", "call_timeout_ms must be between 0 (default) and 3600000")
	}
	site := mcp.Site{
		ID: mcp.NewSiteID(), Name: req.Name, Transport: req.Transport, Command: req.Command, Args: req.Args,
		Env: req.Env, URL: req.URL, Headers: req.Headers, Enabled: !req.Disabled, Source: "store",
		ConnectTimeout: time.Duration(req.ConnectTimeoutMS) * time.Millisecond, CallTimeout: time.Duration(req.CallTimeoutMS) * time.Millisecond,
	}
	if site.Transport == "" {
		site.Transport = mcp.TransportStdio
		if site.URL != "" {
			site.Transport = mcp.TransportStreamableHTTP
		}
	}
	if err := mcp.ValidateSite(site); err != nil {
		return invalid("", "%s", errs.MessageOrError(err))
	}
	if _, ok := s.app.Config.MCP.Sites[site.Name]; ok {
		return errs.Errorf(errs.ECONFLICT, "MCP site %s is defined in config.yaml, which would shadow it; pick another name", site.Name)
	}
	resp := map[string]any{}
	if !req.NoProbe {
		res, err := mcp.Probe(r.Context(), site, s.log)
		if err != nil {
			return errs.Errorf(errs.EUNAVAILABLE, "MCP site %s did not answer, so it was not added (send no_probe: true to store it anyway): %v", site.Name, err)
		}
		resp["probe"] = res
	}
	if err := s.app.DB.PutMCPSite(r.Context(), site); err != nil {
		return err
	}
	if err := s.app.MCP.Reload(r.Context()); err != nil {
		s.log.Warn("MCP reload after a dashboard add failed", "site", site.Name, "err", err)
	}
	resp["site"] = mcpSiteJSON{Site: site, EnvKeys: keysOf(site.Env), HeaderKeys: keysOf(site.Headers)}
	writeJSON(w, http.StatusCreated, resp)
	return nil
}

func (s *Server) findSite(r *http.Request) (*mcp.Service, mcp.Site, error) {
	svc, err := s.mcpService()
	if err != nil {
		return nil, mcp.Site{}, err
	}
	name := r.PathValue("name")
	if name == "" || len(name) > 64 {
		return nil, mcp.Site{}, invalid("name", "an MCP site name is 1-64 characters")
	}
	sites, err := svc.Sites(r.Context())
	if err != nil {
		return nil, mcp.Site{}, err
	}
	i := slices.IndexFunc(sites, func(s mcp.Site) bool { return s.Name == name || s.ID == name })
	if i < 0 {
		return nil, mcp.Site{}, errs.Errorf(errs.ENOTFOUND, "no MCP site %s; GET /api/mcp lists them", name)
	}
	return svc, sites[i], nil
}

// handleProbeMCP is POST /api/mcp/{name}/probe.
func (s *Server) handleProbeMCP(w http.ResponseWriter, r *http.Request) error {
	_, site, err := s.findSite(r)
	if err != nil {
		return err
	}
	res, err := mcp.Probe(r.Context(), site, s.log)
	if err != nil {
		return errs.Errorf(errs.EUNAVAILABLE, "probing MCP site %s: %v", site.Name, err)
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// handleMCPHealth is GET /api/mcp/{name}/health.
func (s *Server) handleMCPHealth(w http.ResponseWriter, r *http.Request) error {
	svc, site, err := s.findSite(r)
	if err != nil {
		return err
	}
	st, ok := svc.SiteStatus(site.Name)
	if !ok {
		writeJSON(w, http.StatusOK, map[string]any{"name": site.Name, "health": "not_connected", "tools": []string{}})
		return nil
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

// handleDeleteMCP is DELETE /api/mcp/{name}.
func (s *Server) handleDeleteMCP(w http.ResponseWriter, r *http.Request) error {
	_, site, err := s.findSite(r)
	if err != nil {
		return err
	}
	if site.Source == "config" {
		return errs.Errorf(errs.ECONFLICT, "MCP site %s comes from config.yaml; remove it there", site.Name)
	}
	if err := s.app.DB.DeleteMCPSite(r.Context(), site.Name); err != nil {
		return err
	}
	if err := s.app.MCP.Reload(r.Context()); err != nil {
		s.log.Warn("MCP reload after a dashboard remove failed", "site", site.Name, "err", err)
	}
	writeJSON(w, http.StatusOK, map[string]bool{"deleted": true})
	return nil
}
