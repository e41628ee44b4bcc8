package web

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/nagent/nagent/policy"
	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/store"
)

// maxPolicyBytes bounds one policy file.
const maxPolicyBytes = 512 << 10

var policySegment = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)

// policyFile is a policy file in listings.
type policyFile struct {
	Name       string     `json:"name"`
	Source     string     `json:"source"`
	ReadOnly   bool       `json:"read_only"`
	Size       int64      `json:"size"`
	ModifiedAt *time.Time `json:"modified_at"`
}

// policyErrorJSON is the last reload's failure.
type policyErrorJSON struct {
	Message  string           `json:"message"`
	Problems []policy.Problem `json:"problems"`
}

func (s *Server) policyDir() string { return filepath.Join(s.app.Config.Home, "policies") }

// policyError converts a load error for the API, relative to the policy dir.
func policyError(err error) *policyErrorJSON {
	if err == nil {
		return nil
	}
	var le *policy.LoadError
	if errors.As(err, &le) {
		return &policyErrorJSON{Message: le.Error(), Problems: le.Problems}
	}
	return &policyErrorJSON{Message: err.Error(), Problems: []policy.Problem{}}
}

// relativeProblems names problem files relative to dir.
func relativeProblems(le *policy.LoadError, dir string) *policy.LoadError {
	out := &policy.LoadError{Problems: make([]policy.Problem, len(le.Problems))}
	for i, p := range le.Problems {
		if rel, err := filepath.Rel(dir, p.File); err == nil && !strings.HasPrefix(rel, "..") {
			p.File = filepath.ToSlash(rel)
		}
		// Messages may quote the path too.
		p.Message = strings.ReplaceAll(p.Message, dir+string(filepath.Separator), "")
		out.Problems[i] = p
	}
	return out
}

// policyReloaded publishes every reload attempt on the policy topic.
func (s *Server) policyReloaded(revision string, le *policy.LoadError) {
	var perr *policyErrorJSON
	if le != nil {
		perr = policyError(relativeProblems(le, s.policyDir()))
	}
	s.hub.Publish(TopicPolicy, map[string]any{"type": "policy_reloaded", "revision": revision, "error": perr})
}

// checkPolicyName validates an admin policy file name.
func checkPolicyName(name string) error {
	if name == "" {
		return invalid("name", "name is required (e.g. no_clock.rego)")
	}
	if len(name) > 200 {
		return invalid("name", "name is over 200 characters")
	}
	segs := strings.Split(name, "/")
	for _, seg := range segs {
		if !policySegment.MatchString(seg) || seg == "." || seg == ".." {
			return invalid("name", "name %q: each path segment is letters, digits and _ . - and starts with a letter, digit or _", name)
		}
	}
	base := segs[len(segs)-1]
	if !strings.HasSuffix(base, ".rego") && base != "data.json" && base != "data.yaml" {
		return invalid("name", "name %q must end in .rego, or be data.json or data.yaml", name)
	}
	return nil
}

// handleListPolicies is GET /api/policies.
func (s *Server) handleListPolicies(w http.ResponseWriter, r *http.Request) error {
	files := []policyFile{}
	builtin := policy.BuiltinFiles()
	names, _ := fs.Glob(builtin, "*.rego")
	sort.Strings(names)
	for _, n := range names {
		st, err := fs.Stat(builtin, n)
		if err != nil {
			continue
		}
		files = append(files, policyFile{Name: n, Source: "builtin", ReadOnly: true, Size: st.Size()})
	}
	dir := s.policyDir()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == dir {
				return fs.SkipAll
			}
			return err
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if checkPolicyName(filepath.ToSlash(rel)) != nil {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		mt := info.ModTime().UTC()
		files = append(files, policyFile{Name: filepath.ToSlash(rel), Source: "admin", Size: info.Size(), ModifiedAt: &mt})
		return nil
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"dir": dir, "revision": s.app.Policy.Revision(),
		"last_error": s.lastPolicyError(), "files": files,
	})
	return nil
}

func (s *Server) lastPolicyError() *policyErrorJSON {
	err := s.app.Policy.LastError()
	var le *policy.LoadError
	if errors.As(err, &le) {
		return policyError(relativeProblems(le, s.policyDir()))
	}
	return policyError(err)
}

// handleGetPolicy is GET /api/policies/file?name=&source=.
func (s *Server) handleGetPolicy(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	name, source := q.Get("name"), q.Get("source")
	switch source {
	case "", "admin":
		if err := checkPolicyName(name); err != nil {
			return err
		}
		b, err := os.ReadFile(filepath.Join(s.policyDir(), filepath.FromSlash(name)))
		if errors.Is(err, fs.ErrNotExist) {
			return errs.Errorf(errs.ENOTFOUND, "no policy file %q in %s", name, s.policyDir())
		}
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, map[string]any{"name": name, "source": "admin", "read_only": false, "content": string(b)})
	case "builtin":
		if !policySegment.MatchString(name) || !strings.HasSuffix(name, ".rego") {
			return invalid("name", "a builtin policy name is a file name ending in .rego; GET /api/policies lists them")
		}
		b, err := fs.ReadFile(policy.BuiltinFiles(), name)
		if err != nil {
			return errs.Errorf(errs.ENOTFOUND, "no builtin policy file %q", name)
		}
		writeJSON(w, http.StatusOK, map[string]any{"name": name, "source": "builtin", "read_only": true, "content": string(b)})
	default:
		return invalid("source", "source must be admin or builtin")
	}
	return nil
}

