package openai

import "net/http"

func (s *Server) handleCreateResponse(w http.ResponseWriter, r *http.Request) {
	writeError(w, newAPIError(http.StatusNotImplemented, "invalid_request_error", "not_implemented", "not implemented yet"))
}

func (s *Server) handleGetResponse(w http.ResponseWriter, r *http.Request) {
	writeError(w, newAPIError(http.StatusNotImplemented, "invalid_request_error", "not_implemented", "not implemented yet"))
}
