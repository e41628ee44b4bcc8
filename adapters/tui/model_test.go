package tui_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/nagent/nagent/adapters/tui"
	"github.com/nagent/nagent/runtime/agent"
	"github.com/nagent/nagent/runtime/memory"
	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/store"
)

// fakeBackend is a Backend whose turns run a test-supplied function.
type fakeBackend struct {
	mu       sync.Mutex
	turn     func(ctx context.Context, t tui.Turn, emit agent.EmitFunc) (*agent.Result, error)
	turns    []tui.Turn
	bound    []string
	sessions []*store.Session
	history  map[string][]*store.Message
	calls    map[string][]*store.ToolCall
	nextID   int
	noModels bool // Models returns none
}

func (f *fakeBackend) Turn(ctx context.Context, t tui.Turn, emit agent.EmitFunc) (*agent.Result, error) {
	f.mu.Lock()
	f.turns = append(f.turns, t)
	fn := f.turn
	f.mu.Unlock()
	if fn == nil {
		return &agent.Result{SessionID: t.SessionID, Status: memory.StatusCompleted}, nil
	}
	return fn(ctx, t, emit)
}

func (f *fakeBackend) Bind(_ context.Context, id string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if id == "" {
		f.nextID++
		id = "sess_new" + string(rune('0'+f.nextID))
	}
	f.bound = append(f.bound, id)
	return id, nil
}

func (f *fakeBackend) Sessions(context.Context) ([]*store.Session, error) { return f.sessions, nil }

func (f *fakeBackend) History(_ context.Context, id string) ([]*store.Message, []*store.ToolCall, error) {
	return f.history[id], f.calls[id], nil
}

func (f *fakeBackend) Tools(context.Context, string) []tools.ToolDefinition {
	return []tools.ToolDefinition{{Name: "get_current_time", Description: "Returns the current time.\nMore.", RiskLevel: tools.RiskSafe, SourceType: tools.SourceBuiltin}}
}

func (f *fakeBackend) Memory(context.Context) string { return "memory.md: 2 lines\n  likes tea" }
func (f *fakeBackend) Policy() string                { return "revision abc123\nstatus   ok (revision abc123)" }
func (f *fakeBackend) Models() []string {
	if f.noModels {
		return nil
	}
	return []string{"model-a", "model-b"}
}

func (f *fakeBackend) lastTurn() tui.Turn {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.turns[len(f.turns)-1]
}

// key builds a key press: "enter", "esc", "ctrl+c", "ctrl+o" or one character.
func key(s string) tea.KeyPressMsg {
	switch s {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	}
	if c, ok := strings.CutPrefix(s, "ctrl+"); ok {
		return tea.KeyPressMsg{Code: rune(c[0]), Mod: tea.ModCtrl}
	}
	r := []rune(s)[0]
	return tea.KeyPressMsg{Code: r, Text: s}
}

type harness struct {
	tb testing.TB
	m  *tui.Model
	b  *fakeBackend
}

func newHarness(tb testing.TB, b *fakeBackend) *harness {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	m := tui.New(ctx, b, tui.Options{Session: "sess_start"})
	tb.Cleanup(func() {
		cancel()
		m.Update(key("ctrl+c"))
		m.Update(key("ctrl+c"))
		m.Wait()
	})
	h := &harness{tb: tb, m: m, b: b}
	h.send(tea.WindowSizeMsg{Width: 80, Height: 24})
	return h
}

func (h *harness) send(msg tea.Msg) tea.Cmd {
	_, cmd := h.m.Update(msg)
	return cmd
}

func (h *harness) press(keys ...string) tea.Cmd {
	var cmd tea.Cmd
	for _, k := range keys {
		cmd = h.send(key(k))
	}
	return cmd
}

// typeLine types s and presses Enter.
func (h *harness) typeLine(s string) tea.Cmd {
	for _, r := range s {
		h.send(key(string(r)))
	}
	return h.press("enter")
}

// pump feeds the turn's messages to the model until stop says so.
func (h *harness) pump(stop func(tea.Msg) bool) {
	h.tb.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case msg := <-h.m.Inbox():
			h.send(msg)
			if stop(msg) {
				return
			}
		case <-timeout:
			h.tb.Fatalf("no message from the turn in time; screen:\n%s", h.screen())
		}
	}
}

func isDone(msg tea.Msg) bool { return strings.HasSuffix(typeName(msg), "turnDoneMsg") }
func isConfirm(msg tea.Msg) bool {
	return strings.HasSuffix(typeName(msg), "confirmMsg")
}
func isEvent(msg tea.Msg) bool { return strings.HasSuffix(typeName(msg), "eventMsg") }

func typeName(v any) string { return fmt.Sprintf("%T", v) }

