package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/agent"
	"github.com/nagent/nagent/runtime/app"
	"github.com/nagent/nagent/runtime/config"
	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/runtime/gateway"
	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/llm/scripted"
)

func newApp(tb testing.TB, srv *scripted.Server, home string) *app.App {
	tb.Helper()
	cfg := config.Defaults()
	cfg.Home = home
	cfg.LLM.BaseURL = srv.URL()
	cfg.LLM.Model = "scripted-model"
	cfg.LLM.MaxAttempts = 1
	a, err := app.New(context.Background(), &cfg, app.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { a.Close() })
	return a
}

func text(conv gateway.Conversation, id, s string) gateway.Message {
	return gateway.Message{Conversation: conv, MessageID: id, Text: s}
}

func lastUser(req scripted.RecordedRequest) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == llm.RoleUser {
			return req.Messages[i].Content
		}
	}
	return ""
}

func TestConversationsMapToSessions(t *testing.T) {
	srv := scripted.Start()
	defer srv.Close()
	srv.SetResponder(scripted.Echo)
	home := t.TempDir()
	a := newApp(t, srv, home)
	ctx := context.Background()

	alice := gateway.Conversation{Platform: gateway.PlatformFeishu, ChatID: "oc_1", UserID: "alice"}
	bob := gateway.Conversation{Platform: gateway.PlatformFeishu, ChatID: "oc_1", UserID: "bob"}
	thread := gateway.Conversation{Platform: gateway.PlatformFeishu, ChatID: "oc_1", ThreadID: "t1", UserID: "alice"}

	first, err := a.Gateway.Handle(ctx, text(alice, "m1", "hello"), nil)
	if err != nil {
		t.Fatal(err)
	}
	again, err := a.Gateway.Handle(ctx, text(alice, "m2", "again"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if first.SessionID != again.SessionID {
		t.Errorf("one conversation got two sessions: %s, %s", first.SessionID, again.SessionID)
	}
	for _, other := range []gateway.Conversation{bob, thread} {
		r, err := a.Gateway.Handle(ctx, text(other, "m-"+other.UserID+other.ThreadID, "hi"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.SessionID == first.SessionID {
			t.Errorf("%+v shares a session with %+v", other, alice)
		}
	}
	sess, err := a.DB.GetSession(ctx, first.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if sess.Source != gateway.PlatformFeishu {
		t.Errorf("session source = %q, want feishu", sess.Source)
	}

	// The map outlives the process.
	a.Close()
	b := newApp(t, srv, home)
	r, err := b.Gateway.Handle(ctx, text(alice, "m3", "after restart"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.SessionID != first.SessionID {
		t.Errorf("after a restart the conversation moved to %s, want %s", r.SessionID, first.SessionID)
	}

	// Bind resumes a chosen session, or starts a new one.
	fresh, err := b.Gateway.Bind(ctx, alice, "")
	if err != nil || fresh == first.SessionID {
		t.Fatalf("Bind new = %q, %v", fresh, err)
	}
	if got, _ := b.Gateway.Session(ctx, alice); got != fresh {
		t.Errorf("Session after Bind = %q, want %q", got, fresh)
	}
}

func TestRedeliveryIsAnsweredOnce(t *testing.T) {
	srv := scripted.Start()
	defer srv.Close()
	srv.SetResponder(scripted.Echo)
	home := t.TempDir()
	a := newApp(t, srv, home)
	ctx := context.Background()
	conv := gateway.Conversation{Platform: gateway.PlatformFeishu, ChatID: "oc_2"}

	msg := gateway.Message{Conversation: conv, MessageID: "om_1", EventID: "ev_1", Text: "once"}
	if _, err := a.Gateway.Handle(ctx, msg, nil); err != nil {
		t.Fatal(err)
	}
	cases := map[string]gateway.Message{
		"same message and event":  msg,
		"same message, new event": {Conversation: conv, MessageID: "om_1", EventID: "ev_2", Text: "once"},
		"new message, same event": {Conversation: conv, MessageID: "om_2", EventID: "ev_1", Text: "once"},
	}
	for name, m := range cases {
		if _, err := a.Gateway.Handle(ctx, m, nil); !errors.Is(err, gateway.ErrDuplicate) {
			t.Errorf("%s: err = %v, want ErrDuplicate", name, err)
		}
	}
	a.Close()
	b := newApp(t, srv, home)
	if _, err := b.Gateway.Handle(ctx, msg, nil); !errors.Is(err, gateway.ErrDuplicate) {
		t.Errorf("redelivery after a restart: err = %v, want ErrDuplicate", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("the model was called %d times, want 1", n)
	}

	// Delivery records are kept for a while, then dropped.
	if err := b.Gateway.ForgetSeen(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Gateway.Handle(ctx, msg, nil); !errors.Is(err, gateway.ErrDuplicate) {
		t.Errorf("redelivery after forgetting older records: err = %v, want ErrDuplicate", err)
	}
	if err := b.Gateway.ForgetSeen(ctx, -time.Hour); err != nil { // everything is older than an hour from now
		t.Fatal(err)
	}
	if _, err := b.Gateway.Handle(ctx, msg, nil); err != nil {
		t.Errorf("a message whose record was dropped: err = %v, want it answered", err)
	}
}

func TestBurstIsAnsweredInOrder(t *testing.T) {
	srv := scripted.Start()
	defer srv.Close()
	// The first turn stays with the model until the whole burst has arrived.
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock()
	srv.SetResponder(func(req scripted.RecordedRequest) scripted.Reply {
		<-release
		return scripted.Echo(req)
	})
	a := newApp(t, srv, t.TempDir())
	conv := gateway.Conversation{Platform: gateway.PlatformFeishu, ChatID: "oc_burst"}

	var mu sync.Mutex
	var answered []string
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Add(1)
		ticket, err := a.Gateway.Submit(context.Background(), text(conv, fmt.Sprint("b", i), fmt.Sprint("msg ", i)), gateway.Handler{
			Done: func(r *agent.Result, err error) {
				defer wg.Done()
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				answered = append(answered, r.Content)
				mu.Unlock()
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if ticket.Ahead != i {
			t.Errorf("message %d: %d turns ahead, want %d", i, ticket.Ahead, i)
		}
	}
	unblock()
	wg.Wait()
	want := "echo: msg 0|echo: msg 1|echo: msg 2|echo: msg 3|echo: msg 4"
	if got := strings.Join(answered, "|"); got != want {
		t.Errorf("answers = %s\nwant      %s", got, want)
	}
	var asked []string
	for _, req := range srv.Requests() {
		asked = append(asked, lastUser(req))
	}
	if got := strings.Join(asked, "|"); got != "msg 0|msg 1|msg 2|msg 3|msg 4" {
		t.Errorf("the model saw %s", got)
	}
}

func TestQueueLimitAndValidation(t *testing.T) {
	srv := scripted.Start()
	defer srv.Close()
	release := make(chan struct{})
	srv.SetResponder(func(req scripted.RecordedRequest) scripted.Reply {
		<-release
		return scripted.Echo(req)
	})
	cfg := config.Defaults()
	cfg.Home = t.TempDir()
	cfg.LLM.BaseURL, cfg.LLM.Model = srv.URL(), "m"
	a, err := app.New(context.Background(), &cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	gw := gateway.New(a.Chat, a.DB, gateway.Options{MaxQueued: 2})
	conv := gateway.Conversation{Platform: gateway.PlatformCLI, ChatID: "tty1"}

	var wg sync.WaitGroup
	done := gateway.Handler{Done: func(*agent.Result, error) { wg.Done() }}
	submit := func(id string) error {
		wg.Add(1)
		_, err := gw.Submit(context.Background(), text(conv, id, "x"), done)
		if err != nil {
			wg.Done()
		}
		return err
	}
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock()
	if err := submit("running"); err != nil {
		t.Fatal(err)
	}
	for len(srv.Requests()) == 0 { // the first turn is with the model
		time.Sleep(5 * time.Millisecond)
	}
	for _, id := range []string{"waiting1", "waiting2"} {
		if err := submit(id); err != nil {
			t.Fatal(err)
		}
	}
	if err := submit("one too many"); errs.Code(err) != errs.EBUSY {
		t.Errorf("a third waiting message: err = %v, want busy", err)
	}
	unblock()
	wg.Wait()

	for name, m := range map[string]gateway.Message{
		"no platform": {Conversation: gateway.Conversation{ChatID: "c"}, Text: "x"},
		"no chat":     {Conversation: gateway.Conversation{Platform: "cli"}, Text: "x"},
		"empty":       {Conversation: conv},
	} {
		if _, err := gw.Submit(context.Background(), m, gateway.Handler{}); errs.Code(err) != errs.EINVALID {
			t.Errorf("%s: err = %v, want invalid", name, err)
		}
	}
}

func TestCancelWhileQueued(t *testing.T) {
	srv := scripted.Start()
	defer srv.Close()
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock()
	srv.SetResponder(func(req scripted.RecordedRequest) scripted.Reply {
		<-release // the first turn runs until the second was cancelled
		return scripted.Echo(req)
	})
	a := newApp(t, srv, t.TempDir())
	conv := gateway.Conversation{Platform: gateway.PlatformACP, ChatID: "s"}
	first := make(chan error, 1)
	go func() {
		_, err := a.Gateway.Handle(context.Background(), text(conv, "1", "first"), nil)
		first <- err
	}()
	for len(srv.Requests()) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	second := make(chan error, 1)
	ticket, err := a.Gateway.Submit(ctx, text(conv, "2", "second"), gateway.Handler{
		Done: func(_ *agent.Result, err error) { second <- err },
	})
	if err != nil || ticket.Ahead != 1 {
		t.Fatalf("Submit = %+v, %v; want it queued behind the running turn", ticket, err)
	}
	cancel() // while it waits
	unblock()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled while queued: err = %v", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("model calls = %d; the cancelled message must not run", n)
	}
}

// flaky fails its first runs, then stays up until stopped.
type flaky struct {
	mu    sync.Mutex
	fails int
	runs  int
	up    chan struct{}
}

func (f *flaky) Name() string { return "flaky" }

func (f *flaky) Run(ctx context.Context, up func()) error {
	f.mu.Lock()
	f.runs++
	fail := f.runs <= f.fails
	f.mu.Unlock()
	if fail {
		return errors.New("connection refused")
	}
	up()
	close(f.up)
	<-ctx.Done()
	return nil
}

func TestAdapterSupervision(t *testing.T) {
	srv := scripted.Start()
	defer srv.Close()
	a := newApp(t, srv, t.TempDir())
	gw := gateway.New(a.Chat, a.DB, gateway.Options{Backoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond})
	if err := gw.Ready(); err != nil {
		t.Errorf("no adapters: Ready = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &flaky{fails: 3, up: make(chan struct{})}
	gw.Start(ctx, f)
	select {
	case <-f.up:
	case <-time.After(10 * time.Second):
		t.Fatal("the adapter was never restarted into a connection")
	}
	h := gw.Health()
	if len(h) != 1 || h[0].State != gateway.StateUp || h[0].Restarts != 3 || h[0].LastError != "connection refused" {
		t.Errorf("health = %+v", h)
	}
	if err := gw.Ready(); err != nil {
		t.Errorf("Ready = %v", err)
	}
	cancel()
	gw.Wait()
	if h := gw.Health(); h[0].State != gateway.StateStopped {
		t.Errorf("after stop: %+v", h)
	}
	if err := gw.Ready(); err == nil || !strings.Contains(err.Error(), "flaky stopped") {
		t.Errorf("Ready after stop = %v", err)
	}
}
