package llm_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/llm"
)

var parseRetryAfterTests = []struct {
	name   string
	value  string
	want   time.Duration
	wantOK bool
}{
	{"Seconds", "1", time.Second, true},
	{"Zero", "0", 0, true},
	{"Fraction", "1.5", 1500 * time.Millisecond, true},
	{"Padded", " 7 ", 7 * time.Second, true},
	{"HTTPDate", "Wed, 21 Oct 2015 07:28:10 GMT", 10 * time.Second, true},
	{"PastDate", "Wed, 21 Oct 2015 07:27:00 GMT", 0, true},
	{"Empty", "", 0, false},
	{"Negative", "-3", 0, false},
	{"Garbage", "soon", 0, false},
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2015, 10, 21, 7, 28, 0, 0, time.UTC)
	for _, tt := range parseRetryAfterTests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := llm.ParseRetryAfter(tt.value, now)
			if got != tt.want || ok != tt.wantOK {
				t.Fatalf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tt.value, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

var delayTests = []struct {
	name     string
	policy   llm.RetryPolicy
	attempt  int
	header   map[string]string
	min, max time.Duration
}{
	{"RetryAfterSeconds", llm.RetryPolicy{}, 1, map[string]string{"Retry-After": "1"}, time.Second, time.Second},
	{"RetryAfterCapped", llm.RetryPolicy{MaxDelay: 10 * time.Millisecond}, 1, map[string]string{"Retry-After": "30"}, 10 * time.Millisecond, 10 * time.Millisecond},
	{"RetryAfterMs", llm.RetryPolicy{}, 1, map[string]string{"Retry-After-Ms": "250", "Retry-After": "9"}, 250 * time.Millisecond, 250 * time.Millisecond},
	{"BadRetryAfterFallsBack", llm.RetryPolicy{BaseDelay: 100 * time.Millisecond}, 1, map[string]string{"Retry-After": "later"}, 50 * time.Millisecond, 100 * time.Millisecond},
	{"DefaultFirst", llm.RetryPolicy{}, 1, nil, 250 * time.Millisecond, 500 * time.Millisecond},
	{"DefaultThird", llm.RetryPolicy{}, 3, nil, time.Second, 2 * time.Second},
	{"CappedBackoff", llm.RetryPolicy{BaseDelay: time.Second, MaxDelay: 3 * time.Second}, 10, nil, 1500 * time.Millisecond, 3 * time.Second},
	{"HugeAttempt", llm.RetryPolicy{}, 1000, nil, 10 * time.Second, 20 * time.Second},
}

func TestRetryPolicyDelay(t *testing.T) {
	now := time.Now()
	for _, tt := range delayTests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			for range 50 { // jitter: every draw must be in range
				if d := tt.policy.Delay(tt.attempt, h, now); d < tt.min || d > tt.max {
					t.Fatalf("Delay = %v, want in [%v, %v]", d, tt.min, tt.max)
				}
			}
		})
	}
}

var errorMessageTests = []struct {
	name   string
	body   string
	status int
	want   string
}{
	{"OpenAI", `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`, 429, "Rate limit reached"},
	{"Anthropic", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, 529, "Overloaded"},
	{"ErrorString", `{"error":"model not found"}`, 404, "model not found"},
	{"TopLevelMessage", `{"message":"bad gateway upstream"}`, 502, "bad gateway upstream"},
	{"PlainText", "  upstream connect error \n", 503, "upstream connect error"},
	{"EmptyBody", "", 500, "Internal Server Error"},
	{"JSONWithoutMessage", `{"error":{"code":1}}`, 400, `{"error":{"code":1}}`},
}

func TestErrorMessage(t *testing.T) {
	for _, tt := range errorMessageTests {
		t.Run(tt.name, func(t *testing.T) {
			if got := llm.ErrorMessage([]byte(tt.body), tt.status); got != tt.want {
				t.Fatalf("ErrorMessage = %q, want %q", got, tt.want)
			}
		})
	}
	t.Run("Truncated", func(t *testing.T) {
		got := llm.ErrorMessage([]byte(strings.Repeat("é", 1000)), 500)
		if len(got) > 500 || !strings.HasSuffix(got, "…") {
			t.Fatalf("ErrorMessage length %d, suffix %q", len(got), got[len(got)-6:])
		}
	})
}

