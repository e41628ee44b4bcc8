package app_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/agent"
	"github.com/nagent/nagent/runtime/app"
	"github.com/nagent/nagent/runtime/chat"
	"github.com/nagent/nagent/runtime/config"
	"github.com/nagent/nagent/runtime/core"
	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/llm/scripted"
	"github.com/nagent/nagent/runtime/memory"
	"github.com/nagent/nagent/runtime/tools"
)

func mustWrite(tb testing.TB, path, text string) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		tb.Fatal(err)
	}
}

func mustRead(tb testing.TB, path string) string {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// TestMissionExternalMemory1 replays the design's 外部记忆1 example end to
// end: a dashboard session enables builtin and the external_memory_1
// project, whose memory.md tells the model how to start every reply. The
// empty builtin memory.md adds no block, the project's line reaches both
// inferences in the system message, the question shares no word with the
// entry so nothing is retrieved, and after finalize observations.md holds
// the turn's keywords.
func TestMissionExternalMemory1(t *testing.T) {
	const (
		question = "现在几点了？打印下UTC时间。"
		answer   = "外部记忆1：当前的UTC时间是2026年06月27日 15:52:06.344631。"
		callID   = "call_u8usl364ddpffrw3q5758dk3"
		rule     = `所有的回复，必须以"外部记忆1："开头儿。`
	)
	srv := scripted.Start(
		scripted.Reply{ToolCalls: []llm.ToolCall{{ID: callID, Name: "get_current_time", Arguments: `{}`}}},
		scripted.Reply{Content: answer},
	)
	defer srv.Close()
	cfg := testConfig(t, srv)
	mustWrite(t, filepath.Join(cfg.Home, "memory", "memory.md"), "")
	mustWrite(t, filepath.Join(cfg.Home, "projects", "external_memory_1", "memory.md"), rule+"\n")
	a := MustNewApp(t, cfg)
	ctx := context.Background()

	res, err := a.Chat.Complete(ctx, chat.Request{
		SessionID: "mission", Source: "dashboard", ExternalMemory: []string{"builtin", "external_memory_1"},
		Messages: []llm.Message{{Role: llm.RoleUser, Content: question}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "completed" || res.Iterations != 2 || !strings.HasPrefix(res.Content, "外部记忆1：") {
		t.Fatalf("result = %+v", res)
	}

	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("inferences = %d, want 2", len(reqs))
	}
	wantSystem := core.SystemPrompt("dashboard", "## External memory: external_memory_1/memory.md\n"+rule)
	for i, r := range reqs {
		if r.Messages[0].Role != llm.RoleSystem || r.Messages[0].Content != wantSystem {
			t.Errorf("request %d system message =\n%s\nwant\n%s", i+1, r.Messages[0].Content, wantSystem)
		}
		if strings.Contains(r.Messages[0].Content, "builtin/memory.md") {
			t.Errorf("request %d: the empty builtin memory.md produced a block", i+1)
		}
		if r.Messages[1].Content != question {
			t.Errorf("request %d user message = %q; nothing should have been retrieved", i+1, r.Messages[1].Content)
		}
	}
	if got := roles(reqs[1].Messages); got != "system,user,assistant,tool" {
		t.Errorf("second request roles = %s", got)
	}
	var names []string
	for _, tl := range reqs[0].Tools {
		names = append(names, tl.Name)
	}
	if !slices.Contains(names, "external_memory") || !slices.Contains(names, "multi_external_memory") || names[0] != "get_current_time" {
		t.Errorf("tools = %v", names)
	}

	sess, err := a.DB.GetSession(ctx, "mission")
	if err != nil || !slices.Equal(sess.ExternalMemoryEnabled, []string{"builtin", "external_memory_1"}) {
		t.Fatalf("session = %+v, %v", sess, err)
	}
	obs := mustRead(t, filepath.Join(cfg.Home, "memory", "observations.md"))
	for _, kw := range []string{"UTC", "时间", "mission"} {
		if !strings.Contains(obs, kw) {
			t.Errorf("observations.md = %q, want keyword %q", obs, kw)
		}
	}
	if files := mustRead(t, filepath.Join(cfg.Home, "projects", "external_memory_1", "memory.md")); files != rule+"\n" {
		t.Errorf("project memory changed: %q", files)
	}

	// The snapshot is frozen: editing the project's memory does not change
	// the next turn's system message, so the provider's prompt cache hits.
	mustWrite(t, filepath.Join(cfg.Home, "projects", "external_memory_1", "memory.md"), rule+"\n\n新的一条。\n")
	srv.Enqueue(scripted.Reply{Content: "外部记忆1：好的。"})
	if _, err := a.Chat.Complete(ctx, chat.Request{SessionID: "mission", Source: "dashboard",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "谢谢"}}}); err != nil {
		t.Fatal(err)
	}
	if third := srv.Requests()[2]; third.Messages[0].Content != wantSystem {
		t.Errorf("system message changed in the next turn:\n%s", third.Messages[0].Content)
	}
	// The frozen snapshot is in the store, so it survives a restart too.
	if frozen, err := a.DB.GetMemorySnapshot(ctx, "mission"); err != nil || frozen == nil || !strings.Contains(frozen.Snapshot, rule) {
		t.Fatalf("frozen snapshot = %+v, %v", frozen, err)
	}
	a.Close()
	b := MustNewApp(t, cfg)
	srv.Enqueue(scripted.Reply{Content: "外部记忆1：再见。"})
	if _, err := b.Chat.Complete(ctx, chat.Request{SessionID: "mission", Source: "dashboard",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "再见"}}}); err != nil {
		t.Fatal(err)
	}
	if fourth := srv.Requests()[3]; fourth.Messages[0].Content != wantSystem {
		t.Errorf("system message changed after a restart:\n%s", fourth.Messages[0].Content)
	}
}

