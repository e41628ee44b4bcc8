package llm

import (
	"net/http"
	"time"
)

// Hooks for the external tests in package llm_test.
var (
	ParseRetryAfter = parseRetryAfter
	ErrorMessage    = errorMessage
)

// Delay exposes the wait RetryPolicy.Do would take after a failed attempt.
func (p RetryPolicy) Delay(attempt int, h http.Header, now time.Time) time.Duration {
	return p.withDefaults().delay(attempt, h, now)
}