// validatePolicyChange compiles the admin's policy set with one file
// replaced (content non-nil) or removed (content nil), in a scratch copy,
// exactly as the engine would load it.
func (s *Server) validatePolicyChange(ctx context.Context, name string, content []byte) error {
	dir := s.policyDir()
	tmp, err := os.MkdirTemp("", "nagent-policy-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == dir {
				return fs.SkipAll
			}
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(tmp, rel), 0o700)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(tmp, rel), b, 0o600)
	})
	if err != nil {
		return err
	}
	target := filepath.Join(tmp, filepath.FromSlash(name))
	if content == nil {
		if err := os.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	} else {
		if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(target, content, 0o600); err != nil {
			return err
		}
	}
	if _, err := policy.Check(ctx, tmp, policy.CheckOptions{}); err != nil {
		var le *policy.LoadError
		if errors.As(err, &le) {
			rel := relativeProblems(le, tmp)
			return &apiError{Status: http.StatusBadRequest, Code: errs.EINVALID, Field: "content",
				Message: "the policy does not compile; nothing was saved: " + rel.Error(), Problems: rel.Problems}
		}
		return err
	}
	return nil
}

// writeFileAtomic writes b to p through a temporary file and a rename, so
// the watcher never reads half a file.
func writeFileAtomic(p string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), p)
}

// handlePutPolicy is PUT /api/policies/file {"name","content"}.
func (s *Server) handlePutPolicy(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Name    string  `json:"name"`
		Content *string `json:"content"`
	}
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if err := checkPolicyName(req.Name); err != nil {
		return err
	}
	if req.Content == nil {
		return invalid("content", "content is required (the whole file)")
	}
	if len(*req.Content) > maxPolicyBytes {
		return invalid("content", "content is over %d bytes", maxPolicyBytes)
	}
	content := []byte(*req.Content)
	if err := s.validatePolicyChange(r.Context(), req.Name, content); err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(s.policyDir(), filepath.FromSlash(req.Name)), content); err != nil {
		return err
	}
	if err := s.app.Policy.Reload(r.Context()); err != nil {
		return err // someone changed another file meanwhile; the error names it
	}
	writeJSON(w, http.StatusOK, map[string]any{"name": req.Name, "revision": s.app.Policy.Revision(), "saved": true})
	return nil
}

// handleDeletePolicy is DELETE /api/policies/file?name=.
func (s *Server) handleDeletePolicy(w http.ResponseWriter, r *http.Request) error {
	name := r.URL.Query().Get("name")
	if err := checkPolicyName(name); err != nil {
		return err
	}
	p := filepath.Join(s.policyDir(), filepath.FromSlash(name))
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return errs.Errorf(errs.ENOTFOUND, "no policy file %q in %s", name, s.policyDir())
	}
	if err := s.validatePolicyChange(r.Context(), name, nil); err != nil {
		return err
	}
	if err := os.Remove(p); err != nil {
		return err
	}
	if err := s.app.Policy.Reload(r.Context()); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"deleted": true, "revision": s.app.Policy.Revision()})
	return nil
}

// handleEvalPolicy is POST /api/policies/eval {"kind","input"}.
func (s *Server) handleEvalPolicy(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Kind  string          `json:"kind"`
		Input json.RawMessage `json:"input"`
	}
	if err := decode(w, r, &req); err != nil {
		return err
	}
	var doc map[string]any
	if len(req.Input) == 0 || json.Unmarshal(req.Input, &doc) != nil || doc == nil {
		return invalid("input", "input must be a JSON object: the policy input document (policy/README.md)")
	}
	var decision any
	var err error
	switch req.Kind {
	case "", "tools":
		decision, err = s.app.Policy.EvalTools(r.Context(), doc)
	case "memory":
		decision, err = s.app.Policy.EvalMemory(r.Context(), doc)
	default:
		return invalid("kind", "kind must be tools or memory")
	}
	resp := map[string]any{"decision": decision}
	if err != nil {
		resp["error"] = err.Error() // evaluation failed: the decision is the fail-closed denial
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// handlePolicyDecisions is GET /api/policies/decisions?session_id=&limit=.
func (s *Server) handlePolicyDecisions(w http.ResponseWriter, r *http.Request) error {
	sid := r.URL.Query().Get("session_id")
	if sid != "" && !sessionIDPattern.MatchString(sid) {
		return invalid("session_id", "a session id is 1-128 characters of letters, digits and _ . : -")
	}
	limit, err := intParam(r, "limit", 50, 1, 500)
	if err != nil {
		return err
	}
	ds, err := s.app.DB.ListPolicyDecisions(r.Context(), store.PolicyDecisionFilter{SessionID: sid, Limit: limit})
	if err != nil {
		return err
	}
	if ds == nil {
		ds = []*store.PolicyDecision{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"decisions": ds})
	return nil
}