// step is one scripted outcome of a send attempt.
type step struct {
	status int
	body   string
	header map[string]string
	err    error
}

func fakeSend(tb testing.TB, steps []step, calls *int) func(context.Context) (*http.Response, error) {
	tb.Helper()
	return func(context.Context) (*http.Response, error) {
		if *calls >= len(steps) {
			tb.Fatalf("unexpected attempt %d", *calls+1)
		}
		s := steps[*calls]
		*calls++
		if s.err != nil {
			return nil, s.err
		}
		h := http.Header{}
		for k, v := range s.header {
			h.Set(k, v)
		}
		return &http.Response{StatusCode: s.status, Header: h, Body: io.NopCloser(strings.NewReader(s.body))}, nil
	}
}

var errReset = errors.New("connection reset by peer")

var doTests = []struct {
	name        string
	maxAttempts int
	steps       []step
	wantStatus  int // 0: success expected unless wantErr
	wantErr     bool
	wantMessage string
	wantCalls   int
}{
	{"Success", 3, []step{{status: 200, body: "ok"}}, 0, false, "", 1},
	{"500ThenSuccess", 3, []step{{status: 500}, {status: 200}}, 0, false, "", 2},
	{"EveryRetryableStatus", 8, []step{{status: 408}, {status: 429}, {status: 500}, {status: 502}, {status: 503}, {status: 504}, {status: 529}, {status: 201}}, 0, false, "", 8},
	{"TransportErrorThenSuccess", 3, []step{{err: errReset}, {status: 200}}, 0, false, "", 2},
	{"429Forever", 3, []step{
		{status: 429, body: `{"error":{"message":"slow down"}}`},
		{status: 429, body: `{"error":{"message":"slow down"}}`},
		{status: 429, body: `{"error":{"message":"slow down"}}`},
	}, 429, true, "slow down", 3},
	{"400NoRetry", 3, []step{{status: 400, body: `{"error":{"message":"bad tools"}}`}}, 400, true, "bad tools", 1},
	{"401NoRetry", 3, []step{{status: 401, body: "nope"}}, 401, true, "nope", 1},
	{"501NoRetry", 3, []step{{status: 501}}, 501, true, "Not Implemented", 1},
	{"TransportForever", 2, []step{{err: errReset}, {err: errReset}}, 0, true, "", 2},
}

func TestRetryPolicyDo(t *testing.T) {
	for _, tt := range doTests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			p := llm.RetryPolicy{MaxAttempts: tt.maxAttempts, BaseDelay: time.Microsecond, MaxDelay: time.Millisecond}
			resp, err := p.Do(context.Background(), "test", fakeSend(t, tt.steps, &calls))
			if calls != tt.wantCalls {
				t.Errorf("calls = %d, want %d", calls, tt.wantCalls)
			}
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("Do: %v", err)
				}
				resp.Body.Close()
				return
			}
			var pe *llm.ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("Do error = %v (%T), want *llm.ProviderError", err, err)
			}
			if pe.StatusCode != tt.wantStatus || pe.Attempts != tt.wantCalls || pe.Provider != "test" {
				t.Errorf("ProviderError = %+v", pe)
			}
			if tt.wantMessage != "" && pe.Message != tt.wantMessage {
				t.Errorf("Message = %q, want %q", pe.Message, tt.wantMessage)
			}
			if tt.wantStatus == 0 && !errors.Is(err, errReset) {
				t.Errorf("transport error not wrapped: %v", err)
			}
		})
	}
}