// TestPrefetchFence: a memory.md entry that shares words with the question
// reaches the model inside the <memory-context> fence, prepended to a copy
// of the user message; the stored user message has no fence, and an echo
// of the fence in the reply is scrubbed before it is stored.
func TestPrefetchFence(t *testing.T) {
	const (
		entry    = "The deploy server is deploy.example.com, reached over ssh on port 2222."
		question = "Which port does the deploy server use?"
	)
	srv := scripted.Start(scripted.Reply{Content: "<memory-context>\n- " + entry + "\n</memory-context>\nPort 2222."})
	defer srv.Close()
	cfg := testConfig(t, srv)
	mustWrite(t, filepath.Join(cfg.Home, "memory", "memory.md"), "The user prefers short answers.\n\n"+entry+"\n")
	a := MustNewApp(t, cfg)
	ctx := context.Background()

	res, err := a.Chat.Complete(ctx, userTurn("fence", question))
	if err != nil || res.Status != "completed" {
		t.Fatalf("result = %+v, %v", res, err)
	}
	req := srv.Requests()[0]
	last := req.Messages[len(req.Messages)-1]
	want := "<memory-context>\n[builtin]\n- " + entry + "\n</memory-context>\n\n" + question
	if last.Role != llm.RoleUser || last.Content != want {
		t.Errorf("user message sent =\n%q\nwant\n%q", last.Content, want)
	}
	if strings.Contains(req.Messages[0].Content, "<memory-context>") {
		t.Error("the fence reached the system message")
	}
	msgs, err := a.DB.ListMessages(ctx, "fence")
	if err != nil || len(msgs) != 2 {
		t.Fatalf("messages = %v, %v", msgs, err)
	}
	for _, m := range msgs {
		if strings.Contains(m.Content, "memory-context") {
			t.Errorf("stored %s message holds the fence: %q", m.Role, m.Content)
		}
	}
	if msgs[0].Content != question || msgs[1].Content != "Port 2222." {
		t.Errorf("stored = %q / %q", msgs[0].Content, msgs[1].Content)
	}
	if res.Content != "Port 2222." {
		t.Errorf("answer = %q", res.Content)
	}
}

// slowProvider takes its time for everything; ignoreCtx makes it ignore
// its context, as a badly written HTTP client would.
type slowProvider struct {
	name      string
	delay     time.Duration
	ignoreCtx bool
}