func (h *harness) screen() string { return ansi.Strip(h.m.View().Content) }

func (h *harness) want(subs ...string) {
	h.tb.Helper()
	s := h.screen()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			h.tb.Fatalf("screen lacks %q:\n%s", sub, s)
		}
	}
}

func (h *harness) wantNot(subs ...string) {
	h.tb.Helper()
	s := h.screen()
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			h.tb.Fatalf("screen has %q:\n%s", sub, s)
		}
	}
}

// gate is a turn that emits what the test sends it, until closed.
type gate struct {
	events chan agent.Event
	ctx    chan context.Context
}

func newGate() *gate {
	return &gate{events: make(chan agent.Event), ctx: make(chan context.Context, 1)}
}

func (g *gate) turn(ctx context.Context, t tui.Turn, emit agent.EmitFunc) (*agent.Result, error) {
	g.ctx <- ctx
	for {
		select {
		case e, ok := <-g.events:
			if !ok {
				return &agent.Result{SessionID: t.SessionID, Status: memory.StatusCompleted}, nil
			}
			emit(e)
		case <-ctx.Done():
			emit(agent.Event{Type: agent.EventRunFinished, Result: &agent.Result{Status: memory.StatusCancelled}})
			return &agent.Result{SessionID: t.SessionID, Status: memory.StatusCancelled}, ctx.Err()
		}
	}
}

// emit sends e to the turn and feeds the resulting message to the model.
func (h *harness) emit(g *gate, e agent.Event) {
	h.tb.Helper()
	go func() { g.events <- e }()
	h.pump(isEvent)
}

func TestStreaming(t *testing.T) {
	g := newGate()
	h := newHarness(t, &fakeBackend{turn: g.turn})
	h.typeLine("hello there")
	h.want("hello there", "running")
	h.emit(g, agent.Event{Type: agent.EventDelta, Content: "The answer is "})
	h.want("The answer is")
	h.emit(g, agent.Event{Type: agent.EventDelta, Content: "**forty-two**.\n\n- one\n- two"})
	h.want("**forty-two**") // plain while streaming
	h.emit(g, agent.Event{Type: agent.EventRunFinished, Result: &agent.Result{Status: memory.StatusCompleted, Content: "x"}})
	close(g.events)
	h.pump(isDone)
	h.want("forty-two", "• one", "idle")
	h.wantNot("**forty-two**") // rendered as Markdown once done
	if got := h.b.lastTurn(); got.Text != "hello there" || got.SessionID != "sess_start" || got.Confirmer == nil {
		t.Errorf("turn = %+v", got)
	}
}

func TestToolBlocks(t *testing.T) {
	g := newGate()
	h := newHarness(t, &fakeBackend{turn: g.turn})
	h.typeLine("what time is it")
	tool := func(typ, id, status, content string, ms int64) agent.Event {
		return agent.Event{Type: typ, Tool: &agent.ToolEvent{ID: id, Name: "get_current_time", Arguments: `{"tz":"UTC"}`, Status: status, Content: content, DurationMS: ms}}
	}
	h.emit(g, tool(agent.EventToolStarted, "c1", "", "", 0))
	h.want("▸ … tool get_current_time · running")
	h.emit(g, tool(agent.EventToolFinished, "c1", "success", `{"time":"12:00"}`, 12))
	h.want("▸ ✓ tool get_current_time · ok 12 ms")
	h.wantNot("args:", "result:")
	h.press("ctrl+o")
	h.want(`▾ ✓ tool get_current_time`, `args: {"tz":"UTC"}`, `result: {"time":"12:00"}`)
	h.press("ctrl+o")
	h.emit(g, tool(agent.EventToolStarted, "c2", "", "", 0))
	h.emit(g, tool(agent.EventToolFinished, "c2", "denied", "call to get_current_time denied: the user rejected this call", 1))
	h.want("⊘ tool get_current_time ·  DENIED  the user rejected this call")
	h.emit(g, tool(agent.EventToolStarted, "c3", "", "", 0))
	h.emit(g, tool(agent.EventToolFinished, "c3", "error", "boom", 5))
	h.want("✗ tool get_current_time · error 5 ms")
	h.emit(g, tool(agent.EventToolStarted, "c4", "", "", 0))
	h.press("ctrl+c") // a running tool block ends as cancelled
	h.pump(isDone)
	h.want("✗ tool get_current_time · cancelled", "cancelled")
}