func TestRetryPolicyDoCancel(t *testing.T) {
	t.Run("DuringSend", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		_, err := llm.RetryPolicy{BaseDelay: time.Microsecond}.Do(ctx, "test", func(ctx context.Context) (*http.Response, error) {
			calls++
			cancel()
			return nil, ctx.Err()
		})
		if !errors.Is(err, context.Canceled) || calls != 1 {
			t.Fatalf("err = %v, calls = %d; want context.Canceled after 1 call", err, calls)
		}
		var pe *llm.ProviderError
		if errors.As(err, &pe) {
			t.Fatalf("cancellation reported as ProviderError: %v", err)
		}
	})
	t.Run("DuringSleep", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := llm.RetryPolicy{BaseDelay: time.Hour, MaxDelay: time.Hour}.Do(ctx, "test", func(context.Context) (*http.Response, error) {
			return &http.Response{StatusCode: 503, Header: http.Header{}, Body: http.NoBody}, nil
		})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want context.DeadlineExceeded", err)
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("Do took %v after cancellation", time.Since(start))
		}
	})
	t.Run("AlreadyCancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := llm.RetryPolicy{}.Do(ctx, "test", func(context.Context) (*http.Response, error) {
			t.Fatal("send called with a cancelled context")
			return nil, nil
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
}

// newServer starts an httptest server that closes with the test.
func newServer(tb testing.TB, h http.HandlerFunc) *httptest.Server {
	tb.Helper()
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	return srv
}

func mustRequest(tb testing.TB, url string) *http.Request {
	tb.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader("{}"))
	if err != nil {
		tb.Fatal(err)
	}
	return req
}

// chunked writes n chunks, gap apart, then stalls for stall (or until the
// client leaves).
func chunked(n int, gap, stall time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // lets the server notice a client that leaves
		w.WriteHeader(200)
		for i := range n {
			if i > 0 {
				select {
				case <-time.After(gap):
				case <-r.Context().Done():
					return
				}
			}
			io.WriteString(w, "chunk\n")
			w.(http.Flusher).Flush()
		}
		select {
		case <-time.After(stall):
		case <-r.Context().Done():
		}
	}
}

// silent never answers; it returns when the client leaves.
func silent(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	<-r.Context().Done()
}

func TestSendAttempt(t *testing.T) {
	t.Run("HeadersTimeout", func(t *testing.T) {
		srv := newServer(t, silent)
		_, err := llm.SendAttempt(context.Background(), srv.Client(), mustRequest(t, srv.URL), 30*time.Millisecond, false)
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timeout") {
			t.Fatalf("err = %v, want an attempt timeout", err)
		}
	})
	t.Run("NonStreamBodyTimeout", func(t *testing.T) {
		srv := newServer(t, chunked(1, 0, time.Second))
		_, err := llm.SendAttempt(context.Background(), srv.Client(), mustRequest(t, srv.URL), 50*time.Millisecond, false)
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timeout") {
			t.Fatalf("err = %v, want an attempt timeout", err)
		}
	})
	t.Run("NonStreamBuffered", func(t *testing.T) {
		srv := newServer(t, chunked(3, time.Millisecond, 0))
		resp, err := llm.SendAttempt(context.Background(), srv.Client(), mustRequest(t, srv.URL), time.Second, false)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if b, _ := io.ReadAll(resp.Body); string(b) != "chunk\nchunk\nchunk\n" {
			t.Fatalf("body = %q", b)
		}
	})
	t.Run("StreamIdleTimeoutRenewed", func(t *testing.T) {
		// 12 chunks 20ms apart outlast the 150ms timeout; each read renews it.
		srv := newServer(t, chunked(12, 20*time.Millisecond, 0))
		resp, err := llm.SendAttempt(context.Background(), srv.Client(), mustRequest(t, srv.URL), 150*time.Millisecond, true)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || strings.Count(string(b), "chunk") != 12 {
			t.Fatalf("ReadAll = %q, %v", b, err)
		}
	})
	t.Run("StreamStalls", func(t *testing.T) {
		srv := newServer(t, chunked(1, 0, time.Second))
		resp, err := llm.SendAttempt(context.Background(), srv.Client(), mustRequest(t, srv.URL), 40*time.Millisecond, true)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, err = io.ReadAll(resp.Body)
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timeout") {
			t.Fatalf("err = %v, want an attempt timeout", err)
		}
	})
	t.Run("ParentCancelPassesThrough", func(t *testing.T) {
		srv := newServer(t, silent)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		_, err := llm.SendAttempt(ctx, srv.Client(), mustRequest(t, srv.URL), time.Minute, false)
		if !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "attempt timeout") {
			t.Fatalf("err = %v, want the caller's deadline", err)
		}
	})
}
