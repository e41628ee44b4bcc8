package web

import (
	"net/http"
	"strings"
)

// Mount returns the root handler of the listener `nagent serve` shares:
// /v1/*, /healthz and /readyz go to api (the OpenAI-compatible server),
// everything else (/, /assets/*, /api/*, /ws) to the dashboard.
func Mount(api http.Handler, dash *Server) http.Handler {
	web := dash.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if p == "/v1" || strings.HasPrefix(p, "/v1/") || p == "/healthz" || p == "/readyz" {
			api.ServeHTTP(w, r)
			return
		}
		web.ServeHTTP(w, r)
	})
}
