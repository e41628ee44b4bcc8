package memory_test

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/memory"
	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/store"
)

var termTests = []struct {
	text string
	want []string
}{
	{"现在几点了？打印下UTC时间。", []string{"现在", "在几", "几点", "打印", "印下", "utc", "时间"}},
	{`所有的回复，必须以"外部记忆1："开头儿。`, []string{"所有", "回复", "必须", "须以", "外部", "部记", "记忆", "开头", "头儿"}},
	{"What is the deploy server's port?", []string{"deploy", "server", "port"}},
	{"a 1 x", nil},
}

func TestTerms(t *testing.T) {
	for _, tt := range termTests {
		if got := memory.Terms(tt.text); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Terms(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
	if o := memory.Overlap(memory.TermSet(termTests[0].text), memory.TermSet(termTests[1].text)); o != 0 {
		t.Errorf("the mission's query and entry overlap by %v, want 0", o)
	}
	kws := memory.Keywords(4, "现在几点了？打印下UTC时间。", "外部记忆1：当前的UTC时间是2026年06月27日 15:52:06.344631。")
	if !reflect.DeepEqual(kws, []string{"UTC", "时间", "现在", "在几"}) {
		t.Errorf("keywords = %q", kws)
	}
}

func mustDB(tb testing.TB) *store.DB {
	tb.Helper()
	db, err := store.Open(context.Background(), filepath.Join(tb.TempDir(), "nagent.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// snap is a provider with a snapshot block that can fail on demand.
type snap struct {
	name  string
	block atomic.Value // string
	fail  atomic.Bool
	calls atomic.Int32
}

func newSnap(name, block string) *snap {
	s := &snap{name: name}
	s.block.Store(block)
	return s
}
func (s *snap) Name() string { return s.name }
func (s *snap) SystemSnapshot(context.Context) (string, error) {
	s.calls.Add(1)
	if s.fail.Load() {
		return "", errors.New("disk on fire")
	}
	return s.block.Load().(string), nil
}

func TestSnapshotIsFrozen(t *testing.T) {
	ctx := context.Background()
	db := mustDB(t)
	if err := db.Update(ctx, func(tx *store.Tx) error {
		_, err := tx.CreateSession(ctx, store.Session{ID: "s1", Source: "cli"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	a, b := newSnap("a", "block A"), newSnap("b", "")
	opts := memory.ManagerOptions{DB: db, Extra: []memory.Provider{a, b}}
	m := memory.NewExternalMemoryManager(opts)

	b.fail.Store(true)
	s, freeze, fails := m.Snapshot(ctx, "s1", []string{"a", "b"})
	if s != "block A" || freeze != nil || len(fails) != 1 || fails[0].Provider != "b" || fails[0].Operation != memory.OpSnapshot {
		t.Fatalf("snapshot with a failure = %q, %v, %v; it must not be frozen", s, freeze, fails)
	}
	b.fail.Store(false)
	b.block.Store("block B")
	s, freeze, fails = m.Snapshot(ctx, "s1", []string{"a", "b"})
	if s != "block A\n\nblock B" || fails != nil || freeze == nil || freeze.Snapshot != s {
		t.Fatalf("snapshot = %q, %v, %v", s, freeze, fails)
	}
	// The loop freezes it in the turn's final transaction.
	if err := db.Update(ctx, func(tx *store.Tx) error { return tx.FreezeMemorySnapshot(ctx, *freeze) }); err != nil {
		t.Fatal(err)
	}
	a.block.Store("changed")
	calls := a.calls.Load()
	if s, freeze, _ := m.Snapshot(ctx, "s1", []string{"a", "b"}); s != "block A\n\nblock B" || freeze != nil || a.calls.Load() != calls {
		t.Errorf("frozen snapshot = %q, %v (provider asked again: %v)", s, freeze, a.calls.Load() != calls)
	}
	// Another process (a new manager over the same store) sees the same snapshot.
	m2 := memory.NewExternalMemoryManager(opts)
	if s, freeze, _ := m2.Snapshot(ctx, "s1", []string{"a", "b"}); s != "block A\n\nblock B" || freeze != nil {
		t.Errorf("snapshot after restart = %q", s)
	}
}

func TestRouting(t *testing.T) {
	m := memory.NewExternalMemoryManager(memory.ManagerOptions{Extra: []memory.Provider{newSnap("a", "x")}})
	_, _, fails := m.Snapshot(context.Background(), "s", []string{"a", "mem0", "../etc", "builtin"})
	var msgs []string
	for _, f := range fails {
		msgs = append(msgs, f.Error())
	}
	want := []string{
		`external memory provider "mem0" failed in route: mem0 is not the active retrieval provider (external_memory.retrieval.provider is none)`,
		`external memory provider "../etc" failed in route: "../etc" is not a provider or a valid project name (letters, digits, _ . -)`,
		`external memory provider "builtin" failed in route: the builtin provider is not configured`,
	}
	if !reflect.DeepEqual(msgs, want) {
		t.Errorf("failures =\n%s\nwant\n%s", strings.Join(msgs, "\n"), strings.Join(want, "\n"))
	}
}

var writePolicyTests = []struct {
	provider, agentContext string
	allowed                bool
}{
	{"builtin", "primary", true},
	{"builtin", "unattended", true},
	{"builtin", "subagent", false},
	{"builtin", "cron", false},
	{"project:website", "cron", true},
	{"holographic", "subagent", true},
}

func TestDefaultWritePolicy(t *testing.T) {
	for _, tt := range writePolicyTests {
		ok, reasons, err := memory.DefaultWritePolicy{}.DecideWrite(context.Background(), memory.MemoryWriteInput{
			Operation: "add", Provider: tt.provider, AgentContext: tt.agentContext})
		if err != nil || ok != tt.allowed || (!ok && len(reasons) == 0) {
			t.Errorf("%s by %s: allowed = %v %v, %v", tt.provider, tt.agentContext, ok, reasons, err)
		}
	}
}

func TestFilterTools(t *testing.T) {
	bi := newSnap("builtin-ish", "")
	m := memory.NewExternalMemoryManager(memory.ManagerOptions{
		Builtin:  editorProvider{bi},
		Projects: func(name string) (memory.Provider, error) { return editorProvider{newSnap(name, "")}, nil },
	})
	var defs []tools.ToolDefinition
	for _, t := range m.Tools() {
		defs = append(defs, t.Definition)
	}
	defs = append([]tools.ToolDefinition{{Name: "get_current_time"}}, defs...)
	names := func(ds []tools.ToolDefinition) string {
		var n []string
		for _, d := range ds {
			n = append(n, d.Name)
		}
		return strings.Join(n, ",")
	}
	for _, tt := range []struct {
		enabled []string
		want    string
	}{
		{nil, "get_current_time"},
		{[]string{"builtin"}, "get_current_time,external_memory"},
		{[]string{"website"}, "get_current_time,multi_external_memory"},
		{[]string{"builtin", "project:website"}, "get_current_time,external_memory,multi_external_memory"},
	} {
		if got := names(m.FilterTools(defs, tt.enabled)); got != tt.want {
			t.Errorf("FilterTools(%v) = %s, want %s", tt.enabled, got, tt.want)
		}
	}
}

type editorProvider struct{ *snap }

func (editorProvider) Edit(context.Context, memory.Edit) (memory.EditResult, error) {
	return memory.EditResult{}, nil
}

// stubSummarizer fails on demand, for the loud-fallback rule.
type stubSummarizer struct{ err error }

func (s stubSummarizer) SummarizeHistory(context.Context, string, []llm.Message) (string, error) {
	return "model summary", s.err
}

func TestCompressorSummarizerFailureIsLoud(t *testing.T) {
	var hist []llm.Message
	for i := 0; i < 40; i++ {
		hist = append(hist, llm.Message{Role: llm.RoleUser, Content: strings.Repeat("question ", 30)},
			llm.Message{Role: llm.RoleAssistant, Content: strings.Repeat("answer ", 30)})
	}
	for _, tt := range []struct {
		err      error
		want     string
		failures int
	}{{nil, "model summary", 0}, {errors.New("model down"), "- user: question", 1}} {
		c := &memory.HistoryCompressor{ContextWindow: 3000, Budget: 0.5, Summarizer: stubSummarizer{tt.err}, SummarizerTimeout: time.Second}
		view, fails := c.View(context.Background(), memory.CompressInput{SessionID: "s", History: hist})
		if len(fails) != tt.failures || (tt.failures == 1 && fails[0].Provider != "summarizer") {
			t.Errorf("failures = %v", fails)
		}
		if memory.EstimateTokens(view) > c.BudgetTokens() || !strings.Contains(view[2].Content, tt.want) {
			t.Errorf("view: %d tokens, summary %.120q", memory.EstimateTokens(view), view[2].Content)
		}
	}
}
