package openai_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nagent/nagent/adapters/openai"
	"github.com/nagent/nagent/runtime/app"
	"github.com/nagent/nagent/runtime/config"
	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/llm/scripted"
)

const testKey = "sk-test-key"

type testServer struct {
	*httptest.Server
	model *scripted.Server
	app   *app.App
}

// MustServe starts the API over real HTTP, backed by a scripted model.
func MustServe(tb testing.TB, configure func(*config.Config), replies ...scripted.Reply) *testServer {
	tb.Helper()
	model := scripted.Start(replies...)
	tb.Cleanup(model.Close)
	cfg := config.Defaults()
	cfg.Home = tb.TempDir()
	cfg.LLM.BaseURL = model.URL()
	cfg.LLM.Model = "nagent-test"
	cfg.LLM.Aliases = []string{"gpt-4o-mini"}
	cfg.LLM.MaxAttempts = 1
	cfg.LLM.RetryBaseDelay = config.Duration(time.Millisecond)
	cfg.Server.APIKeys = []string{testKey}
	if configure != nil {
		configure(&cfg)
	}
	a, err := app.New(context.Background(), &cfg, app.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(openai.NewServer(a, nil).Handler())
	tb.Cleanup(func() { srv.Close(); a.Close() })
	return &testServer{Server: srv, model: model, app: a}
}

func (ts *testServer) post(tb testing.TB, path, body string, header ...string) *http.Response {
	tb.Helper()
	req, _ := http.NewRequest("POST", ts.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			req.Header.Del(header[i])
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { resp.Body.Close() })
	return resp
}

type errorBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

func decode[T any](tb testing.TB, r io.Reader) T {
	tb.Helper()
	var v T
	if err := json.NewDecoder(r).Decode(&v); err != nil {
		tb.Fatal(err)
	}
	return v
}

const hello = `{"model":"nagent-test","messages":[{"role":"user","content":"hi"}]}`

var errorStatusTests = []struct {
	name   string
	body   string
	header []string
	status int
	typ    string
	param  string
	says   string
}{
	{name: "BadJSON", body: `{"model":`, status: 400, typ: "invalid_request_error", says: "parse the JSON"},
	{name: "WrongFieldType", body: `{"model":"nagent-test","messages":"hi"}`, status: 400, param: "messages", says: "Invalid type"},
	{name: "WrongNestedType", body: `{"model":"nagent-test","messages":[{"role":"user","content":42}]}`, status: 400, param: "messages[0].content", says: "content"},
	{name: "EmptyMessages", body: `{"model":"nagent-test","messages":[]}`, status: 400, param: "messages", says: "non-empty"},
	{name: "MissingModel", body: `{"messages":[{"role":"user","content":"hi"}]}`, status: 400, param: "model"},
	{name: "UnknownRole", body: `{"model":"nagent-test","messages":[{"role":"robot","content":"hi"}]}`, status: 400, param: "messages[0].role"},
	{name: "MissingKey", body: hello, header: []string{"Authorization", ""}, status: 401, typ: "invalid_request_error", says: "API key"},
	{name: "WrongKey", body: hello, header: []string{"Authorization", "Bearer sk-wrong"}, status: 401},
	{name: "UnknownModel", body: `{"model":"gpt-5-ultra","messages":[{"role":"user","content":"hi"}]}`, status: 404, says: "does not exist"},
	{name: "TooLarge", body: `{"model":"nagent-test","messages":[{"role":"user","content":"` + strings.Repeat("x", openai.MaxBodyBytes) + `"}]}`, status: 413},
	{name: "ProviderDown", body: hello, status: 502, typ: "server_error", says: "HTTP 500"},
}

func TestErrorStatuses(t *testing.T) {
	ts := MustServe(t, nil)
	ts.model.SetResponder(func(scripted.RecordedRequest) scripted.Reply {
		return scripted.Reply{Status: 500, ErrorMessage: "upstream exploded"}
	})
	for _, tt := range errorStatusTests {
		t.Run(tt.name, func(t *testing.T) {
			resp := ts.post(t, "/v1/chat/completions", tt.body, tt.header...)
			if resp.StatusCode != tt.status {
				t.Fatalf("status = %d, want %d", resp.StatusCode, tt.status)
			}
			body := decode[errorBody](t, resp.Body)
			e := body.Error
			if e.Message == "" || e.Type == "" {
				t.Fatalf("error object incomplete: %+v", e)
			}
			if tt.typ != "" && e.Type != tt.typ {
				t.Errorf("type = %q, want %q", e.Type, tt.typ)
			}
			if tt.param != "" && (e.Param == nil || *e.Param != tt.param) {
				t.Errorf("param = %v, want %q", e.Param, tt.param)
			}
			if !strings.Contains(e.Message, tt.says) {
				t.Errorf("message = %q, want it to mention %q", e.Message, tt.says)
			}
			if strings.Contains(e.Message, testKey) {
				t.Error("the error leaks the API key")
			}
		})
	}
}

func TestServerConcurrencyLimit(t *testing.T) {
	ts := MustServe(t, func(c *config.Config) { c.Server.MaxConcurrentTurns = 1 },
		scripted.Reply{Content: "slow", Delay: 500 * time.Millisecond})
	done := make(chan int)
	go func() {
		resp := ts.post(t, "/v1/chat/completions", hello)
		done <- resp.StatusCode
	}()
	waitFor(t, func() bool { return len(ts.model.Requests()) == 1 })
	resp := ts.post(t, "/v1/chat/completions", hello)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("second request = %d (Retry-After %q), want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if code := <-done; code != 200 {
		t.Errorf("first request = %d", code)
	}
}

func TestSessionQueueLimit(t *testing.T) {
	ts := MustServe(t, func(c *config.Config) { c.Server.MaxQueuedPerSession = 1 })
	ts.model.SetResponder(func(scripted.RecordedRequest) scripted.Reply {
		return scripted.Reply{Content: "ok", Delay: 300 * time.Millisecond}
	})
	var wg sync.WaitGroup
	codes := make(chan int, 3)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := ts.post(t, "/v1/chat/completions", hello, "X-Session-Id", "busy")
			codes <- resp.StatusCode
		}()
		time.Sleep(50 * time.Millisecond)
	}
	wg.Wait()
	close(codes)
	var n429 int
	for c := range codes {
		if c == 429 {
			n429++
		}
	}
	if n429 != 1 {
		t.Errorf("429 answers = %d, want 1 (one running, one queued, one refused)", n429)
	}
}