func (p slowProvider) Name() string { return p.name }
func (p slowProvider) Prefetch(ctx context.Context, _ memory.PrefetchQuery) (string, error) {
	if p.ignoreCtx {
		time.Sleep(p.delay)
		return "late", nil
	}
	select {
	case <-time.After(p.delay):
		return "late", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

type failingProvider struct{ name string }

func (p failingProvider) Name() string { return p.name }
func (p failingProvider) Prefetch(context.Context, memory.PrefetchQuery) (string, error) {
	return "", errors.New("connection refused by the memory service")
}
func (p failingProvider) SyncTurn(context.Context, memory.SyncTurn) error {
	return errors.New("sync rejected: quota exceeded")
}

// TestProviderFailuresAreLoud: a provider past its timeout and one that
// fails each produce a warning event naming the provider and the error;
// the failures are counted (in memory and in the store); the turn still
// completes, with the other providers' memory, and it is not held up by
// the slow provider.
func TestProviderFailuresAreLoud(t *testing.T) {
	srv := scripted.Start(scripted.Reply{Content: "done"})
	defer srv.Close()
	cfg := testConfig(t, srv)
	cfg.ExternalMemory.Timeouts.Prefetch = config.Duration(150 * time.Millisecond)
	mustWrite(t, filepath.Join(cfg.Home, "memory", "memory.md"), "Release notes live in docs/releases.\n")
	a, err := app.New(context.Background(), cfg, app.Options{
		Now: func() time.Time { return referenceNow },
		MemoryProviders: []memory.Provider{
			slowProvider{name: "slow", delay: 3 * time.Second, ignoreCtx: true},
			failingProvider{name: "flaky"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()

	var mu sync.Mutex
	var warnings []string
	start := time.Now()
	res, err := a.Chat.Stream(context.Background(), chat.Request{
		SessionID: "loud", Source: "cli", ExternalMemory: []string{"builtin", "slow", "flaky"},
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "where are the release notes?"}},
	}, func(e agent.Event) {
		if e.Type == agent.EventWarning {
			mu.Lock()
			warnings = append(warnings, e.Message)
			mu.Unlock()
		}
	})
	elapsed := time.Since(start)
	if err != nil || res.Status != "completed" || res.Content != "done" {
		t.Fatalf("result = %+v, %v", res, err)
	}
	if elapsed > 2*time.Second {
		t.Errorf("turn took %s: the slow provider held it up past its timeout", elapsed)
	}
	joined := strings.Join(warnings, "\n")
	for _, want := range []string{
		`"slow" failed in prefetch: timed out after 150ms`,
		`"flaky" failed in prefetch: connection refused by the memory service`,
		`"flaky" failed in sync_turn: sync rejected: quota exceeded`,
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings =\n%s\nwant one containing %q", joined, want)
		}
	}
	// The builtin provider's memory still reached the model.
	last := srv.Requests()[0].Messages[1].Content
	if !strings.Contains(last, "[builtin]\n- Release notes live in docs/releases.") || strings.Contains(last, "late") {
		t.Errorf("user message sent = %q", last)
	}
	stats := map[string]memory.ProviderStats{}
	for _, s := range a.External.Stats() {
		stats[s.Provider+"/"+s.Operation] = s
	}
	if s := stats["slow/prefetch"]; s.Failures != 1 || s.Timeouts != 1 {
		t.Errorf("slow/prefetch stats = %+v", s)
	}
	if s := stats["flaky/prefetch"]; s.Failures != 1 || s.Timeouts != 0 || !strings.Contains(s.LastError, "refused") {
		t.Errorf("flaky/prefetch stats = %+v", s)
	}
	if s := stats["builtin/prefetch"]; s.Calls != 1 || s.Failures != 0 {
		t.Errorf("builtin/prefetch stats = %+v", s)
	}
	counts, err := a.DB.ListMemoryFailures(context.Background())
	if err != nil || len(counts) != 3 {
		t.Fatalf("stored failure counters = %+v, %v", counts, err)
	}
}

// TestMemoryToolsPolicyAndRecords: the model writes builtin memory and a
// project's memory through the tools; every write is decided by the write
// policy against agent_context and recorded, allowed or not.
func TestMemoryToolsPolicyAndRecords(t *testing.T) {
	srv := scripted.Start()
	defer srv.Close()
	cfg := testConfig(t, srv)
	a := MustNewApp(t, cfg)
	ctx := context.Background()
	call := func(id, name, args string) scripted.Reply {
		return scripted.Reply{ToolCalls: []llm.ToolCall{{ID: id, Name: name, Arguments: args}}}
	}
	srv.Enqueue(
		call("c1", "external_memory", `{"action":"add","target":"user","content":"Prefers answers in Chinese."}`),
		call("c2", "multi_external_memory", `{"project":"website","action":"add","target":"memory","content":"Deploys go through GitHub Actions."}`),
		call("c3", "multi_external_memory", `{"project":"other","action":"add","target":"memory","content":"nope"}`),
		scripted.Reply{Content: "noted"},
	)
	res, err := a.Chat.Complete(ctx, chat.Request{SessionID: "w1", Source: "cli", ExternalMemory: []string{"builtin", "website"},
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "remember this"}}})
	if err != nil || res.Status != "completed" {
		t.Fatalf("result = %+v, %v", res, err)
	}
	if got := mustRead(t, filepath.Join(cfg.Home, "memory", "user.md")); got != "Prefers answers in Chinese.\n" {
		t.Errorf("user.md = %q", got)
	}
	if got := mustRead(t, filepath.Join(cfg.Home, "projects", "website", "memory.md")); got != "Deploys go through GitHub Actions.\n" {
		t.Errorf("website memory.md = %q", got)
	}
	calls, _ := a.DB.ListToolCalls(ctx, "w1")
	if len(calls) != 3 || calls[2].Status != "error" || !strings.Contains(calls[2].Result, `project "other" is not enabled`) {
		t.Errorf("tool calls = %+v", calls)
	}

	// A cron run may not write builtin memory: denied, recorded, file unchanged.
	srv.Enqueue(call("c4", "external_memory", `{"action":"add","target":"memory","content":"cron was here"}`), scripted.Reply{Content: "ok"})
	if _, err := a.Chat.Complete(ctx, chat.Request{SessionID: "cron1", Source: "cron", Exec: tools.ExecutionContext{AgentContext: tools.AgentCron},
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "nightly report"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cfg.Home, "memory", "memory.md")); !os.IsNotExist(err) {
		t.Errorf("memory.md written by a cron run: %v", err)
	}
	writes, err := a.DB.ListMemoryWrites(ctx, "", 0)
	if err != nil || len(writes) != 3 {
		t.Fatalf("recorded writes = %d, %v", len(writes), err)
	}
	denied := writes[0]
	if denied.SessionID != "cron1" || denied.Allowed || denied.AgentContext != "cron" || len(denied.Reasons) != 1 ||
		!strings.Contains(denied.Reasons[0], "cannot write builtin memory") {
		t.Errorf("denied write record = %+v", denied)
	}
	if w := writes[2]; !w.Allowed || w.Provider != "builtin" || w.Target != "user.md" || w.Operation != "add" || w.ToolCallID != "c1" {
		t.Errorf("first write record = %+v", w)
	}
	if w := writes[1]; !w.Allowed || w.Provider != "project:website" || w.Target != "memory.md" {
		t.Errorf("project write record = %+v", w)
	}
	// A cron turn's sync_turn is a builtin write too, and is not allowed.
	if obs, _ := os.ReadFile(filepath.Join(cfg.Home, "memory", "observations.md")); strings.Contains(string(obs), "nightly") {
		t.Errorf("observations.md written by a cron run: %q", obs)
	}
	last := srv.Requests()[len(srv.Requests())-1].Messages
	if c := last[len(last)-1].Content; !strings.Contains(c, "denied by the memory policy") {
		t.Errorf("the model did not see the denial: %q", c)
	}
}

// salvager is a provider whose on_pre_compress hook keeps one fact and
// remembers what it was shown.
type salvager struct {
	mu   sync.Mutex
	seen []llm.Message
}

func (s *salvager) Name() string { return "salvager" }
func (s *salvager) OnPreCompress(_ context.Context, c memory.PreCompress) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, c.Messages...)
	return "the user's favourite colour is teal", nil
}

