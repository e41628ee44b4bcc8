package app_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/agent"
	"github.com/nagent/nagent/runtime/app"
	"github.com/nagent/nagent/runtime/chat"
	"github.com/nagent/nagent/runtime/config"
	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/llm/scripted"
	"github.com/nagent/nagent/store"
)

// referenceNow is the instant of the design's reference dialogue.
var referenceNow = time.Date(2026, 6, 27, 15, 52, 6, 344631000, time.UTC)

// testConfig points a fresh data directory at the scripted model.
func testConfig(tb testing.TB, srv *scripted.Server) *config.Config {
	tb.Helper()
	cfg := config.Defaults()
	cfg.Home = tb.TempDir()
	cfg.LLM.BaseURL = srv.URL()
	cfg.LLM.Model = "scripted-model"
	cfg.LLM.MaxAttempts = 3
	cfg.LLM.RetryBaseDelay = config.Duration(time.Millisecond)
	return &cfg
}

// MustNewApp wires the runtime for cfg with a fixed clock.
func MustNewApp(tb testing.TB, cfg *config.Config) *app.App {
	tb.Helper()
	a, err := app.New(context.Background(), cfg, app.Options{Now: func() time.Time { return referenceNow }})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { a.Close() })
	return a
}

func userTurn(session, text string) chat.Request {
	return chat.Request{SessionID: session, Source: "cli", Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}}
}

func roles(msgs []llm.Message) string {
	var r []string
	for _, m := range msgs {
		r = append(r, string(m.Role))
	}
	return strings.Join(r, ",")
}

func mustSummary(tb testing.TB, db *store.DB, session string) string {
	tb.Helper()
	s, err := db.GetSummary(context.Background(), session)
	if err != nil || s == nil {
		tb.Fatalf("GetSummary = %v, %v", s, err)
	}
	return s.Content
}

// TestReferenceDialogue replays the design's reference conversation: the
// user asks for the UTC time, the model calls get_current_time, then answers.
func TestReferenceDialogue(t *testing.T) {
	const (
		question = "现在几点了？打印下UTC时间。"
		answer   = "当前的UTC时间是2026年06月27日 15:52:06.344631。"
		callID   = "call_u8usl364ddpffrw3q5758dk3"
		toolOut  = `{"now":"2026-06-27T15:52:06.344631+00:00"}`
	)
	srv := scripted.Start(
		scripted.Reply{ToolCalls: []llm.ToolCall{{ID: callID, Name: "get_current_time", Arguments: `{}`}}},
		scripted.Reply{Content: answer},
	)
	defer srv.Close()
	cfg := testConfig(t, srv)
	a := MustNewApp(t, cfg)
	ctx := context.Background()

	res, err := a.Chat.Complete(ctx, userTurn("ref", question))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "completed" || res.Content != answer || res.Iterations != 2 {
		t.Fatalf("result = %+v", res)
	}

	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("inferences = %d, want exactly 2", len(reqs))
	}
	second := reqs[1].Messages
	if got := roles(second); got != "system,user,assistant,tool" {
		t.Fatalf("second request roles = %s, want system,user,assistant,tool", got)
	}
	if second[0].Content != reqs[0].Messages[0].Content {
		t.Error("system message changed between inferences; provider prompt caches would miss")
	}
	if second[1].Content != question {
		t.Errorf("user content = %q", second[1].Content)
	}
	if tc := second[2].ToolCalls; len(tc) != 1 || tc[0].ID != callID || tc[0].Name != "get_current_time" {
		t.Errorf("assistant tool_calls = %+v", tc)
	}
	if second[3].ToolCallID != callID || second[3].Content != toolOut {
		t.Errorf("tool message = %+v, want result %s", second[3], toolOut)
	}
	if tools := reqs[0].Tools; len(tools) == 0 || tools[0].Name != "get_current_time" {
		t.Errorf("first request tools = %+v", tools)
	}

	calls, err := a.DB.ListToolCalls(ctx, "ref")
	if err != nil || len(calls) != 1 {
		t.Fatalf("tool call records = %v, %v", calls, err)
	}
	if c := calls[0]; c.ID != callID || c.Status != "success" || c.Result != toolOut {
		t.Errorf("tool call record = %+v", c)
	}
	ts, _ := a.DB.GetTaskState(ctx, "ref")
	if ts.Status != "completed" || ts.IterationCount != 2 {
		t.Errorf("task state = %+v, want completed after 2", ts)
	}
	wantSummary := "用户: " + question + " | 助手: " + answer
	if got := mustSummary(t, a.DB, "ref"); got != wantSummary {
		t.Errorf("summary = %q, want %q", got, wantSummary)
	}

	// The session survives a restart: close everything, reopen the file.
	a.Close()
	db, err := store.Open(ctx, cfg.DBPath())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sess, err := db.GetSession(ctx, "ref")
	if err != nil || sess.Source != "cli" || sess.Title != question {
		t.Fatalf("reopened session = %+v, %v", sess, err)
	}
	msgs, _ := db.ListMessages(ctx, "ref")
	var got []string
	for _, m := range msgs {
		got = append(got, m.Role)
	}
	if strings.Join(got, ",") != "user,assistant,tool,assistant" || msgs[3].Content != answer {
		t.Errorf("reopened messages = %v", got)
	}
	if ts, _ := db.GetTaskState(ctx, "ref"); ts.Status != "completed" || ts.IterationCount != 2 {
		t.Errorf("reopened task state = %+v", ts)
	}
}

