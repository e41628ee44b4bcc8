package openai

import (
	"net/http"
)

// Model is an entry of GET /v1/models.
type Model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func (s *Server) model(id string) Model {
	return Model{ID: id, Object: "model", Created: 0, OwnedBy: "nagent"}
}

func (s *Server) handleListModels(w http.ResponseWriter, r *http.Request) {
	data := make([]Model, 0, len(s.models))
	for _, id := range s.models {
		data = append(data, s.model(id))
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

func (s *Server) handleGetModel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	for _, m := range s.models {
		if m == id {
			writeJSON(w, http.StatusOK, s.model(id))
			return
		}
	}
	writeError(w, newAPIError(http.StatusNotFound, "invalid_request_error", "model_not_found", "The model %q does not exist", id))
}
