// Package providertest owns the test support the provider adapters share:
// a scripted server per test, delta recording, response and request-body
// assertions, and the runner of the recorded event-stream fixtures.
package providertest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/llm/scripted"
)

// FastRetry keeps retrying tests quick.
var FastRetry = llm.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}

// MustStart starts a scripted server that closes with the test.
func MustStart(tb testing.TB, replies ...scripted.Reply) *scripted.Server {
	tb.Helper()
	srv := scripted.Start(replies...)
	tb.Cleanup(srv.Close)
	return srv
}

// Collect returns a DeltaFunc recording deltas as "C:…" and "R:…".
func Collect(out *[]string) llm.DeltaFunc {
	return func(d llm.Delta) {
		if d.ReasoningContent != "" {
			*out = append(*out, "R:"+d.ReasoningContent)
		}
		if d.Content != "" {
			*out = append(*out, "C:"+d.Content)
		}
	}
}

// AssertResponse compares the normalised fields of got with want: content,
// reasoning, tool calls, finish reason and usage.
func AssertResponse(tb testing.TB, got, want *llm.Response) {
	tb.Helper()
	if got.Content != want.Content {
		tb.Errorf("Content = %q, want %q", got.Content, want.Content)
	}
	if got.ReasoningContent != want.ReasoningContent {
		tb.Errorf("ReasoningContent = %q, want %q", got.ReasoningContent, want.ReasoningContent)
	}
	if (len(got.ToolCalls) != 0 || len(want.ToolCalls) != 0) && !reflect.DeepEqual(got.ToolCalls, want.ToolCalls) {
		tb.Errorf("ToolCalls = %+v, want %+v", got.ToolCalls, want.ToolCalls)
	}
	if got.FinishReason != want.FinishReason {
		tb.Errorf("FinishReason = %q, want %q", got.FinishReason, want.FinishReason)
	}
	if got.Usage != want.Usage {
		tb.Errorf("Usage = %+v, want %+v", got.Usage, want.Usage)
	}
}

// AssertBody compares a request body with want as JSON documents.
func AssertBody(tb testing.TB, body []byte, want string) {
	tb.Helper()
	var g, w any
	if err := json.Unmarshal(body, &g); err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		tb.Fatalf("bad want: %v", err)
	}
	if !reflect.DeepEqual(g, w) {
		gb, _ := json.Marshal(g)
		wb, _ := json.Marshal(w)
		tb.Errorf("body =\n%s\nwant\n%s", gb, wb)
	}
}

// wantFixture is the expected outcome of a stream fixture. Empty ID, Model
// and a nil Deltas are not checked.
type wantFixture struct {
	ID               string         `json:"id"`
	Model            string         `json:"model"`
	Content          string         `json:"content"`
	ReasoningContent string         `json:"reasoning_content"`
	ToolCalls        []llm.ToolCall `json:"tool_calls"`
	FinishReason     string         `json:"finish_reason"`
	Usage            llm.Usage      `json:"usage"`
	Deltas           []string       `json:"deltas"`
	Error            string         `json:"error"`
	ProviderError    bool           `json:"provider_error"`
}

// RunStreamFixtures replays the recorded event streams in dir, one subtest
// each: NAME.sse is served as a text/event-stream response body, and
// NAME.want.json is the outcome of streaming req through the provider that
// newProvider returns for the server's URL.
func RunStreamFixtures(t *testing.T, dir string, req *llm.Request, newProvider func(baseURL string) llm.Provider) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.sse"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".sse")
		t.Run(name, func(t *testing.T) {
			body := mustRead(t, file)
			var want wantFixture
			if err := json.Unmarshal(mustRead(t, strings.TrimSuffix(file, ".sse")+".want.json"), &want); err != nil {
				t.Fatalf("want file: %v", err)
			}
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.Write(body)
			}))
			defer hs.Close()
			var deltas []string
			got, err := newProvider(hs.URL).Chat(context.Background(), req, Collect(&deltas))
			if want.Error != "" {
				var pe *llm.ProviderError
				if err == nil || !strings.Contains(err.Error(), want.Error) || errors.As(err, &pe) != want.ProviderError {
					t.Fatalf("err = %v, want %q (provider error: %v)", err, want.Error, want.ProviderError)
				}
				return
			}
			if err != nil {
				t.Fatalf("Chat: %v", err)
			}
			AssertResponse(t, got, &llm.Response{
				Content: want.Content, ReasoningContent: want.ReasoningContent, ToolCalls: want.ToolCalls,
				FinishReason: want.FinishReason, Usage: want.Usage,
			})
			if (want.ID != "" && got.ID != want.ID) || (want.Model != "" && got.Model != want.Model) {
				t.Errorf("ID, Model = %q, %q; want %q, %q", got.ID, got.Model, want.ID, want.Model)
			}
			if want.Deltas != nil && !reflect.DeepEqual(deltas, want.Deltas) {
				t.Errorf("deltas = %q, want %q", deltas, want.Deltas)
			}
		})
	}
}

func mustRead(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
