package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Defaults of a zero RetryPolicy.
const (
	defaultMaxAttempts = 4
	defaultBaseDelay   = 500 * time.Millisecond
	defaultMaxDelay    = 20 * time.Second
)

// maxErrorMessage bounds the provider message kept in a ProviderError.
const maxErrorMessage = 500

// maxErrorBody bounds how much of an error response body is read.
const maxErrorBody = 64 << 10

// RetryPolicy decides how often and how patiently a provider adapter retries
// one inference request. Zero fields take the defaults: 4 attempts, a 500ms
// base delay and a 20s maximum delay.
//
// Retried are HTTP 408, 429, 500, 502, 503, 504 and 529 and transport errors
// (refused or dropped connections, per-attempt timeouts). Other statuses fail
// at once. Delays grow exponentially from BaseDelay with jitter, or follow the
// provider's Retry-After (or retry-after-ms) header; both are capped at
// MaxDelay.
type RetryPolicy struct {
	MaxAttempts         int
	BaseDelay, MaxDelay time.Duration
}

// withDefaults fills zero (or nonsensical) fields with the defaults.
func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = defaultMaxAttempts
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = defaultBaseDelay
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = defaultMaxDelay
	}
	if p.BaseDelay > p.MaxDelay {
		p.BaseDelay = p.MaxDelay
	}
	return p
}

// Do calls send until it yields a 2xx response, a non-retryable failure, or
// the attempts run out. provider names the provider in errors and logs
// ("openai", "anthropic").
//
// send performs one attempt with the context it is given and must build a
// fresh request each time. On success Do returns the response with its body
// unread; the caller closes it. Every failure answered by the provider or its
// transport is a *ProviderError carrying the status code (0 for transport
// errors), the provider's message and the attempt count. When ctx ends, Do
// stops at once and returns an error wrapping ctx.Err().
func (p RetryPolicy) Do(ctx context.Context, provider string, send func(ctx context.Context) (*http.Response, error)) (*http.Response, error) {
	p = p.withDefaults()
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, cancelled(provider, attempt-1, err)
		}
		resp, err := send(ctx)
		if ctxErr := ctx.Err(); ctxErr != nil {
			if resp != nil {
				resp.Body.Close()
			}
			return nil, cancelled(provider, attempt, ctxErr)
		}

		var delay time.Duration
		switch {
		case err != nil:
			if attempt >= p.MaxAttempts {
				return nil, &ProviderError{Provider: provider, Attempts: attempt, Err: err}
			}
			delay = p.backoff(attempt)
			slog.WarnContext(ctx, "llm: retrying after transport error",
				"provider", provider, "attempt", attempt, "delay", delay, "error", err.Error())
		case resp.StatusCode >= 200 && resp.StatusCode < 300:
			return resp, nil
		default:
			body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
			resp.Body.Close()
			if !retryableStatus(resp.StatusCode) || attempt >= p.MaxAttempts {
				return nil, &ProviderError{
					Provider:   provider,
					StatusCode: resp.StatusCode,
					Message:    errorMessage(body, resp.StatusCode),
					Attempts:   attempt,
				}
			}
			delay = p.delay(attempt, resp.Header, time.Now())
			slog.WarnContext(ctx, "llm: retrying after provider error",
				"provider", provider, "attempt", attempt, "status", resp.StatusCode, "delay", delay)
		}
		if err := sleep(ctx, delay); err != nil {
			return nil, cancelled(provider, attempt, err)
		}
	}
}

// cancelled reports that the caller's context ended the request.
func cancelled(provider string, attempts int, err error) error {
	return fmt.Errorf("%s request stopped after %d attempt(s): %w", provider, attempts, err)
}

// retryableStatus reports whether an HTTP status is worth another attempt.
func retryableStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusTooManyRequests,
		http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout,
		529: // Anthropic: overloaded
		return true
	}
	return false
}

// delay is the wait after a failed attempt (1-based) that answered with
// header h: the provider's Retry-After when it sent one, else the backoff.
func (p RetryPolicy) delay(attempt int, h http.Header, now time.Time) time.Duration {
	if d, ok := retryAfter(h, now); ok {
		return min(d, p.MaxDelay)
	}
	return p.backoff(attempt)
}

// backoff is BaseDelay·2^(attempt-1), capped at MaxDelay, with "equal
// jitter": a uniformly random value in [d/2, d].
func (p RetryPolicy) backoff(attempt int) time.Duration {
	d := p.BaseDelay
	for i := 1; i < attempt && d < p.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, p.MaxDelay)
	half := d / 2
	return half + rand.N(d-half+1)
}

// retryAfter reads the provider's requested delay from retry-after-ms
// (milliseconds, as OpenAI sends) or Retry-After (seconds or an HTTP date).
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	return parseRetryAfter(h.Get("Retry-After"), now)
}

