package transport_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/llm/internal/providertest"
	"github.com/nagent/nagent/runtime/llm/internal/transport"
)

// recorder is the fake adapter behind an Endpoint: it records what Post
// hands to its parse functions and answers with the response it is given.
type recorder struct {
	resp      llm.Response
	err       error
	parsed    []string // bodies given to ParseResponse
	streamed  []string // bodies given to ReadStream
	attempts  int      // attempts given to the last parse
	midStream func()   // called inside ReadStream, when set
}

func (r *recorder) parse(body []byte, attempts int) (*llm.Response, error) {
	r.parsed, r.attempts = append(r.parsed, string(body)), attempts
	if r.err != nil {
		return nil, r.err
	}
	resp := r.resp
	return &resp, nil
}

func (r *recorder) readStream(body io.Reader, onDelta llm.DeltaFunc, attempts int) (*llm.Response, error) {
	b, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	r.streamed, r.attempts = append(r.streamed, string(b)), attempts
	if r.midStream != nil {
		r.midStream()
	}
	if r.err != nil {
		return nil, r.err
	}
	onDelta(llm.Delta{Content: "streamed"})
	resp := r.resp
	return &resp, nil
}

// MustServe starts a server for h that closes with the test and returns an
// Endpoint posting to it with rec as the adapter.
func MustServe(tb testing.TB, rec *recorder, h http.HandlerFunc) *transport.Endpoint {
	tb.Helper()
	hs := httptest.NewServer(h)
	tb.Cleanup(hs.Close)
	return &transport.Endpoint{
		Provider:      "fake",
		URL:           hs.URL + "/v1/chat",
		Retry:         providertest.FastRetry,
		Timeout:       5 * time.Second,
		SetHeaders:    func(h http.Header) { h.Set("X-Key", "k1") },
		ParseResponse: rec.parse,
		ReadStream:    rec.readStream,
	}
}

// answer returns a handler that records each request's headers and body and
// answers with contentType and body.
func answer(seen *[]http.Header, bodies *[]string, contentType, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		*seen = append(*seen, r.Header.Clone())
		*bodies = append(*bodies, r.Method+" "+r.URL.Path+" "+string(b))
		w.Header().Set("Content-Type", contentType)
		io.WriteString(w, body)
	}
}

// eventStream returns a handler that answers every request with body as an
// event stream.
func eventStream(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, body)
	}
}

// deltaSink returns nil, for a blocking call, or a DeltaFunc that drops
// every increment, for a streaming one.
func deltaSink(stream bool) llm.DeltaFunc {
	if !stream {
		return nil
	}
	return func(llm.Delta) {}
}

var postTests = []struct {
	name        string
	stream      bool
	contentType string
	resp        llm.Response
	wantAccept  string
	wantParsed  bool // ParseResponse, not ReadStream, reads the answer
	wantDeltas  []string
}{
	{
		name: "JSON", contentType: "application/json", resp: llm.Response{Content: "hi", ReasoningContent: "r"},
		wantAccept: "application/json", wantParsed: true,
	},
	{
		name: "Stream", stream: true, contentType: "text/event-stream",
		wantAccept: "text/event-stream", wantDeltas: []string{"C:streamed"},
	},
	{
		name: "StreamAnsweredWithJSON", stream: true, contentType: "application/json; charset=utf-8",
		resp:       llm.Response{Content: "whole", ReasoningContent: "thought"},
		wantAccept: "text/event-stream", wantParsed: true, wantDeltas: []string{"R:thought", "C:whole"},
	},
	{
		name: "StreamAnsweredWithEmptyJSON", stream: true, contentType: "application/json",
		resp:       llm.Response{FinishReason: llm.FinishToolCalls},
		wantAccept: "text/event-stream", wantParsed: true,
	},
}

func TestPost(t *testing.T) {
	for _, tt := range postTests {
		t.Run(tt.name, func(t *testing.T) {
			var headers []http.Header
			var requests []string
			rec := &recorder{resp: tt.resp}
			e := MustServe(t, rec, answer(&headers, &requests, tt.contentType, "ANSWER"))
			var deltas []string
			var onDelta llm.DeltaFunc
			if tt.stream {
				onDelta = providertest.Collect(&deltas)
			}
			got, err := e.Post(context.Background(), []byte(`{"q":1}`), onDelta)
			if err != nil {
				t.Fatalf("Post: %v", err)
			}
			if !reflect.DeepEqual(*got, tt.resp) {
				t.Errorf("response = %+v, want %+v", *got, tt.resp)
			}
			if want := []string{`POST /v1/chat {"q":1}`}; !reflect.DeepEqual(requests, want) {
				t.Fatalf("requests = %q, want %q", requests, want)
			}
			h := headers[0]
			if h.Get("Content-Type") != "application/json" || h.Get("Accept") != tt.wantAccept || h.Get("X-Key") != "k1" {
				t.Errorf("headers = %v, want JSON, Accept %s and the adapter's X-Key", h, tt.wantAccept)
			}
			parsed, streamed := rec.parsed, rec.streamed
			if !tt.wantParsed {
				parsed, streamed = streamed, parsed
			}
			if !reflect.DeepEqual(parsed, []string{"ANSWER"}) || len(streamed) != 0 || rec.attempts != 1 {
				t.Errorf("parsed %q, streamed %q, attempts %d", rec.parsed, rec.streamed, rec.attempts)
			}
			if !reflect.DeepEqual(deltas, tt.wantDeltas) {
				t.Errorf("deltas = %q, want %q", deltas, tt.wantDeltas)
			}
		})
	}
}