// TestSummaryOverwrittenEachUpdate watches the rolling summary after the tool
// round's update_memory and again after finalize.
func TestSummaryOverwrittenEachUpdate(t *testing.T) {
	srv := scripted.Start(
		scripted.Reply{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "get_current_time", Arguments: `{"timezone":"Asia/Shanghai"}`}}},
		scripted.Reply{Content: "现在是上海时间 23:52。"},
	)
	defer srv.Close()
	a := MustNewApp(t, testConfig(t, srv))

	var afterRound string
	_, err := a.Chat.Stream(context.Background(), userTurn("sum", "上海几点？"), func(e agent.Event) {
		if e.Type == agent.EventMemoryUpdated {
			afterRound = mustSummary(t, a.DB, "sum")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "用户: 上海几点？ | 助手: 调用工具 get_current_time"; afterRound != want {
		t.Errorf("summary after tool round = %q, want %q", afterRound, want)
	}
	if got, want := mustSummary(t, a.DB, "sum"), "用户: 上海几点？ | 助手: 现在是上海时间 23:52。"; got != want {
		t.Errorf("final summary = %q, want %q", got, want)
	}
}

// TestEventsFollowTheGraph checks that every transition emits a state event
// in the order the architecture defines.
func TestEventsFollowTheGraph(t *testing.T) {
	srv := scripted.Start(
		scripted.Reply{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "get_current_time", Arguments: `{}`}}},
		scripted.Reply{Content: "It is 15:52 UTC."},
	)
	defer srv.Close()
	a := MustNewApp(t, testConfig(t, srv))

	var trace []string
	var deltas strings.Builder
	res, err := a.Chat.Stream(context.Background(), userTurn("ev", "time?"), func(e agent.Event) {
		switch e.Type {
		case agent.EventState:
			trace = append(trace, e.State)
		case agent.EventDelta:
			deltas.WriteString(e.Content)
		case agent.EventToolStarted, agent.EventToolFinished, agent.EventMemoryUpdated, agent.EventRunFinished:
			trace = append(trace, e.Type)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "load_context call_llm execute_tools tool_started tool_finished update_memory memory_updated " +
		"call_llm update_memory finalize run_finished"
	if got := strings.Join(trace, " "); got != want {
		t.Errorf("trace =\n  %s\nwant\n  %s", got, want)
	}
	if deltas.String() != res.Content {
		t.Errorf("streamed deltas %q != final content %q", deltas.String(), res.Content)
	}
}

type persisted struct {
	roles     string
	lastMsg   *store.Message
	toolCalls []*store.ToolCall
	task      *store.TaskState
}

func readPersisted(tb testing.TB, db *store.DB, session string) persisted {
	tb.Helper()
	ctx := context.Background()
	msgs, err := db.ListMessages(ctx, session)
	if err != nil {
		tb.Fatal(err)
	}
	var p persisted
	var r []string
	for _, m := range msgs {
		r = append(r, m.Role)
	}
	p.roles = strings.Join(r, ",")
	if len(msgs) > 0 {
		p.lastMsg = msgs[len(msgs)-1]
	}
	p.toolCalls, _ = db.ListToolCalls(ctx, session)
	p.task, _ = db.GetTaskState(ctx, session)
	return p
}

var failureTests = []struct {
	name      string
	replies   []scripted.Reply
	configure func(*config.Config)
	// expectations
	status      string
	requests    int
	iterations  int // model calls persisted in the task state
	roles       string
	lastStatus  string // status mark of the last stored message
	errContains string // in task state error
	toolStatus  []string
	toolResult  string // substring of the first tool result
}{
	{
		name:       "Provider500ThenSuccess",
		replies:    []scripted.Reply{{Status: 500, ErrorMessage: "upstream exploded"}, {Content: "fine now"}},
		status:     "completed",
		requests:   2,
		iterations: 1,
		roles:      "user,assistant",
	},
	{
		name: "Provider429RetryAfterThenSuccess",
		replies: []scripted.Reply{
			{Status: 429, ErrorMessage: "slow down", Header: map[string]string{"Retry-After": "0"}},
			{Content: "fine now"},
		},
		status:     "completed",
		requests:   2,
		iterations: 1,
		roles:      "user,assistant",
	},
	{
		name: "Provider500Exhausted",
		replies: []scripted.Reply{
			{Status: 500, ErrorMessage: "upstream exploded"},
			{Status: 500, ErrorMessage: "upstream exploded"},
			{Status: 500, ErrorMessage: "upstream exploded"},
		},
		status:      "failed",
		requests:    3,
		iterations:  1,
		roles:       "user,assistant",
		lastStatus:  "error",
		errContains: "HTTP 500",
	},
	{
		name:      "ProviderTimeout",
		replies:   []scripted.Reply{{Delay: 5 * time.Second, Content: "too late"}},
		configure: func(c *config.Config) { c.LLM.Timeout = config.Duration(150 * time.Millisecond); c.LLM.MaxAttempts = 1 },
		status:    "failed", requests: 1, iterations: 1, roles: "user,assistant", lastStatus: "error",
		errContains: "timeout",
	},
	{
		name: "MalformedToolArguments",
		replies: []scripted.Reply{
			{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "get_current_time", Arguments: `{"timezone":`}}},
			{Content: "Sorry, fixed."},
		},
		status: "completed", requests: 2, iterations: 2, roles: "user,assistant,tool,assistant",
		toolStatus: []string{"error"}, toolResult: "not valid JSON",
	},
	{
		name: "WrongArgumentType",
		replies: []scripted.Reply{
			{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "get_current_time", Arguments: `{"timezone":42}`}}},
			{Content: "Sorry, fixed."},
		},
		status: "completed", requests: 2, iterations: 2, roles: "user,assistant,tool,assistant",
		toolStatus: []string{"error"}, toolResult: "/timezone",
	},
	{
		name: "UnknownTool",
		replies: []scripted.Reply{
			{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "launch_rockets", Arguments: `{}`}}},
			{Content: "I cannot do that."},
		},
		status: "completed", requests: 2, iterations: 2, roles: "user,assistant,tool,assistant",
		toolStatus: []string{"error"}, toolResult: "launch_rockets",
	},
	{
		name: "IterationLimit",
		replies: []scripted.Reply{
			{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "get_current_time", Arguments: `{}`}}},
			{ToolCalls: []llm.ToolCall{{ID: "c2", Name: "get_current_time", Arguments: `{}`}}},
			{ToolCalls: []llm.ToolCall{{ID: "c3", Name: "get_current_time", Arguments: `{}`}}},
		},
		configure: func(c *config.Config) { c.Agent.MaxIterations = 3 },
		status:    "failed", requests: 3, iterations: 3,
		roles:      "user,assistant,tool,assistant,tool,assistant,tool,assistant",
		lastStatus: "error", errContains: "iteration limit",
		toolStatus: []string{"success", "success", "success"},
	},
}