// parseRetryAfter parses a Retry-After value: delay seconds (a decimal
// fraction is tolerated) or an HTTP date. A date in the past means no wait.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs < 0 || secs > 1e9 {
			return 0, false
		}
		return time.Duration(secs * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// sleep waits for d or until ctx ends, whichever is first.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// errorMessage extracts what the provider said from an error body: the
// error.message of an OpenAI or Anthropic error document, a top-level error
// string or message, else the trimmed body text, else the status text. The
// result is at most maxErrorMessage bytes.
func errorMessage(body []byte, status int) string {
	msg := ""
	var doc struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &doc) == nil {
		var obj struct {
			Message string `json:"message"`
		}
		var str string
		switch {
		case json.Unmarshal(doc.Error, &obj) == nil && obj.Message != "":
			msg = obj.Message
		case json.Unmarshal(doc.Error, &str) == nil && str != "":
			msg = str
		case doc.Message != "":
			msg = doc.Message
		}
	}
	if msg == "" {
		msg = string(bytes.TrimSpace(body))
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	return truncate(strings.TrimSpace(msg), maxErrorMessage)
}

// truncate shortens s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// SendAttempt sends req once with client (http.DefaultClient when nil) under
// a per-attempt timeout, for use inside the send function of
// RetryPolicy.Do. The request runs with ctx; req's own context is ignored.
//
// The timeout covers the wait for response headers and then:
//   - for stream == false, reading a 2xx body, which SendAttempt reads whole
//     so that a body cut short is a retryable transport error; the returned
//     body is in memory;
//   - for stream == true, the gaps between reads of the body, so a live
//     stream may run longer than timeout but a stalled one fails.
//
// An expired attempt returns an error that says so and matches
// context.DeadlineExceeded with errors.Is; ctx's own cancellation is passed
// through unchanged. timeout <= 0 means no per-attempt timeout.
func SendAttempt(ctx context.Context, client *http.Client, req *http.Request, timeout time.Duration, stream bool) (*http.Response, error) {
	if client == nil {
		client = http.DefaultClient
	}
	actx, cancel := context.WithCancelCause(ctx)
	b := &attemptBody{parent: ctx, attempt: actx, cancel: cancel, timeout: timeout}
	if timeout > 0 {
		b.timer = time.AfterFunc(timeout, func() { cancel(&attemptTimeoutError{timeout: timeout}) })
	}
	resp, err := client.Do(req.WithContext(actx))
	if err != nil {
		err = b.explain(err)
		b.release()
		return nil, err
	}
	b.rc = resp.Body
	resp.Body = b
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	switch {
	case ok && !stream:
		data, err := io.ReadAll(b)
		b.Close()
		if err != nil {
			return nil, fmt.Errorf("read response body: %w", err)
		}
		resp.Body = io.NopCloser(bytes.NewReader(data))
	case ok && stream && b.timer != nil:
		b.idle = true
		b.timer.Reset(timeout)
	}
	return resp, nil
}

// attemptTimeoutError is the cause of an attempt cut off by its timeout.
type attemptTimeoutError struct{ timeout time.Duration }

func (e *attemptTimeoutError) Error() string {
	return fmt.Sprintf("attempt timeout: no answer within %v", e.timeout)
}

// Timeout marks the error as a timeout for net.Error-style checks.
func (e *attemptTimeoutError) Timeout() bool { return true }

func (e *attemptTimeoutError) Unwrap() error { return context.DeadlineExceeded }

// attemptBody is a response body that owns its attempt's context and timer.
type attemptBody struct {
	rc      io.ReadCloser
	parent  context.Context
	attempt context.Context
	cancel  context.CancelCauseFunc
	timer   *time.Timer
	timeout time.Duration
	idle    bool // reset the timer after every successful read
}

// Read reads from the body, renewing an idle timeout.
func (b *attemptBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 && b.idle {
		b.timer.Reset(b.timeout)
	}
	if err != nil && err != io.EOF {
		err = b.explain(err)
	}
	return n, err
}

// Close closes the body and releases the attempt.
func (b *attemptBody) Close() error {
	err := b.rc.Close()
	b.release()
	return err
}

func (b *attemptBody) release() {
	if b.timer != nil {
		b.timer.Stop()
	}
	b.cancel(nil)
}

// explain replaces the transport's "context canceled" with the attempt
// timeout when that is what ended the attempt and the caller is still waiting.
func (b *attemptBody) explain(err error) error {
	var te *attemptTimeoutError
	if b.parent.Err() != nil || !errors.As(context.Cause(b.attempt), &te) {
		return err
	}
	if errors.As(err, &te) {
		return err
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return &url.Error{Op: ue.Op, URL: ue.URL, Err: te}
	}
	return te
}