func TestPostAdapterHeadersOverride(t *testing.T) {
	var headers []http.Header
	var requests []string
	rec := &recorder{}
	e := MustServe(t, rec, answer(&headers, &requests, "application/json", "{}"))
	e.SetHeaders = func(h http.Header) { h.Set("Content-Type", "application/vnd.custom+json") }
	if _, err := e.Post(context.Background(), []byte("{}"), nil); err != nil {
		t.Fatalf("Post: %v", err)
	}
	if got := headers[0].Get("Content-Type"); got != "application/vnd.custom+json" {
		t.Errorf("Content-Type = %q, want the adapter's", got)
	}
}

func TestPostRetries(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("Stream=", stream), func(t *testing.T) {
			var calls atomic.Int32
			rec := &recorder{}
			e := MustServe(t, rec, func(w http.ResponseWriter, r *http.Request) {
				if calls.Add(1) == 1 {
					http.Error(w, "busy", http.StatusServiceUnavailable)
					return
				}
				eventStream("ok")(w, r)
			})
			if _, err := e.Post(context.Background(), []byte("{}"), deltaSink(stream)); err != nil {
				t.Fatalf("Post: %v", err)
			}
			if calls.Load() != 2 || rec.attempts != 2 {
				t.Errorf("calls = %d, attempts given to the parser = %d; want 2, 2", calls.Load(), rec.attempts)
			}
		})
	}
}

func TestPostErrors(t *testing.T) {
	errParse := errors.New("decode response: no choices")
	t.Run("ProviderError", func(t *testing.T) {
		rec := &recorder{}
		e := MustServe(t, rec, func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"error":{"message":"bad schema"}}`, http.StatusBadRequest)
		})
		_, err := e.Post(context.Background(), []byte("{}"), nil)
		var pe *llm.ProviderError
		if !errors.As(err, &pe) || pe.Provider != "fake" || pe.StatusCode != 400 || pe.Message != "bad schema" || pe.Attempts != 1 {
			t.Fatalf("err = %#v, want a ProviderError for fake's HTTP 400", err)
		}
		if len(rec.parsed)+len(rec.streamed) != 0 {
			t.Errorf("an error answer was parsed")
		}
	})
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("ParseError/Stream=", stream), func(t *testing.T) {
			e := MustServe(t, &recorder{err: errParse}, eventStream("x"))
			if _, err := e.Post(context.Background(), []byte("{}"), deltaSink(stream)); err != errParse {
				t.Fatalf("err = %v, want the parser's %v", err, errParse)
			}
		})
	}
	t.Run("CancelledWhileStreaming", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		rec := &recorder{err: errors.New("read stream: connection reset"), midStream: cancel}
		e := MustServe(t, rec, eventStream("x"))
		if _, err := e.Post(ctx, []byte("{}"), deltaSink(true)); err != context.Canceled {
			t.Fatalf("err = %v, want context.Canceled itself", err)
		}
	})
	t.Run("JSONBodyCutShortWhileStreaming", func(t *testing.T) {
		rec := &recorder{}
		e := MustServe(t, rec, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "100")
			io.WriteString(w, `{"partial":`)
		})
		_, err := e.Post(context.Background(), []byte("{}"), deltaSink(true))
		if err == nil || !strings.HasPrefix(err.Error(), "read response: ") || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("err = %v, want read response: unexpected EOF", err)
		}
	})
}

var redactTests = []struct {
	name   string
	err    error
	secret string
	want   string // the error text after Redact
}{
	{"ProviderError", &llm.ProviderError{Provider: "p", StatusCode: 401, Message: "bad key sk-live-1, sk-live-1", Attempts: 1}, "sk-live-1", "p provider answered HTTP 401 after 1 attempt(s): bad key [redacted], [redacted]"},
	{"Joined", errors.Join(errors.New("op"), &llm.ProviderError{Provider: "p", Message: "key sk-live-1"}), "sk-live-1", "op\np provider: key [redacted]"},
	{"PlaceholderKeyLeftAlone", &llm.ProviderError{Provider: "p", Message: "upstream exploded"}, "x", "p provider: upstream exploded"},
	{"NoSecret", &llm.ProviderError{Provider: "p", Message: "key sk-1"}, "", "p provider: key sk-1"},
	{"OtherError", errors.New("dial sk-1"), "sk-1", "dial sk-1"},
}

func TestRedact(t *testing.T) {
	for _, tt := range redactTests {
		t.Run(tt.name, func(t *testing.T) {
			got := transport.Redact(tt.err, tt.secret)
			if got != tt.err {
				t.Errorf("Redact returned %v, want the error it was given", got)
			}
			if got.Error() != tt.want {
				t.Errorf("error = %q, want %q", got.Error(), tt.want)
			}
		})
	}
	if transport.Redact(nil, "sk-1") != nil {
		t.Errorf("Redact(nil) != nil")
	}
}