func waitFor(tb testing.TB, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatal("condition not met in 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestNonStreamingWithServerTool(t *testing.T) {
	ts := MustServe(t, nil,
		scripted.Reply{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "get_current_time", Arguments: `{}`}}},
		scripted.Reply{Content: "It is 15:52 UTC."},
	)
	resp := ts.post(t, "/v1/chat/completions", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"time?"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	sid := resp.Header.Get("X-Session-Id")
	c := decode[openai.ChatCompletion](t, resp.Body)
	if c.Object != "chat.completion" || c.Model != "gpt-4o-mini" || len(c.Choices) != 1 || !strings.HasPrefix(c.ID, "chatcmpl-") {
		t.Fatalf("completion = %+v", c)
	}
	ch := c.Choices[0]
	if *ch.Message.Content != "It is 15:52 UTC." || ch.FinishReason != "stop" || ch.Message.Role != "assistant" || len(ch.Message.ToolCalls) != 0 {
		t.Errorf("choice = %+v", ch)
	}
	if c.Usage == nil || c.Usage.TotalTokens == 0 {
		t.Errorf("usage = %+v", c.Usage)
	}
	// Stateless request: still recorded, with source api.
	sess, err := ts.app.DB.GetSession(context.Background(), sid)
	if err != nil || sess.Source != "api" {
		t.Errorf("session %q = %+v, %v", sid, sess, err)
	}
}

func TestSessionHeaderAppendsOnlyNewMessages(t *testing.T) {
	ts := MustServe(t, nil, scripted.Reply{Content: "Hello Ada."}, scripted.Reply{Content: "Your name is Ada."})
	ts.post(t, "/v1/chat/completions", `{"model":"nagent-test","messages":[{"role":"user","content":"I am Ada."}]}`, "X-Session-Id", "s-ada")
	resp := ts.post(t, "/v1/chat/completions", `{"model":"nagent-test","messages":[
		{"role":"user","content":"I am Ada."},{"role":"assistant","content":"Hello Ada."},
		{"role":"user","content":"What is my name?"}]}`, "X-Session-Id", "s-ada")
	if resp.Header.Get("X-Session-Id") != "s-ada" {
		t.Errorf("X-Session-Id = %q", resp.Header.Get("X-Session-Id"))
	}
	msgs, _ := ts.app.DB.ListMessages(context.Background(), "s-ada")
	if len(msgs) != 4 {
		t.Fatalf("stored %d messages, want 4 (no duplicates)", len(msgs))
	}
	second := ts.model.Requests()[1].Messages
	if len(second) != 4 || second[3].Content != "What is my name?" {
		t.Errorf("second provider request = %+v", second)
	}
}

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	event, data, comment string
}