// confirmTurn asks the confirmer once per turn and reports the answer.
func confirmTurn(answers chan<- bool) func(context.Context, tui.Turn, agent.EmitFunc) (*agent.Result, error) {
	return func(ctx context.Context, t tui.Turn, emit agent.EmitFunc) (*agent.Result, error) {
		ok, _ := t.Confirmer.Confirm(ctx, tools.ToolCallRequest{ID: "c1", Name: "get_current_time", Arguments: "{}"},
			tools.ToolDefinition{Name: "get_current_time"}, []string{"test policy"})
		answers <- ok
		return &agent.Result{SessionID: t.SessionID, Status: memory.StatusCompleted}, ctx.Err()
	}
}

var confirmTests = []struct {
	name string
	keys []string
	want bool
}{
	{"EnterDenies", []string{"enter"}, false},
	{"NDenies", []string{"n"}, false},
	{"EscDenies", []string{"esc"}, false},
	{"OtherKeysWaitThenEnterDenies", []string{"x", " ", "enter"}, false},
	{"YAllowsOnce", []string{"y"}, true},
	{"AAllowsAlways", []string{"a"}, true},
	{"CtrlCDeniesAndCancels", []string{"ctrl+c"}, false},
}

func TestConfirm(t *testing.T) {
	for _, tc := range confirmTests {
		t.Run(tc.name, func(t *testing.T) {
			answers := make(chan bool, 1)
			h := newHarness(t, &fakeBackend{turn: confirmTurn(answers)})
			h.typeLine("time please")
			h.pump(isConfirm)
			h.want("Allow tool call get_current_time?", "[y] allow once", "[n/Enter/Esc] deny", "why: test policy", "waiting for you")
			lines := strings.Split(h.screen(), "\n")
			if len(lines) != 24 {
				t.Errorf("screen has %d lines with the prompt, want 24", len(lines))
			}
			for i, l := range lines {
				if w := ansi.StringWidth(l); w > 80 {
					t.Errorf("line %d is %d cells wide with the prompt: %q", i, w, l)
				}
			}
			for i, k := range tc.keys {
				h.press(k)
				if i < len(tc.keys)-1 {
					h.want("Allow tool call") // still asking
				}
			}
			h.pump(isDone)
			if got := <-answers; got != tc.want {
				t.Fatalf("approved = %v, want %v", got, tc.want)
			}
			h.wantNot("Allow tool call")
			if tc.name == "AAllowsAlways" { // the next call is not asked again
				h.typeLine("again")
				h.pump(isDone)
				if !<-answers {
					t.Error("allow always did not hold for the next call")
				}
				h.typeLine("/new") // a new session asks again
				h.typeLine("third")
				h.pump(isConfirm)
				h.press("enter")
				h.pump(isDone)
				if <-answers {
					t.Error("allow always survived /new")
				}
			}
		})
	}
}

func TestCtrlC(t *testing.T) {
	t.Run("RunningCancelsThenQuits", func(t *testing.T) {
		g := newGate()
		h := newHarness(t, &fakeBackend{turn: g.turn})
		h.typeLine("long job")
		ctx := <-g.ctx
		if cmd := h.press("ctrl+c"); cmd != nil {
			t.Fatal("the first Ctrl-C quit instead of cancelling")
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the turn's context was not cancelled")
		}
		h.want("Ctrl-C again to quit")
		cmd := h.press("ctrl+c")
		if cmd == nil {
			t.Fatal("the second Ctrl-C did not quit")
		}
		if _, ok := cmd().(tea.QuitMsg); !ok {
			t.Fatal("the second Ctrl-C did not return tea.Quit")
		}
	})
	t.Run("CancelledTurnThenIdleQuits", func(t *testing.T) {
		g := newGate()
		h := newHarness(t, &fakeBackend{turn: g.turn})
		h.typeLine("long job")
		<-g.ctx
		h.press("ctrl+c")
		h.pump(isDone)
		h.want("cancelled", "idle")
		cmd := h.press("ctrl+c")
		if cmd == nil {
			t.Fatal("Ctrl-C when idle did not quit")
		}
	})
	t.Run("IdleQuits", func(t *testing.T) {
		h := newHarness(t, &fakeBackend{})
		if cmd := h.press("ctrl+c"); cmd == nil {
			t.Fatal("Ctrl-C when idle did not quit")
		}
	})
	t.Run("CancelCommand", func(t *testing.T) {
		g := newGate()
		h := newHarness(t, &fakeBackend{turn: g.turn})
		h.typeLine("/cancel")
		h.want("no turn is running")
		h.typeLine("long job")
		ctx := <-g.ctx
		h.typeLine("/cancel")
		<-ctx.Done()
		h.pump(isDone)
		h.want("cancelled")
	})
}

