// Package transport owns the HTTP exchange the provider adapters share: a
// JSON request posted under the retry policy, its answer read whole or as
// server-sent events, and the redaction of the API key from provider errors.
// Each adapter keeps its own wire mapping and error wording.
package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/nagent/nagent/runtime/llm"
)

// Endpoint is one provider inference endpoint and how an adapter talks to it.
type Endpoint struct {
	// Provider names the provider in errors and logs ("openai", "anthropic").
	Provider string
	// URL is where requests are posted.
	URL string
	// Client sends the requests; nil means http.DefaultClient.
	Client *http.Client
	// Retry governs retries of failed attempts.
	Retry llm.RetryPolicy
	// Timeout bounds one attempt (see llm.SendAttempt); 0 means none.
	Timeout time.Duration
	// SetHeaders adds the adapter's headers to every attempt, after
	// Content-Type and Accept, which it may override.
	SetHeaders func(h http.Header)
	// ParseResponse reads a whole JSON answer. attempts is the number of
	// attempts made, for in-band errors.
	ParseResponse func(body []byte, attempts int) (*llm.Response, error)
	// ReadStream reads an event-stream answer to its end, calling onDelta
	// for every increment.
	ReadStream func(body io.Reader, onDelta llm.DeltaFunc, attempts int) (*llm.Response, error)
}

// Post sends body, a JSON request, to the endpoint under the retry policy
// and returns the parsed answer. With onDelta non-nil the request asks for
// an event stream and the answer is read with ReadStream; a server that
// answers one JSON document instead is read with ParseResponse and its
// content and reasoning are passed to onDelta as a single increment.
//
// Failures answered by the provider or its transport are *llm.ProviderError
// values, as llm.RetryPolicy.Do returns them; errors of the parse functions
// pass through unchanged. When ctx ends while the answer is read, Post
// returns ctx.Err() itself.
func (e *Endpoint) Post(ctx context.Context, body []byte, onDelta llm.DeltaFunc) (*llm.Response, error) {
	stream := onDelta != nil
	attempts := 0
	httpResp, err := e.Retry.Do(ctx, e.Provider, func(ctx context.Context) (*http.Response, error) {
		attempts++
		hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		e.setHeaders(hreq.Header, stream)
		return llm.SendAttempt(ctx, e.Client, hreq, e.Timeout, stream)
	})
	if err != nil {
		return nil, err
	}
	defer httpResp.Body.Close()

	if stream && !isJSON(httpResp.Header.Get("Content-Type")) {
		resp, err := e.ReadStream(httpResp.Body, onDelta, attempts)
		if err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err == nil {
			// Read what follows the final event (the chunked terminator) so
			// the connection goes back to the pool instead of being closed.
			io.CopyN(io.Discard, httpResp.Body, 4<<10)
		}
		return resp, err
	}
	// A server that ignored "stream" answers one JSON document.
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(httpResp.Body); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("read response: %w", err)
	}
	resp, err := e.ParseResponse(buf.Bytes(), attempts)
	if err != nil {
		return nil, err
	}
	if stream && (resp.Content != "" || resp.ReasoningContent != "") {
		onDelta(llm.Delta{Content: resp.Content, ReasoningContent: resp.ReasoningContent})
	}
	return resp, nil
}

// setHeaders sets the content negotiation of one attempt, then the
// adapter's headers.
func (e *Endpoint) setHeaders(h http.Header, stream bool) {
	h.Set("Content-Type", "application/json")
	if stream {
		h.Set("Accept", "text/event-stream")
	} else {
		h.Set("Accept", "application/json")
	}
	if e.SetHeaders != nil {
		e.SetHeaders(h)
	}
}

const minSecretLen = 8

func isJSON(contentType string) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	return mt == "application/json"
}

// Redact removes secret from the message of a *llm.ProviderError in err's
// chain (some providers echo a rejected key back) and returns err. Secrets
// shorter than minSecretLen ("x", "EMPTY", "ollama": placeholders local
// servers accept) are left alone, since replacing them would mangle the
// message without protecting anything.
func Redact(err error, secret string) error {
	var pe *llm.ProviderError
	if len(secret) >= minSecretLen && errors.As(err, &pe) {
		pe.Message = strings.ReplaceAll(pe.Message, secret, "[redacted]")
	}
	return err
}