func readSSE(tb testing.TB, r io.Reader) []sseEvent {
	tb.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur != (sseEvent{}) {
				out = append(out, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, ":"):
			cur.comment = strings.TrimSpace(line[1:])
		case strings.HasPrefix(line, "event: "):
			cur.event = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			cur.data = line[len("data: "):]
		default:
			tb.Fatalf("unexpected SSE line %q", line)
		}
	}
	return out
}

func TestStreamingFraming(t *testing.T) {
	ts := MustServe(t, nil,
		scripted.Reply{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "get_current_time", Arguments: `{}`}}},
		scripted.Reply{Content: "It is 15:52 UTC.", ChunkSize: 3},
	)
	resp := ts.post(t, "/v1/chat/completions", `{"model":"nagent-test","stream":true,"stream_options":{"include_usage":true},
		"messages":[{"role":"user","content":"time?"}]}`)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("Content-Type = %q", ct)
	}
	events := readSSE(t, resp.Body)
	if len(events) < 5 {
		t.Fatalf("only %d events", len(events))
	}
	if last := events[len(events)-1]; last.data != "[DONE]" {
		t.Errorf("last event = %+v, want [DONE]", last)
	}
	var content strings.Builder
	var sawRole, sawFinish, sawUsage bool
	var tools []string
	for _, e := range events[:len(events)-1] {
		if e.comment != "" {
			if !strings.HasPrefix(e.comment, "nagent ") {
				t.Errorf("unexpected comment %q", e.comment)
			}
			var ev struct {
				Type string `json:"type"`
				Tool struct {
					Name string `json:"name"`
				} `json:"tool"`
			}
			json.Unmarshal([]byte(strings.TrimPrefix(e.comment, "nagent ")), &ev)
			tools = append(tools, ev.Type+":"+ev.Tool.Name)
			continue
		}
		var ch openai.ChatCompletionChunk
		if err := json.Unmarshal([]byte(e.data), &ch); err != nil {
			t.Fatalf("chunk %q: %v", e.data, err)
		}
		if ch.Object != "chat.completion.chunk" {
			t.Errorf("object = %q", ch.Object)
		}
		if ch.Usage != nil {
			sawUsage = len(ch.Choices) == 0 && ch.Usage.TotalTokens > 0
			continue
		}
		d := ch.Choices[0].Delta
		if d.Role == "assistant" {
			sawRole = true
		}
		if d.Content != nil {
			content.WriteString(*d.Content)
		}
		if fr := ch.Choices[0].FinishReason; fr != nil {
			sawFinish = *fr == "stop"
		}
	}
	if !sawRole || !sawFinish || !sawUsage {
		t.Errorf("role %v, finish %v, usage %v", sawRole, sawFinish, sawUsage)
	}
	if content.String() != "It is 15:52 UTC." {
		t.Errorf("content = %q", content.String())
	}
	if strings.Join(tools, ",") != "tool_started:get_current_time,tool_finished:get_current_time" {
		t.Errorf("tool comments = %v", tools)
	}
}

func TestStreamingErrorMidStream(t *testing.T) {
	ts := MustServe(t, nil, scripted.Reply{Content: "This answer will break off", ChunkSize: 2, StreamErrorAfter: 3})
	resp := ts.post(t, "/v1/chat/completions", `{"model":"nagent-test","stream":true,"messages":[{"role":"user","content":"go"}]}`)
	events := readSSE(t, resp.Body)
	last := events[len(events)-1]
	if last.event != "error" {
		t.Fatalf("last event = %+v, want an error event", last)
	}
	var body errorBody
	if err := json.Unmarshal([]byte(last.data), &body); err != nil || body.Error.Message == "" {
		t.Errorf("error event data = %q", last.data)
	}
	sid := resp.Header.Get("X-Session-Id")
	ts.app.Memory.Wait()
	st, _ := ts.app.DB.GetTaskState(context.Background(), sid)
	if st == nil || st.Status != "failed" {
		t.Errorf("task state = %+v, want failed", st)
	}
}