func TestFailurePaths(t *testing.T) {
	for _, tt := range failureTests {
		t.Run(tt.name, func(t *testing.T) {
			srv := scripted.Start(tt.replies...)
			defer srv.Close()
			cfg := testConfig(t, srv)
			if tt.configure != nil {
				tt.configure(cfg)
			}
			a := MustNewApp(t, cfg)
			res, err := a.Chat.Complete(context.Background(), userTurn("s", "do it"))
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != tt.status {
				t.Errorf("status = %s (%s), want %s", res.Status, res.Error, tt.status)
			}
			if n := len(srv.Requests()); n != tt.requests {
				t.Errorf("provider requests = %d, want %d", n, tt.requests)
			}
			p := readPersisted(t, a.DB, "s")
			if p.roles != tt.roles {
				t.Errorf("stored roles = %s, want %s", p.roles, tt.roles)
			}
			if p.lastMsg.Status != tt.lastStatus {
				t.Errorf("last message status = %q, want %q", p.lastMsg.Status, tt.lastStatus)
			}
			if p.task.Status != tt.status || p.task.IterationCount != tt.iterations {
				t.Errorf("task state = %+v", p.task)
			}
			if !strings.Contains(p.task.Error, tt.errContains) {
				t.Errorf("task error = %q, want it to mention %q", p.task.Error, tt.errContains)
			}
			if tt.status == "failed" && !strings.Contains(p.lastMsg.Content, tt.errContains) {
				t.Errorf("explanation = %q, want it to mention %q", p.lastMsg.Content, tt.errContains)
			}
			if len(p.toolCalls) != len(tt.toolStatus) {
				t.Fatalf("tool call records = %d, want %d", len(p.toolCalls), len(tt.toolStatus))
			}
			for i, want := range tt.toolStatus {
				if p.toolCalls[i].Status != want {
					t.Errorf("tool call %d status = %s, want %s", i, p.toolCalls[i].Status, want)
				}
			}
			if tt.toolResult != "" && !strings.Contains(p.toolCalls[0].Result, tt.toolResult) {
				t.Errorf("tool result = %q, want it to mention %q", p.toolCalls[0].Result, tt.toolResult)
			}
			if tt.toolResult != "" {
				// The model sees the error, so it can correct itself.
				last := srv.Requests()[tt.requests-1].Messages
				if !strings.Contains(last[len(last)-1].Content, tt.toolResult) {
					t.Errorf("the model did not see the tool error: %+v", last[len(last)-1])
				}
			}
		})
	}
}

