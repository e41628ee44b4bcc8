package web

import (
	"context"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/wasm"
)

// maxPluginUpload bounds a plugin upload (manifest plus module).
const maxPluginUpload = 64 << 20

func (s *Server) plugins() (*wasm.Host, error) {
	if s.app.Plugins == nil {
		return nil, errs.Errorf(errs.EUNAVAILABLE, "the plugin host is not running in this server")
	}
	return s.app.Plugins, nil
}

// handleListPlugins is GET /api/plugins.
func (s *Server) handleListPlugins(w http.ResponseWriter, r *http.Request) error {
	h, err := s.plugins()
	if err != nil {
		return err
	}
	st := h.Statuses()
	if st == nil {
		st = []wasm.Status{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"plugins": st, "dir": h.Dir()})
	return nil
}

// handleUploadPlugin is POST /api/plugins (multipart: manifest, module).
func (s *Server) handleUploadPlugin(w http.ResponseWriter, r *http.Request) error {
	h, err := s.plugins()
	if err != nil {
		return err
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
		return invalid("", "send the plugin as multipart/form-data with the parts manifest (plugin.yaml) and module (.wasm)")
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxPluginUpload)
	if err := r.ParseMultipartForm(8 << 20); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return newError(http.StatusRequestEntityTooLarge, codeTooLarge, "the upload is over %d bytes", tooBig.Limit)
		}
		return invalid("", "cannot read the multipart body: %v", err)
	}
	defer r.MultipartForm.RemoveAll()
	manifestFile, err := formFile(r, "manifest")
	if err != nil {
		return err
	}
	moduleFile, err := formFile(r, "module")
	if err != nil {
		return err
	}
	manifestBytes, err := readPart(manifestFile, 1<<20)
	if err != nil {
		return invalid("manifest", "manifest: %v", err)
	}
	m, err := wasm.ParseManifest(wasm.ManifestFile, manifestBytes)
	if err != nil {
		return invalid("manifest", "%s", strings.TrimPrefix(err.Error(), "wasm.ParseManifest: "))
	}
	if filepath.Base(m.Module) != m.Module || m.Module == "" || strings.HasPrefix(m.Module, ".") {
		return invalid("manifest", "the manifest's module must be a plain file name such as %s.wasm for an upload", m.Name)
	}
	dir, err := os.MkdirTemp("", "nagent-plugin-upload-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, wasm.ManifestFile), manifestBytes, 0o600); err != nil {
		return err
	}
	if err := savePart(moduleFile, filepath.Join(dir, m.Module)); err != nil {
		return err
	}
	var st wasm.Status
	if _, err := wasm.Install(r.Context(), dir, h.Dir(), func(ctx2 context.Context, d string) error {
		st = h.Inspect(ctx2, d)
		if st.State == wasm.StateError {
			return errs.Errorf(errs.EINVALID, "plugin %s does not load: %s", st.Name, st.Error)
		}
		return nil
	}); err != nil {
		return err
	}
	if _, err := h.Load(r.Context()); err != nil {
		s.log.Warn("reloading plugins after an upload failed", "err", err)
	}
	for _, cur := range h.Statuses() {
		if cur.Name == st.Name {
			st = cur
		}
	}
	writeJSON(w, http.StatusCreated, map[string]any{"plugin": st})
	return nil
}

func formFile(r *http.Request, field string) (*multipart.FileHeader, error) {
	fhs := r.MultipartForm.File[field]
	if len(fhs) != 1 {
		return nil, invalid(field, "the part %q is required, exactly once, as a file", field)
	}
	return fhs[0], nil
}

func readPart(fh *multipart.FileHeader, limit int64) ([]byte, error) {
	f, err := fh.Open()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, errors.New("too large")
	}
	return b, nil
}

func savePart(fh *multipart.FileHeader, dst string) error {
	f, err := fh.Open()
	if err != nil {
		return err
	}
	defer f.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, f); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func (s *Server) pluginName(r *http.Request) (string, error) {
	name := r.PathValue("name")
	if !namePattern.MatchString(name) {
		return "", invalid("name", "a plugin name is 1-64 characters of a-z 0-9 _ -")
	}
	return name, nil
}

// handleDeletePlugin is DELETE /api/plugins/{name}.
func (s *Server) handleDeletePlugin(w http.ResponseWriter, r *http.Request) error {
	h, err := s.plugins()
	if err != nil {
		return err
	}
	name, err := s.pluginName(r)
	if err != nil {
		return err
	}
	if err := wasm.Remove(h.Dir(), name); err != nil {
		return err
	}
	if _, err := h.Load(r.Context()); err != nil {
		s.log.Warn("reloading plugins after a removal failed", "err", err)
	}
	writeJSON(w, http.StatusOK, map[string]bool{"deleted": true})
	return nil
}

// handleCallPlugin is POST /api/plugins/{name}/call {"tool","arguments"}:
// an admin's direct call, which (like `nagent plugin call`) is not put to
// the tool policy.
func (s *Server) handleCallPlugin(w http.ResponseWriter, r *http.Request) error {
	h, err := s.plugins()
	if err != nil {
		return err
	}
	name, err := s.pluginName(r)
	if err != nil {
		return err
	}
	var req struct {
		Tool      string         `json:"tool"`
		Arguments map[string]any `json:"arguments"`
	}
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if req.Tool == "" || len(req.Tool) > 128 {
		return invalid("tool", "tool is required: one of the plugin's tools")
	}
	var st *wasm.Status
	for _, cur := range h.Statuses() {
		if cur.Name == name {
			st = &cur
		}
	}
	switch {
	case st == nil:
		return errs.Errorf(errs.ENOTFOUND, "plugin %s is not installed", name)
	case st.State != wasm.StateReady:
		return errs.Errorf(errs.ECONFLICT, "plugin %s is %s: %s", name, st.State, st.Error)
	case !slices.Contains(st.Tools, req.Tool):
		return errs.Errorf(errs.ENOTFOUND, "plugin %s has no tool %s; its tools: %s", name, req.Tool, strings.Join(st.Tools, ", "))
	}
	if req.Arguments == nil {
		req.Arguments = map[string]any{}
	}
	args := string(mustJSON(req.Arguments))
	start := time.Now()
	content, err := h.Execute(r.Context(), tools.ToolCallRequest{ID: newID("call_"), Name: req.Tool, Arguments: args},
		tools.ExecutionContext{SessionID: "dashboard-plugin-call", Source: SourceDashboard, AgentContext: tools.AgentPrimary})
	resp := map[string]any{"status": tools.StatusSuccess, "content": content, "error": "", "duration_ms": time.Since(start).Milliseconds()}
	if err != nil {
		resp["status"], resp["error"] = tools.StatusError, err.Error()
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}