func TestClientDisconnectCancelsRun(t *testing.T) {
	ts := MustServe(t, nil, scripted.Reply{Content: strings.Repeat("word ", 200), ChunkSize: 5, ChunkDelay: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"nagent-test","stream":true,"messages":[{"role":"user","content":"talk"}]}`))
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("X-Session-Id", "gone")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	// Read a few chunks, then hang up.
	r := bufio.NewReader(resp.Body)
	for i := 0; i < 6; i++ {
		if _, err := r.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	resp.Body.Close()

	waitFor(t, func() bool {
		st, _ := ts.app.DB.GetTaskState(context.Background(), "gone")
		return st != nil && st.Status == "cancelled"
	})
	msgs, _ := ts.app.DB.ListMessages(context.Background(), "gone")
	last := msgs[len(msgs)-1]
	if last.Role != "assistant" || last.Status != "cancelled" || last.Content == "" {
		t.Errorf("partial answer = %+v, want the partial output marked cancelled", last)
	}
}

func TestClientSideToolRoundTrip(t *testing.T) {
	ts := MustServe(t, nil,
		scripted.Reply{ToolCalls: []llm.ToolCall{{ID: "call_w", Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
		scripted.Reply{Content: "It is sunny in Paris."},
	)
	tools := `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`
	resp := ts.post(t, "/v1/chat/completions", `{"model":"nagent-test",`+tools+`,"messages":[{"role":"user","content":"Weather in Paris?"}]}`,
		"X-Session-Id", "client-tools")
	c := decode[openai.ChatCompletion](t, resp.Body)
	ch := c.Choices[0]
	if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 || ch.Message.ToolCalls[0].Name != "get_weather" || ch.Message.Content != nil {
		t.Fatalf("choice = %+v", ch)
	}
	if got := ts.model.Requests()[0].Tools; len(got) < 2 || got[0].Name != "get_current_time" || got[len(got)-1].Name != "get_weather" {
		t.Errorf("model saw tools %+v, want the server's and the client's", got)
	}

	resp = ts.post(t, "/v1/chat/completions", `{"model":"nagent-test",`+tools+`,"messages":[
		{"role":"user","content":"Weather in Paris?"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"call_w","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
		{"role":"tool","tool_call_id":"call_w","content":"{\"sky\":\"sunny\"}"}]}`, "X-Session-Id", "client-tools")
	c = decode[openai.ChatCompletion](t, resp.Body)
	if *c.Choices[0].Message.Content != "It is sunny in Paris." {
		t.Errorf("answer = %+v", c.Choices[0])
	}
	second := ts.model.Requests()[1].Messages
	if roles := len(second); roles != 4 || second[3].Role != "tool" || second[3].ToolCallID != "call_w" {
		t.Errorf("second provider request = %+v", second)
	}
}

func TestModelsAndHealth(t *testing.T) {
	ts := MustServe(t, nil)
	req, _ := http.NewRequest("GET", ts.URL+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	list := decode[struct {
		Object string         `json:"object"`
		Data   []openai.Model `json:"data"`
	}](t, resp.Body)
	if list.Object != "list" || len(list.Data) != 2 || list.Data[0].ID != "nagent-test" {
		t.Errorf("models = %+v", list)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(ts.URL + path)
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("%s = %v, %v", path, resp.StatusCode, err)
		}
	}
}

// TestInternalErrorHidesDetails breaks the store under a running server: the
// client gets a 500 OpenAI error that says nothing about the internals.
func TestInternalErrorHidesDetails(t *testing.T) {
	ts := MustServe(t, nil, scripted.Reply{Content: "unreachable"})
	ts.app.DB.Close()
	resp := ts.post(t, "/v1/chat/completions", hello)
	if resp.StatusCode != 500 {
		t.Fatalf("status = %d, want 500", resp.StatusCode)
	}
	e := decode[errorBody](t, resp.Body).Error
	if e.Message != "internal error" || e.Type != "server_error" {
		t.Errorf("error = %+v, want a bare internal error", e)
	}
	if len(ts.model.Requests()) != 0 {
		t.Error("the model was called although the turn could not be recorded")
	}
}

// On a server with keys, /readyz tells anyone whether it is ready, but only
// a caller with a key sees the details (file paths, parse errors).
func TestReadyzDetailsNeedAKey(t *testing.T) {
	ts := MustServe(t, nil)
	dir := filepath.Join(ts.app.Config.Home, "policies")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "broken.rego"), []byte("package nagent.tools\n\nconfirm contains if {\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := ts.app.Policy.Reload(context.Background()); err == nil {
		t.Fatal("a broken policy file reloaded without an error")
	}
	check := func(key string) string {
		req, _ := http.NewRequest("GET", ts.URL+"/readyz", nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 {
			t.Errorf("/readyz = %d; a broken policy file is reported, not fatal", resp.StatusCode)
		}
		body := decode[struct {
			Checks map[string]string `json:"checks"`
		}](t, resp.Body)
		return body.Checks["policy"]
	}
	if got := check(""); strings.Contains(got, "broken.rego") || !strings.Contains(got, "degraded") {
		t.Errorf("without a key: policy = %q", got)
	}
	if got := check(testKey); !strings.Contains(got, "broken.rego") {
		t.Errorf("with the key: policy = %q, want the error", got)
	}
}
