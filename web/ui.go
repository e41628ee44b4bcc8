package web

import (
	"io/fs"
	"net/http"
	"path"
	"strings"
)

// handleUI serves the embedded single-page app: / and client-side routes
// get index.html, /assets/<file> gets web/ui/<file>.
func (s *Server) handleUI(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "frame-ancestors 'none'")
	name, ok := strings.CutPrefix(r.URL.Path, "/assets/")
	if !ok {
		if strings.Contains(path.Base(r.URL.Path), ".") && r.URL.Path != "/" {
			// favicon.ico and the like: serve from the UI root if present.
			name = strings.TrimPrefix(r.URL.Path, "/")
		} else {
			name = "index.html"
			w.Header().Set("Cache-Control", "no-cache")
		}
	} else {
		w.Header().Set("Cache-Control", "no-cache")
	}
	name = path.Clean(name)
	if !fs.ValidPath(name) {
		http.NotFound(w, r)
		return
	}
	if st, err := fs.Stat(s.ui, name); err != nil || st.IsDir() {
		http.NotFound(w, r)
		return
	}
	http.ServeFileFS(w, r, s.ui, name)
}
