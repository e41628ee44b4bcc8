package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/nagent/nagent/runtime/errs"
)

// apiError is OpenAI's error object with the HTTP status it travels with.
type apiError struct {
	Status     int     `json:"-"`
	Message    string  `json:"message"`
	Type       string  `json:"type"`
	Param      *string `json:"param"`
	Code       *string `json:"code"`
	RetryAfter int     `json:"-"` // seconds, for 429 and 503
}

func (e *apiError) Error() string { return e.Message }

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// invalid is a 400 invalid_request_error naming the offending parameter.
func invalid(param, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: strPtr(param), Message: fmt.Sprintf(format, args...)}
}

func newAPIError(status int, typ, code, format string, args ...any) *apiError {
	return &apiError{Status: status, Type: typ, Code: strPtr(code), Message: fmt.Sprintf(format, args...)}
}

// fromError maps a runtime error to an API error. Coded errors keep their
// message; anything else is logged and reported as an internal error.
func fromError(log *slog.Logger, err error) *apiError {
	var api *apiError
	if errors.As(err, &api) {
		return api
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return newAPIError(http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large",
			"request body is larger than %d bytes", mbe.Limit)
	}
	msg := errs.Message(err)
	switch errs.Code(err) {
	case errs.EINVALID:
		return newAPIError(http.StatusBadRequest, "invalid_request_error", "", "%s", msg)
	case errs.ENOTFOUND:
		return newAPIError(http.StatusNotFound, "invalid_request_error", "not_found", "%s", msg)
	case errs.EUNAUTHORIZED:
		return newAPIError(http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "%s", msg)
	case errs.EFORBIDDEN:
		return newAPIError(http.StatusForbidden, "invalid_request_error", "forbidden", "%s", msg)
	case errs.ECONFLICT:
		return newAPIError(http.StatusConflict, "invalid_request_error", "conflict", "%s", msg)
	case errs.EBUSY:
		e := newAPIError(http.StatusTooManyRequests, "rate_limit_error", "session_busy", "%s", msg)
		e.RetryAfter = 1
		return e
	case errs.EUNAVAILABLE:
		e := newAPIError(http.StatusServiceUnavailable, "server_error", "unavailable", "%s", msg)
		e.RetryAfter = 1
		return e
	}
	log.Error("internal error", "error", err)
	return newAPIError(http.StatusInternalServerError, "server_error", "internal_error", "internal error")
}

// writeError writes e as {"error": {...}} with its status.
func writeError(w http.ResponseWriter, e *apiError) {
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	writeJSON(w, e.Status, map[string]any{"error": e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}
