package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/nagent/nagent/policy"
	"github.com/nagent/nagent/runtime/errs"
)

// Error codes of the dashboard API besides the errs codes (see API.md).
const (
	codeMethodNotAllowed = "method_not_allowed"
	codeTooLarge         = "too_large"
)

// apiError is the body of every error answer:
// {"error":{"code","message","field","problems"}}.
type apiError struct {
	Status   int              `json:"-"`
	Code     string           `json:"code"`
	Message  string           `json:"message"`
	Field    string           `json:"field,omitempty"`
	Problems []policy.Problem `json:"problems,omitempty"`
}

func (e *apiError) Error() string { return e.Message }

func newError(status int, code, format string, args ...any) *apiError {
	return &apiError{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// invalid is a 400 naming the field at fault.
func invalid(field, format string, args ...any) *apiError {
	e := newError(http.StatusBadRequest, errs.EINVALID, format, args...)
	e.Field = field
	return e
}

// statusOf maps an errs code to its HTTP status, in one place.
func statusOf(code string) int {
	switch code {
	case errs.EINVALID:
		return http.StatusBadRequest
	case errs.EUNAUTHORIZED:
		return http.StatusUnauthorized
	case errs.EFORBIDDEN:
		return http.StatusForbidden
	case errs.ENOTFOUND:
		return http.StatusNotFound
	case errs.ECONFLICT:
		return http.StatusConflict
	case errs.EBUSY:
		return http.StatusTooManyRequests
	case errs.EUNAVAILABLE:
		return http.StatusServiceUnavailable
	case codeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case codeTooLarge:
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusInternalServerError
}

// writeError answers err: an *apiError as it is, a coded errs.Error with its
// code and message, anything else as "internal error" (logged by the caller).
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		code := errs.Code(err)
		ae = &apiError{Code: code, Message: errs.Message(err)}
		var le *policy.LoadError
		if errors.As(err, &le) {
			ae.Code, ae.Message, ae.Problems = errs.EINVALID, le.Error(), le.Problems
		}
		if ae.Code == errs.EINTERNAL {
			s.log.Error("dashboard API error", "method", r.Method, "path", r.URL.Path, "err", err)
		}
	}
	if ae.Status == 0 {
		ae.Status = statusOf(ae.Code)
	}
	writeJSON(w, ae.Status, map[string]any{"error": ae})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// maxBody is the default request body limit.
const maxBody = 1 << 20

// decode reads a JSON body of at most maxBody bytes into v, rejecting
// unknown fields and trailing data.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return newError(http.StatusUnsupportedMediaType, errs.EINVALID, "send the body as application/json, not %s", ct)
	}
	body := http.MaxBytesReader(w, r.Body, maxBody)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return bodyError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return invalid("", "the body must hold exactly one JSON object")
	}
	return nil
}

func bodyError(err error) error {
	var tooBig *http.MaxBytesError
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &tooBig):
		return newError(http.StatusRequestEntityTooLarge, codeTooLarge, "the body is over %d bytes", tooBig.Limit)
	case errors.Is(err, io.EOF):
		return invalid("", "the body is empty; send a JSON object")
	case errors.As(err, &syn):
		return invalid("", "the body is not valid JSON (at byte %d): %v", syn.Offset, err)
	case errors.As(err, &typ):
		return invalid(typ.Field, "%s must be a JSON %s, not %s", fieldName(typ.Field), typ.Type.Kind(), typ.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		f := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return invalid(f, "unknown field %q; see web/API.md for this endpoint's fields", f)
	}
	return invalid("", "cannot read the body: %v", err)
}

func fieldName(f string) string {
	if f == "" {
		return "the body"
	}
	return f
}