func TestSlashCommands(t *testing.T) {
	now := time.Date(2026, 12, 2, 16, 40, 0, 0, time.UTC)
	b := &fakeBackend{
		sessions: []*store.Session{
			{ID: "sess_start", Title: "Current talk", Source: "cli", UpdatedAt: now},
			{ID: "sess_old", Title: "Old talk about clocks", Source: "acp", UpdatedAt: now.Add(-time.Hour)},
		},
		history: map[string][]*store.Message{"sess_old": {
			{Role: "user", Content: "what time was it"},
			{Role: "assistant", Content: "", ToolCalls: []byte(`[{"id":"c9"}]`)},
			{Role: "tool", ToolCallID: "c9", Name: "get_current_time", Content: "12:00"},
			{Role: "assistant", Content: "It was *noon*."},
		}},
		calls: map[string][]*store.ToolCall{"sess_old": {{ID: "c9", Name: "get_current_time", Status: "success", DurationMS: 7}}},
	}
	h := newHarness(t, b)
	for _, tc := range []struct{ line, want string }{
		{"/help", "/sessions   resume a stored session"},
		{"/tools", "get_current_time  [builtin, safe]  Returns the current time."},
		{"/memory", "likes tea"},
		{"/policy", "revision abc123"},
		{"/bogus", "unknown command /bogus"},
	} {
		h.typeLine(tc.line)
		h.want(tc.want)
	}

	h.typeLine("/sessions")
	h.want("Sessions · Enter resume", "> * Current talk · cli ·", "Old talk about clocks · acp ·")
	h.press("down", "enter")
	h.want("what time was it", "✓ tool get_current_time · ok 7 ms", "It was noon.", "session sess_old")
	if got := b.bound[len(b.bound)-1]; got != "sess_old" {
		t.Errorf("bound %q, want sess_old", got)
	}
	h.typeLine("/sessions")
	h.press("esc")
	h.want("session sess_old")

	h.typeLine("/model")
	h.want("Models · Enter pick", "model-a (configured) *", "model-b")
	h.press("down", "enter")
	h.want("model model-b")
	h.typeLine("hi")
	h.pump(isDone)
	if got := b.lastTurn(); got.Model != "model-b" || got.SessionID != "sess_old" {
		t.Errorf("turn = %+v, want model-b in sess_old", got)
	}
	h.typeLine("/model")
	h.press("up", "enter")
	h.typeLine("hi")
	h.pump(isDone)
	if got := b.lastTurn(); got.Model != "" {
		t.Errorf("model = %q after picking the configured one, want the default", got.Model)
	}

	h.typeLine("/new")
	h.want("new session", "session sess_new1")
	h.wantNot("what time was it")
	h.typeLine("hi")
	h.pump(isDone)
	if got := b.lastTurn(); got.SessionID != "sess_new1" {
		t.Errorf("turn session = %q after /new", got.SessionID)
	}
	if cmd := h.typeLine("/quit"); cmd == nil {
		t.Error("/quit did not quit")
	}
}

func TestEmptyPickerCloses(t *testing.T) {
	h := newHarness(t, &fakeBackend{noModels: true})
	h.typeLine("/model")
	h.want("Models · Enter pick")
	h.press("enter")
	h.wantNot("Models · Enter pick")
	h.want("idle")
}

func TestTurnError(t *testing.T) {
	h := newHarness(t, &fakeBackend{turn: func(context.Context, tui.Turn, agent.EmitFunc) (*agent.Result, error) {
		return nil, errors.New("gateway: 16 messages are already waiting")
	}})
	h.typeLine("hi")
	h.pump(isDone)
	h.want("✗ gateway: 16 messages are already waiting", "idle")
}

func TestResize(t *testing.T) {
	g := newGate()
	h := newHarness(t, &fakeBackend{turn: g.turn})
	h.typeLine(strings.Repeat("a long message that must wrap ", 10))
	h.emit(g, agent.Event{Type: agent.EventDelta, Content: strings.Repeat("streamed words wrap too ", 40)})
	for _, size := range []struct{ w, h int }{{80, 24}, {40, 10}, {120, 40}, {80, 24}} {
		h.send(tea.WindowSizeMsg{Width: size.w, Height: size.h})
		lines := strings.Split(h.screen(), "\n")
		if len(lines) != size.h {
			t.Errorf("%dx%d: %d lines", size.w, size.h, len(lines))
		}
		for i, l := range lines {
			if w := ansi.StringWidth(l); w > size.w {
				t.Errorf("%dx%d: line %d is %d cells wide: %q", size.w, size.h, i, w, l)
			}
		}
	}
	h.want("N-Agent · session sess_start", "streamed words wrap too")
	close(g.events)
	h.pump(isDone)
}

func BenchmarkStartup(b *testing.B) {
	fb := &fakeBackend{}
	for b.Loop() {
		m := tui.New(context.Background(), fb, tui.Options{Session: "sess_bench"})
		m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
		if v := m.View(); v.Content == "" {
			b.Fatal("empty first frame")
		}
	}
}