func TestCancellationMidTurn(t *testing.T) {
	t.Run("WhileStreaming", func(t *testing.T) {
		srv := scripted.Start(
			scripted.Reply{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "get_current_time", Arguments: `{}`}}},
			scripted.Reply{Content: "The time is fifteen fifty-two and some seconds.", ChunkSize: 4, ChunkDelay: 40 * time.Millisecond},
		)
		defer srv.Close()
		a := MustNewApp(t, testConfig(t, srv))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var once sync.Once
		res, err := a.Chat.Stream(ctx, userTurn("c", "time?"), func(e agent.Event) {
			if e.Type == agent.EventDelta && e.Content != "" {
				once.Do(cancel)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != "cancelled" {
			t.Fatalf("status = %s, want cancelled", res.Status)
		}
		p := readPersisted(t, a.DB, "c")
		// The tool round written before the cancel survives, and so does the
		// partial answer, marked cancelled.
		if p.roles != "user,assistant,tool,assistant" {
			t.Fatalf("stored roles = %s", p.roles)
		}
		if p.lastMsg.Status != "cancelled" || p.lastMsg.Content == "" ||
			!strings.HasPrefix("The time is fifteen fifty-two and some seconds.", p.lastMsg.Content) {
			t.Errorf("partial answer = %+v", p.lastMsg)
		}
		if p.task.Status != "cancelled" || p.task.IterationCount != 2 || len(p.toolCalls) != 1 {
			t.Errorf("task = %+v, tool calls = %d", p.task, len(p.toolCalls))
		}
	})
	t.Run("WhileWaitingForTheModel", func(t *testing.T) {
		srv := scripted.Start(scripted.Reply{Delay: 10 * time.Second, Content: "late"})
		defer srv.Close()
		a := MustNewApp(t, testConfig(t, srv))
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		res, err := a.Chat.Complete(ctx, userTurn("w", "hello"))
		if err != nil {
			t.Fatal(err)
		}
		p := readPersisted(t, a.DB, "w")
		if res.Status != "cancelled" || p.task.Status != "cancelled" || p.roles != "user" {
			t.Errorf("status = %s, task = %+v, roles = %s", res.Status, p.task, p.roles)
		}
	})
}

// TestOneTurnAtATimePerSession sends two turns to one session at once: the
// second waits, so the stored conversation never interleaves.
func TestOneTurnAtATimePerSession(t *testing.T) {
	srv := scripted.Start()
	defer srv.Close()
	srv.SetResponder(func(r scripted.RecordedRequest) scripted.Reply {
		last := r.Messages[len(r.Messages)-1]
		return scripted.Reply{Content: "echo " + last.Content, Delay: 100 * time.Millisecond}
	})
	a := MustNewApp(t, testConfig(t, srv))

	var wg sync.WaitGroup
	for _, turn := range []struct{ session, text string }{{"same", "one"}, {"same", "two"}, {"other", "three"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := a.Chat.Complete(context.Background(), userTurn(turn.session, turn.text)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()

	msgs, _ := a.DB.ListMessages(context.Background(), "same")
	if len(msgs) != 4 {
		t.Fatalf("messages = %d, want 4", len(msgs))
	}
	for i := 0; i < 4; i += 2 {
		if msgs[i].Role != "user" || msgs[i+1].Role != "assistant" || msgs[i+1].Content != "echo "+msgs[i].Content {
			t.Errorf("turns interleaved: %q then %q", msgs[i].Content, msgs[i+1].Content)
		}
	}
	// The later turn saw the earlier one's history.
	var sawHistory bool
	for _, r := range srv.Requests() {
		if len(r.Messages) == 4 { // system, user, assistant, user
			sawHistory = true
		}
	}
	if !sawHistory {
		t.Error("no request carried the first turn's history")
	}
}

func TestRequestValidation(t *testing.T) {
	srv := scripted.Start()
	defer srv.Close()
	a := MustNewApp(t, testConfig(t, srv))
	if _, err := a.Chat.Complete(context.Background(), chat.Request{Source: "cli"}); err == nil {
		t.Error("empty turn accepted")
	}
	if _, err := a.Chat.Complete(context.Background(), chat.Request{Messages: []llm.Message{{Role: "robot", Content: "x"}}}); err == nil ||
		!strings.Contains(err.Error(), "unknown role") {
		t.Errorf("bad role: %v", err)
	}
	if len(srv.Requests()) != 0 {
		t.Error("invalid input reached the model")
	}
}

// TestAnthropicProvider runs a tool-using turn through the Anthropic
// Messages adapter instead of the OpenAI one.
func TestAnthropicProvider(t *testing.T) {
	srv := scripted.Start(
		scripted.Reply{ToolCalls: []llm.ToolCall{{ID: "toolu_1", Name: "get_current_time", Arguments: `{}`}}},
		scripted.Reply{Content: "It is 15:52 UTC."},
	)
	defer srv.Close()
	cfg := testConfig(t, srv)
	cfg.LLM.Provider = "anthropic"
	a := MustNewApp(t, cfg)
	res, err := a.Chat.Complete(context.Background(), userTurn("anth", "time?"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "completed" || res.Content != "It is 15:52 UTC." || res.Iterations != 2 {
		t.Fatalf("result = %+v", res)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || reqs[1].Path != scripted.MessagesPath {
		t.Fatalf("requests = %d, path %q", len(reqs), reqs[len(reqs)-1].Path)
	}
	// The tool result went back to the model as Anthropic's tool_result.
	if !strings.Contains(string(reqs[1].Body), `"tool_result"`) || !strings.Contains(string(reqs[1].Body), `"tool_use_id":"toolu_1"`) {
		t.Errorf("second request body = %s", reqs[1].Body)
	}
}
