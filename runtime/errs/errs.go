// Package errs owns N-Agent's coded error: an Error carries a Code that entry
// adapters map to a status (HTTP, JSON-RPC, exit code) in one place, and a
// Message that is safe to show a user. Uncoded errors are internal.
package errs

import (
	"errors"
	"fmt"
)

// Error codes.
const (
	EINVALID      = "invalid"
	ENOTFOUND     = "not_found"
	ECONFLICT     = "conflict"
	EUNAUTHORIZED = "unauthorized"
	EFORBIDDEN    = "forbidden"
	EUNAVAILABLE  = "unavailable"
	EBUSY         = "busy"
	EINTERNAL     = "internal"
)

// Error is an error whose Message may be shown to the user.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }

// Errorf returns a coded error with a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Code returns the code of the first coded error in err's chain, or
// EINTERNAL for an uncoded error, or "" for nil.
func Code(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// Message returns the user-safe message of err: the coded error's message,
// or "internal error" for an uncoded error.
func Message(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// MessageOrError returns the coded message of err, or err.Error() for an
// uncoded error. Use it where the reader is the operator or the model, not
// an anonymous API client.
func MessageOrError(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}
