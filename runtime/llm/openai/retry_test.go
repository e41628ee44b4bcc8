package openai_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/llm/internal/providertest"
	"github.com/nagent/nagent/runtime/llm/openai"
	"github.com/nagent/nagent/runtime/llm/scripted"
)

var failureTests = []struct {
	name         string
	replies      []scripted.Reply
	stream       bool
	edit         func(*openai.Config)
	wantErr      string // "" for success
	wantStatus   int    // ProviderError.StatusCode when an error is expected
	wantAttempts int    // ProviderError.Attempts when non-zero
	wantRequests int
}{
	{
		name:         "500ThenSuccess",
		replies:      []scripted.Reply{{Status: 500}, {Content: "ok"}},
		wantRequests: 2,
	},
	{
		name:         "429RetryAfterThenSuccess",
		replies:      []scripted.Reply{{Status: 429, Header: map[string]string{"Retry-After": "1"}}, {Content: "ok"}},
		wantRequests: 2, // Retry-After is capped by providertest.FastRetry.MaxDelay
	},
	{
		name:         "503ThenSuccessStreaming",
		replies:      []scripted.Reply{{Status: 503}, {Content: "ok"}},
		stream:       true,
		wantRequests: 2,
	},
	{
		name: "429Forever",
		replies: []scripted.Reply{
			{Status: 429, ErrorMessage: "Rate limit reached for gpt-test"},
			{Status: 429, ErrorMessage: "Rate limit reached for gpt-test"},
			{Status: 429, ErrorMessage: "Rate limit reached for gpt-test"},
		},
		wantErr: "Rate limit reached for gpt-test", wantStatus: 429, wantAttempts: 3, wantRequests: 3,
	},
	{
		name:    "400NoRetry",
		replies: []scripted.Reply{{Status: 400, ErrorMessage: "Invalid schema for function"}, {Content: "unused"}},
		wantErr: "Invalid schema for function", wantStatus: 400, wantAttempts: 1, wantRequests: 1,
	},
	{
		name:    "401KeyRedacted",
		replies: []scripted.Reply{{Status: 401, ErrorMessage: "Incorrect API key provided: " + testKey + "."}},
		wantErr: "Incorrect API key provided: [redacted].", wantStatus: 401, wantAttempts: 1, wantRequests: 1,
	},
	{
		name:         "DroppedConnectionRetried",
		replies:      []scripted.Reply{{DropConnection: true}, {Content: "ok"}},
		wantRequests: 2,
	},
	{
		name:    "DroppedForever",
		replies: []scripted.Reply{{DropConnection: true}, {DropConnection: true}, {DropConnection: true}},
		wantErr: "unreachable after 3 attempt(s)", wantAttempts: 3, wantRequests: 3,
	},
	{
		name:    "Timeout",
		replies: []scripted.Reply{{Delay: 5 * time.Second, Content: "late"}},
		edit: func(c *openai.Config) {
			c.Timeout = 50 * time.Millisecond
			c.Retry.MaxAttempts = 1
		},
		wantErr: "timeout", wantAttempts: 1, wantRequests: 1,
	},
	{
		name:         "TimeoutThenSuccess",
		replies:      []scripted.Reply{{Delay: 5 * time.Second}, {Content: "ok"}},
		edit:         func(c *openai.Config) { c.Timeout = 50 * time.Millisecond },
		wantRequests: 2,
	},
	{
		name:    "StreamStallsTimeout",
		replies: []scripted.Reply{{Content: "abcdefghi", ChunkSize: 3, ChunkDelay: 5 * time.Second}},
		stream:  true,
		edit:    func(c *openai.Config) { c.Timeout = 50 * time.Millisecond },
		wantErr: "timeout", wantRequests: 1,
	},
	{
		name: "SlowStreamWithinIdleTimeout",
		// 30 chunks 10ms apart outlast the 200ms timeout; each chunk renews it.
		replies:      []scripted.Reply{{Content: strings.Repeat("x", 30), ChunkSize: 1, ChunkDelay: 10 * time.Millisecond}},
		stream:       true,
		edit:         func(c *openai.Config) { c.Timeout = 200 * time.Millisecond },
		wantRequests: 1,
	},
	{
		name:    "StreamErrorMidStream",
		replies: []scripted.Reply{{Content: "abcdefghi", ChunkSize: 3, StreamErrorAfter: 2, ErrorMessage: "upstream overloaded"}},
		stream:  true,
		wantErr: "upstream overloaded", wantAttempts: 1, wantRequests: 1,
	},
	{
		name:    "ScriptExhausted",
		replies: nil,
		edit:    func(c *openai.Config) { c.Retry.MaxAttempts = 1 },
		wantErr: "scripted model: no reply left for request 1", wantStatus: 500, wantAttempts: 1, wantRequests: 1,
	},
}

func TestChatFailures(t *testing.T) {
	for _, tt := range failureTests {
		t.Run(tt.name, func(t *testing.T) {
			srv := providertest.MustStart(t, tt.replies...)
			var onDelta llm.DeltaFunc
			if tt.stream {
				onDelta = func(llm.Delta) {}
			}
			resp, err := NewProvider(t, srv, tt.edit).Chat(context.Background(), userRequest("hi"), onDelta)
			if n := len(srv.Requests()); n != tt.wantRequests {
				t.Errorf("requests = %d, want %d", n, tt.wantRequests)
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Chat: %v", err)
				}
				if resp.Content == "" {
					t.Errorf("empty Content")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Fatalf("error leaks the API key: %v", err)
			}
			if !strings.HasPrefix(err.Error(), "openai.Chat: ") {
				t.Errorf("err = %q, want the operation named", err)
			}
			var pe *llm.ProviderError
			if tt.wantStatus != 0 || tt.wantAttempts != 0 {
				if !errors.As(err, &pe) {
					t.Fatalf("err = %v (%T), want *llm.ProviderError", err, err)
				}
				if pe.StatusCode != tt.wantStatus || (tt.wantAttempts != 0 && pe.Attempts != tt.wantAttempts) || pe.Provider != "openai" {
					t.Errorf("ProviderError = %+v, want status %d, attempts %d", pe, tt.wantStatus, tt.wantAttempts)
				}
			}
		})
	}
}

func TestChatCancel(t *testing.T) {
	for _, stream := range []bool{false, true} {
		name := map[bool]string{false: "Blocking", true: "Streaming"}[stream]
		t.Run(name, func(t *testing.T) {
			srv := providertest.MustStart(t, scripted.Reply{Delay: 10 * time.Second, Content: "late"})
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(50*time.Millisecond, cancel)
			var onDelta llm.DeltaFunc
			if stream {
				onDelta = func(llm.Delta) {}
			}
			start := time.Now()
			_, err := NewProvider(t, srv, nil).Chat(ctx, userRequest("hi"), onDelta)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("Chat returned %v after cancellation", d)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("requests = %d, want 1 (no retry after cancellation)", n)
			}
		})
	}
	t.Run("MidStream", func(t *testing.T) {
		srv := providertest.MustStart(t, scripted.Reply{Content: strings.Repeat("x", 300), ChunkSize: 1, ChunkDelay: 20 * time.Millisecond})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		deltas := 0
		_, err := NewProvider(t, srv, nil).Chat(ctx, userRequest("hi"), func(llm.Delta) {
			if deltas++; deltas == 3 {
				cancel()
			}
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
}