// TestHistoryCompression runs a long tool-using conversation against a
// small context window. Every request fits the budget; tool calls are never
// separated from their results; the summary that replaces the middle holds
// what the pre-compress hook salvaged; the first turn and the latest
// question are kept; and the system message is byte-identical before and
// after compression.
func TestHistoryCompression(t *testing.T) {
	srv := scripted.Start()
	defer srv.Close()
	var n int
	var nmu sync.Mutex
	srv.SetResponder(func(r scripted.RecordedRequest) scripted.Reply {
		nmu.Lock()
		defer nmu.Unlock()
		n++
		if r.Messages[len(r.Messages)-1].Role == llm.RoleUser {
			return scripted.Reply{ToolCalls: []llm.ToolCall{{ID: "call_" + strconv.Itoa(n), Name: "get_current_time", Arguments: `{}`}}}
		}
		return scripted.Reply{Content: "Here is a detailed answer about the topic you asked for, with the time included as requested. " + strings.Repeat("More detail. ", 8)}
	})
	cfg := testConfig(t, srv)
	cfg.ExternalMemory.Compression = config.Compression{ContextWindow: 4000, Budget: 0.5, TailFraction: 0.4, KeepFirstTurns: 1}
	salv := &salvager{}
	a, err := app.New(context.Background(), cfg, app.Options{Now: func() time.Time { return referenceNow }, MemoryProviders: []memory.Provider{salv}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	budget := 2000
	ctx := context.Background()
	var warnings []string
	for i := 1; i <= 30; i++ {
		q := "Question number " + strconv.Itoa(i) + ": tell me about topic " + strings.Repeat("alpha ", 20)
		res, err := a.Chat.Stream(ctx, chat.Request{SessionID: "long", Source: "cli", ExternalMemory: []string{"builtin", "salvager"},
			Messages: []llm.Message{{Role: llm.RoleUser, Content: q}}}, func(e agent.Event) {
			if e.Type == agent.EventWarning {
				warnings = append(warnings, e.Message)
			}
		})
		if err != nil || res.Status != "completed" {
			t.Fatalf("turn %d = %+v, %v", i, res, err)
		}
	}
	if len(warnings) > 0 {
		t.Errorf("warnings: %v", warnings)
	}
	reqs := srv.Requests()
	system := reqs[0].Messages[0].Content
	compressed := 0
	summaries := map[string]bool{}
	for i, r := range reqs {
		msgs := r.Messages
		if msgs[0].Content != system {
			t.Fatalf("request %d: system message changed", i+1)
		}
		tokens := memory.EstimateTokens(msgs[1:]) + memory.EstimateTextTokens(system)
		for _, tl := range r.Tools {
			tokens += memory.EstimateTextTokens(tl.Name) + memory.EstimateTextTokens(tl.Description) + memory.EstimateTextTokens(string(tl.Parameters))
		}
		if tokens > budget {
			t.Errorf("request %d: %d estimated tokens, over the budget of %d", i+1, tokens, budget)
		}
		if !strings.HasPrefix(msgs[1].Content, "Question number 1:") {
			t.Errorf("request %d: the first turn was not kept: %q", i+1, msgs[1].Content)
		}
		checkToolPairs(t, i+1, msgs)
		for _, m := range msgs {
			if strings.HasPrefix(m.Content, "<conversation-summary>") {
				compressed++
				summaries[m.Content] = true
				if !strings.Contains(m.Content, "[salvager]\nthe user's favourite colour is teal") || !strings.Contains(m.Content, "- user: Question number") {
					t.Errorf("request %d: summary = %q", i+1, m.Content)
				}
			}
		}
	}
	if compressed < 10 {
		t.Fatalf("only %d of %d requests were compressed; the test did not exercise compression", compressed, len(reqs))
	}
	// A compression is reused by later requests until the history outgrows
	// it, so the request prefix (and the provider's cache) stays stable.
	if len(summaries) > compressed/3 {
		t.Errorf("%d compressions for %d compressed requests; each should be reused", len(summaries), compressed)
	}
	t.Logf("%d requests, %d compressed, %d distinct summaries", len(reqs), compressed, len(summaries))
	if testing.Verbose() {
		for _, m := range reqs[len(reqs)-1].Messages[1:] {
			t.Logf("%s %q", m.Role, m.Content)
		}
	}
	if uncompressed := reqs[0].Messages; len(uncompressed) != 2 {
		t.Errorf("first request = %d messages", len(uncompressed))
	}
	// The latest question is always in the request.
	lastReq := reqs[len(reqs)-2].Messages
	if q := lastReq[len(lastReq)-1]; q.Role != llm.RoleUser || !strings.Contains(q.Content, "number 30:") {
		t.Errorf("last question request ends with %+v", q)
	}
	// The store keeps every message; compression only shaped the requests.
	msgs, _ := a.DB.ListMessages(ctx, "long")
	if len(msgs) != 30*4 {
		t.Errorf("stored messages = %d, want %d", len(msgs), 30*4)
	}
	rec, err := a.DB.GetHistoryCompression(ctx, "long")
	if err != nil || rec == nil || rec.HeadEnd != 4 || !strings.Contains(rec.Salvage, "teal") {
		t.Errorf("stored compression = %+v, %v", rec, err)
	}
	salv.mu.Lock()
	defer salv.mu.Unlock()
	if len(salv.seen) == 0 || salv.seen[0].Role != llm.RoleUser || !strings.Contains(salv.seen[0].Content, "number 2:") {
		t.Errorf("pre-compress hook saw %d messages, first %+v", len(salv.seen), salv.seen)
	}
}

// checkToolPairs fails if a tool message is separated from the assistant
// message that called it, or a call has no result.
func checkToolPairs(t *testing.T, req int, msgs []llm.Message) {
	t.Helper()
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if m.Role == llm.RoleTool {
			t.Errorf("request %d: tool message %d (%s) does not follow its assistant message", req, i, m.ToolCallID)
			continue
		}
		if m.Role != llm.RoleAssistant || len(m.ToolCalls) == 0 {
			continue
		}
		for _, c := range m.ToolCalls {
			i++
			if i >= len(msgs) {
				t.Errorf("request %d: call %s has no result", req, c.ID)
				break
			}
			if msgs[i].Role != llm.RoleTool || msgs[i].ToolCallID != c.ID {
				t.Errorf("request %d: call %s followed by %s %q", req, c.ID, msgs[i].Role, msgs[i].ToolCallID)
			}
		}
	}
}

// TestHolographicRetrieval: with holographic as the active retrieval
// provider, the model stores a fact with fact_add in one session (a
// recorded, policy-checked write), and a later session's question that
// shares words with it gets it in the fence. Sessions that do not enable
// holographic do not see its tools.
func TestHolographicRetrieval(t *testing.T) {
	srv := scripted.Start(
		scripted.Reply{ToolCalls: []llm.ToolCall{{ID: "f1", Name: "fact_add", Arguments: `{"content":"The staging cluster is called kestrel and runs in eu-west-1.","category":"project"}`}}},
		scripted.Reply{Content: "Stored."},
		scripted.Reply{Content: "It is kestrel."},
		scripted.Reply{Content: "plain"},
	)
	defer srv.Close()
	cfg := testConfig(t, srv)
	cfg.ExternalMemory.Retrieval.Provider = "holographic"
	a := MustNewApp(t, cfg)
	ctx := context.Background()
	enabled := []string{"builtin", "holographic"}
	for _, turn := range []struct{ session, text string }{
		{"h1", "Remember: the staging cluster is called kestrel, in eu-west-1."},
		{"h2", "What is the staging cluster called?"},
	} {
		res, err := a.Chat.Complete(ctx, chat.Request{SessionID: turn.session, Source: "cli", ExternalMemory: enabled,
			Messages: []llm.Message{{Role: llm.RoleUser, Content: turn.text}}})
		if err != nil || res.Status != "completed" {
			t.Fatalf("turn %s = %+v, %v", turn.session, res, err)
		}
	}
	reqs := srv.Requests()
	last := reqs[2].Messages[len(reqs[2].Messages)-1].Content
	if !strings.HasPrefix(last, "<memory-context>\n[holographic]\n- [fact 1] The staging cluster is called kestrel and runs in eu-west-1.\n</memory-context>") {
		t.Errorf("second session's question = %q", last)
	}
	var names []string
	for _, tl := range reqs[0].Tools {
		if tl.Name != "execute_code" { // present only where a sandbox backend works (runtime/app/sandbox_test.go)
			names = append(names, tl.Name)
		}
	}
	if got := strings.Join(names, ","); got != "get_current_time,external_memory,fact_add,fact_search,fact_feedback,skills_list,skill_view" {
		t.Errorf("tools = %s", got)
	}
	writes, _ := a.DB.ListMemoryWrites(ctx, "h1", 0)
	if len(writes) != 1 || writes[0].Provider != "holographic" || writes[0].Operation != "add" || !writes[0].Allowed {
		t.Errorf("recorded writes = %+v", writes)
	}
	// A session without holographic sees neither its tools nor its facts.
	if _, err := a.Chat.Complete(ctx, chat.Request{SessionID: "h3", Source: "cli", ExternalMemory: []string{"builtin"},
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "What is the staging cluster called?"}}}); err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()[3]
	if q := r.Messages[len(r.Messages)-1].Content; q != "What is the staging cluster called?" {
		t.Errorf("question without holographic = %q", q)
	}
	for _, tl := range r.Tools {
		if strings.HasPrefix(tl.Name, "fact_") {
			t.Errorf("tool %s exposed to a session without holographic", tl.Name)
		}
	}
}
