package feishu_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nagent/nagent/adapters/feishu"
	"github.com/nagent/nagent/adapters/feishu/feishutest"
	"github.com/nagent/nagent/runtime/app"
	"github.com/nagent/nagent/runtime/config"
	"github.com/nagent/nagent/runtime/gateway"
	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/llm/scripted"
	"github.com/nagent/nagent/runtime/scheduler"
)

// The adapter is the scheduler's Feishu delivery and a gateway adapter.
var (
	_ scheduler.ChatSender = (*feishu.Adapter)(nil)
	_ gateway.Adapter      = (*feishu.Adapter)(nil)
)

const (
	appID     = "cli_fake_app"
	appSecret = "fake-secret-value"
	botID     = "ou_bot"
	alice     = "ou_alice"
	bob       = "ou_bob"
	waitLong  = 20 * time.Second
)

// env is one wired runtime talking to a fake Feishu platform.
type env struct {
	app     *app.App
	model   *scripted.Server
	fake    *feishutest.Platform
	adapter *feishu.Adapter
	cancel  context.CancelFunc
}

type setup struct {
	opts feishu.Options
	// secret, when set, is the secret the adapter uses instead of the
	// fake's, and start does not wait for the connection.
	secret string
	policy string // a Rego file for $NAGENT_HOME/policies
	ping   int
}

func start(tb testing.TB, s setup, replies ...scripted.Reply) *env {
	tb.Helper()
	model := scripted.Start(replies...)
	tb.Cleanup(model.Close)
	cfg := config.Defaults()
	cfg.Home = tb.TempDir()
	cfg.LLM.BaseURL = model.URL()
	cfg.LLM.Model = "scripted-model"
	cfg.LLM.MaxAttempts = 1
	if s.policy != "" {
		dir := filepath.Join(cfg.Home, "policies")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "confirm_clock.rego"), []byte(s.policy), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	a, err := app.New(context.Background(), &cfg, app.Options{Log: log})
	if err != nil {
		tb.Fatal(err)
	}
	fake := feishutest.Start(appID, appSecret, botID)
	if s.ping > 0 {
		fake.PingInterval = s.ping
	}
	opts := s.opts
	opts.AppID, opts.AppSecret, opts.Domain, opts.Log = appID, appSecret, fake.URL(), log
	if s.secret != "" {
		opts.AppSecret = s.secret
	}
	if opts.UpdateInterval == 0 {
		opts.UpdateInterval = 50 * time.Millisecond
	}
	ad, err := feishu.New(a.Gateway, opts)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a.Gateway.Start(ctx, ad)
	e := &env{app: a, model: model, fake: fake, adapter: ad, cancel: cancel}
	tb.Cleanup(func() {
		cancel()
		a.Gateway.Wait()
		fake.Close()
		a.Close()
	})
	if s.secret == "" {
		e.waitState(tb, gateway.StateUp)
	}
	return e
}

// waitState polls the gateway's health until the feishu adapter is in state.
func (e *env) waitState(tb testing.TB, state string) gateway.AdapterHealth {
	tb.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		for _, h := range e.app.Gateway.Health() {
			if h.Name == "feishu" && h.State == state {
				return h
			}
		}
		if time.Now().After(deadline) {
			tb.Fatalf("feishu adapter never reached %q: %+v", state, e.app.Gateway.Health())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// push sends a message event and waits for its ack, which must come fast
// (Feishu redelivers what is not acked in about 3 s).
func (e *env) push(tb testing.TB, frameID string, m feishutest.Message) {
	tb.Helper()
	e.waitConnected(tb)
	sent := time.Now()
	if err := e.fake.Push(frameID, feishutest.MessageEvent(appID, m), 1); err != nil {
		tb.Fatal(err)
	}
	ack, ok := e.fake.WaitAck(frameID, waitLong)
	if !ok {
		tb.Fatalf("event %s was never acked", frameID)
	}
	if ack.Code != 200 {
		tb.Fatalf("event %s acked with %d", frameID, ack.Code)
	}
	if d := ack.At.Sub(sent); d > 2*time.Second {
		tb.Errorf("event %s acked after %v; Feishu would redeliver it", frameID, d)
	}
}

// waitConnected waits until the fake has accepted the client's websocket
// (the client may report ready a moment before the server side does).
func (e *env) waitConnected(tb testing.TB) {
	tb.Helper()
	if !e.fake.Wait(waitLong, func() bool { return e.fake.ConnectedLocked() > 0 }) {
		tb.Fatal("the client is not connected to the fake platform")
	}
}

// waitCalls waits until n API calls satisfy match, and returns them.
func (e *env) waitCalls(tb testing.TB, n int, match func(feishutest.Call) bool) []feishutest.Call {
	tb.Helper()
	var got []feishutest.Call
	ok := e.fake.Wait(waitLong, func() bool {
		got = got[:0]
		for _, c := range e.fake.CallsLocked() {
			if match(c) {
				got = append(got, c)
			}
		}
		return len(got) >= n
	})
	if !ok {
		tb.Fatalf("wanted %d matching API calls, got %d: %+v", n, len(got), e.fake.Calls())
	}
	return got
}

func replies(c feishutest.Call) bool { return c.Kind == "reply" }

func textOf(tb testing.TB, c feishutest.Call) string {
	tb.Helper()
	var t struct {
		Text string `json:"text"`
	}
	if c.MsgType != "text" || json.Unmarshal([]byte(c.Content), &t) != nil {
		tb.Fatalf("not a text message: %+v", c)
	}
	return t.Text
}

// lastUser returns the last user message of the model's request i.
func lastUser(tb testing.TB, model *scripted.Server, i int) string {
	tb.Helper()
	reqs := model.Requests()
	if i >= len(reqs) {
		tb.Fatalf("the model got %d requests, want more than %d", len(reqs), i)
	}
	msgs := reqs[i].Messages
	for j := len(msgs) - 1; j >= 0; j-- {
		if msgs[j].Role == llm.RoleUser {
			return msgs[j].Content
		}
	}
	return ""
}

func TestP2PRoundTrip(t *testing.T) {
	e := start(t, setup{}, scripted.Reply{Content: "Hello from N-Agent."})
	e.fake.RateLimitNext("reply", 1) // the first attempt is rate limited, and retried
	e.push(t, "f1", feishutest.Message{MessageID: "om_1", ChatID: "oc_p2p", Sender: alice, Text: "hi there"})
	got := e.waitCalls(t, 1, replies)
	if got[0].MessageID != "om_1" || textOf(t, got[0]) != "Hello from N-Agent." {
		t.Fatalf("reply = %+v", got[0])
	}
	if u := lastUser(t, e.model, 0); u != "hi there" {
		t.Errorf("the model read %q", u)
	}
	// The conversation is bound to a feishu session.
	sid, err := e.app.Gateway.Session(context.Background(), gateway.Conversation{Platform: "feishu", ChatID: "oc_p2p", UserID: alice})
	if err != nil || sid == "" {
		t.Fatalf("Session = %q, %v", sid, err)
	}
}

func TestGroupMention(t *testing.T) {
	e := start(t, setup{}, scripted.Reply{Content: "group answer"}, scripted.Reply{Content: "post answer"})
	t.Run("WithoutMention", func(t *testing.T) {
		e.push(t, "g1", feishutest.Message{MessageID: "om_g1", ChatID: "oc_group", ChatType: "group", Sender: alice,
			Text: "@_user_1 not for the bot", Mentions: []feishutest.Mention{{Key: "@_user_1", OpenID: bob, Name: "Bob"}}})
	})
	t.Run("WithMention", func(t *testing.T) {
		e.push(t, "g2", feishutest.Message{MessageID: "om_g2", ChatID: "oc_group", ChatType: "group", Sender: alice,
			Text: "@_user_1 what does @_user_2 think?", Mentions: []feishutest.Mention{
				{Key: "@_user_1", OpenID: botID, Name: "N-Agent"}, {Key: "@_user_2", OpenID: bob, Name: "Bob"}}})
		got := e.waitCalls(t, 1, replies)
		if got[0].MessageID != "om_g2" || textOf(t, got[0]) != "group answer" {
			t.Fatalf("reply = %+v", got[0])
		}
		if u := lastUser(t, e.model, 0); u != "what does @Bob think?" {
			t.Errorf("the model read %q; want the bot's mention stripped", u)
		}
	})
	t.Run("PostWithMention", func(t *testing.T) {
		post := `{"title":"Plan","content":[[{"tag":"at","user_id":"@_user_1","user_name":"N-Agent"},{"tag":"text","text":" review "},{"tag":"a","text":"this","href":"https://example.com"}],[{"tag":"text","text":"second line"}]]}`
		e.push(t, "g3", feishutest.Message{MessageID: "om_g3", ChatID: "oc_group", ChatType: "group", Sender: alice,
			MsgType: "post", Content: post, Mentions: []feishutest.Mention{{Key: "@_user_1", OpenID: botID, Name: "N-Agent"}}})
		got := e.waitCalls(t, 2, replies)
		if got[1].MessageID != "om_g3" || textOf(t, got[1]) != "post answer" {
			t.Fatalf("reply = %+v", got[1])
		}
		if u, want := lastUser(t, e.model, 1), "Plan\nreview this (https://example.com)\nsecond line"; u != want {
			t.Errorf("the model read %q, want %q", u, want)
		}
	})
	t.Run("ImageIgnored", func(t *testing.T) {
		e.push(t, "g4", feishutest.Message{MessageID: "om_g4", ChatID: "oc_p2p", Sender: alice, MsgType: "image", Content: `{"image_key":"img_x"}`})
	})
	if n := len(e.model.Requests()); n != 2 {
		t.Errorf("the model got %d requests; the unmentioned group message and the image must not reach it", n)
	}
}

func TestRedeliveryAnsweredOnce(t *testing.T) {
	e := start(t, setup{}, scripted.Reply{Content: "only once", Delay: 200 * time.Millisecond})
	m := feishutest.Message{MessageID: "om_r", EventID: "ev_r", ChatID: "oc_p2p", Sender: alice, Text: "answer me once"}
	e.push(t, "r1", m)
	e.push(t, "r2", m) // redelivered while the turn runs
	e.waitCalls(t, 1, replies)
	e.push(t, "r3", m) // and after the answer
	m.EventID = "ev_r_other"
	e.push(t, "r4", m) // same message, new event id
	m.MessageID, m.EventID = "om_other", "ev_r"
	e.push(t, "r5", m) // same event id, new message id

	// Anything answered twice would have been by now: a later message is
	// answered, and the turns of one chat run in order.
	e.model.Enqueue(scripted.Reply{Content: "next"})
	e.push(t, "r6", feishutest.Message{MessageID: "om_next", ChatID: "oc_p2p", Sender: alice, Text: "next"})
	got := e.waitCalls(t, 2, replies)
	if got[0].MessageID != "om_r" || got[1].MessageID != "om_next" {
		t.Fatalf("replies = %+v", got)
	}
	if n := len(e.fake.Calls()); n != 2 {
		t.Errorf("%d API calls, want 2: %+v", n, e.fake.Calls())
	}
	if n := len(e.model.Requests()); n != 2 {
		t.Errorf("the model got %d requests, want 2", n)
	}
}

func TestBurstStaysOrdered(t *testing.T) {
	base := time.Now()
	burst := func(order []int) []feishutest.Message {
		var ms []feishutest.Message
		for _, i := range order {
			ms = append(ms, feishutest.Message{MessageID: fmt.Sprintf("om_b%d", i), ChatID: "oc_burst", Sender: alice,
				Text: fmt.Sprintf("message %d", i), CreateTime: base.Add(time.Duration(i) * time.Millisecond)})
		}
		return ms
	}
	for _, tc := range []struct {
		name  string
		order []int
	}{
		{"InOrder", []int{1, 2, 3, 4, 5}},
		// The platform may deliver a burst out of order; create_time puts
		// it back within the order window.
		{"DeliveredOutOfOrder", []int{3, 1, 5, 2, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := start(t, setup{opts: feishu.Options{OrderWindow: 300 * time.Millisecond}})
			e.model.SetResponder(func(req scripted.RecordedRequest) scripted.Reply {
				r := scripted.Echo(req)
				r.Delay = 30 * time.Millisecond
				return r
			})
			// Back to back, without waiting for acks, as Feishu sends them.
			e.waitConnected(t)
			for k, m := range burst(tc.order) {
				if err := e.fake.Push(fmt.Sprintf("b%d", k), feishutest.MessageEvent(appID, m), 1); err != nil {
					t.Fatal(err)
				}
			}
			for k := range tc.order {
				if ack, ok := e.fake.WaitAck(fmt.Sprintf("b%d", k), waitLong); !ok || ack.Code != 200 {
					t.Fatalf("frame %d: ack %+v, %v", k, ack, ok)
				}
			}
			got := e.waitCalls(t, 5, replies)
			for i, c := range got {
				want := fmt.Sprintf("om_b%d", i+1)
				if c.MessageID != want || textOf(t, c) != fmt.Sprintf("echo: message %d", i+1) {
					t.Errorf("reply %d = %s %q, want an answer to %s", i, c.MessageID, c.Content, want)
				}
			}
			for i := 0; i < 5; i++ {
				if u := lastUser(t, e.model, i); u != fmt.Sprintf("message %d", i+1) {
					t.Errorf("model request %d read %q", i, u)
				}
			}
		})
	}
}

func TestStreamingCard(t *testing.T) {
	long := strings.Repeat("A long streamed answer. ", 20)
	e := start(t, setup{opts: feishu.Options{StreamAfter: 30 * time.Millisecond, UpdateInterval: 100 * time.Millisecond}},
		scripted.Reply{Content: long, ChunkSize: 8, ChunkDelay: 15 * time.Millisecond})
	e.push(t, "s1", feishutest.Message{MessageID: "om_s", ChatID: "oc_p2p", Sender: alice, Text: "tell me a lot"})
	final := strings.TrimSpace(long)
	e.waitCalls(t, 1, func(c feishutest.Call) bool {
		return c.Kind == "patch" && strings.Contains(c.Content, final) && !strings.Contains(c.Content, "Writing")
	})
	calls := e.fake.Calls()
	if calls[0].Kind != "reply" || calls[0].MsgType != "interactive" || calls[0].MessageID != "om_s" {
		t.Fatalf("first call = %+v, want a card reply", calls[0])
	}
	card := calls[0].Result
	var patches []feishutest.Call
	for _, c := range calls[1:] {
		if c.Kind != "patch" || c.MessageID != card {
			t.Fatalf("unexpected call %+v", c)
		}
		patches = append(patches, c)
	}
	if len(patches) < 2 {
		t.Fatalf("%d patches, want streamed updates and a final one", len(patches))
	}
	for i := 1; i < len(patches); i++ {
		if gap := patches[i].At.Sub(patches[i-1].At); gap < 90*time.Millisecond {
			t.Errorf("patches %d and %d are %v apart; the update interval is 100ms", i-1, i, gap)
		}
	}
}

func TestErrorInPlainWords(t *testing.T) {
	e := start(t, setup{}, scripted.Reply{Status: 500, ErrorMessage: "upstream exploded at db.go:42"})
	e.push(t, "x1", feishutest.Message{MessageID: "om_x", ChatID: "oc_p2p", Sender: alice, Text: "hello?"})
	got := e.waitCalls(t, 1, replies)
	text := textOf(t, got[0])
	if !strings.Contains(text, "language model is not answering") || strings.Contains(text, "500") || strings.Contains(text, "db.go") {
		t.Fatalf("error reply = %q", text)
	}
}

const confirmPolicy = `package nagent.tools

confirm contains "reading the clock needs approval in this test" if input.tool.name == "get_current_time"
`

// confirmID returns the confirmation id of an approval card.
func confirmID(tb testing.TB, c feishutest.Call) string {
	tb.Helper()
	i := strings.Index(c.Content, `"nagent_confirm":"`)
	if c.MsgType != "interactive" || i < 0 {
		tb.Fatalf("not an approval card: %+v", c)
	}
	rest := c.Content[i+len(`"nagent_confirm":"`):]
	return rest[:strings.Index(rest, `"`)]
}

// click presses a card button as operator and returns the callback's answer.
func (e *env) click(tb testing.TB, frameID, operator, cardID, id, choice string) string {
	tb.Helper()
	e.waitConnected(tb)
	ev := feishutest.CardActionEvent(appID, "ev_"+frameID, operator, cardID, map[string]any{"nagent_confirm": id, "choice": choice})
	if err := e.fake.Push(frameID, ev, 1); err != nil {
		tb.Fatal(err)
	}
	ack, ok := e.fake.WaitAck(frameID, waitLong)
	if !ok || ack.Code != 200 {
		tb.Fatalf("card action %s: ack %+v, %v", frameID, ack, ok)
	}
	return string(ack.Data)
}

func toolResult(tb testing.TB, model *scripted.Server, i int) string {
	tb.Helper()
	for _, m := range model.Requests()[i].Messages {
		if m.Role == llm.RoleTool {
			return m.Content
		}
	}
	tb.Fatalf("model request %d has no tool message", i)
	return ""
}

func TestCardConfirmation(t *testing.T) {
	call := scripted.Reply{ToolCalls: []llm.ToolCall{{Name: "get_current_time", Arguments: `{}`}}}
	t.Run("AllowByStarter", func(t *testing.T) {
		e := start(t, setup{policy: confirmPolicy}, call, scripted.Reply{Content: "It is noon."})
		e.push(t, "c1", feishutest.Message{MessageID: "om_c", ChatID: "oc_group", ChatType: "group", Sender: alice,
			Text: "@_user_1 what time is it?", Mentions: []feishutest.Mention{{Key: "@_user_1", OpenID: botID, Name: "N-Agent"}}})
		card := e.waitCalls(t, 1, replies)[0]
		id := confirmID(t, card)
		if !strings.Contains(card.Content, "get_current_time") || !strings.Contains(card.Content, "Allow") {
			t.Fatalf("approval card = %s", card.Content)
		}
		if got := e.click(t, "c2", bob, card.Result, id, "allow"); !strings.Contains(got, "only the person who asked") {
			t.Fatalf("another user's click answered %s", got)
		}
		got := e.click(t, "c3", alice, card.Result, id, "allow")
		if !strings.Contains(got, "Allowed") || !strings.Contains(got, `"card"`) {
			t.Fatalf("the starter's click answered %s", got)
		}
		answer := e.waitCalls(t, 2, replies)[1]
		if textOf(t, answer) != "It is noon." {
			t.Fatalf("answer = %+v", answer)
		}
		if r := toolResult(t, e.model, 1); strings.Contains(r, "denied") || !strings.Contains(r, "now") {
			t.Errorf("the tool result the model saw = %q", r)
		}
		if got := e.click(t, "c4", alice, card.Result, id, "deny"); !strings.Contains(got, "no longer waiting") {
			t.Errorf("a late click answered %s", got)
		}
	})
	t.Run("DenyByStarter", func(t *testing.T) {
		e := start(t, setup{policy: confirmPolicy}, call, scripted.Reply{Content: "Not allowed, then."})
		e.push(t, "d1", feishutest.Message{MessageID: "om_d", ChatID: "oc_p2p", Sender: alice, Text: "time?"})
		card := e.waitCalls(t, 1, replies)[0]
		if got := e.click(t, "d2", alice, card.Result, confirmID(t, card), "deny"); !strings.Contains(got, "Denied") {
			t.Fatalf("deny answered %s", got)
		}
		e.waitCalls(t, 2, replies)
		if r := toolResult(t, e.model, 1); !strings.Contains(r, "rejected") {
			t.Errorf("the tool result the model saw = %q", r)
		}
	})
	t.Run("TimeoutDenies", func(t *testing.T) {
		e := start(t, setup{policy: confirmPolicy, opts: feishu.Options{ConfirmTimeout: 300 * time.Millisecond}},
			call, scripted.Reply{Content: "No answer, so I did not look."})
		e.push(t, "t1", feishutest.Message{MessageID: "om_t", ChatID: "oc_p2p", Sender: alice, Text: "time?"})
		card := e.waitCalls(t, 1, replies)[0]
		e.waitCalls(t, 1, func(c feishutest.Call) bool {
			return c.Kind == "patch" && c.MessageID == card.Result && strings.Contains(c.Content, "no answer in time")
		})
		if answer := e.waitCalls(t, 2, replies)[1]; textOf(t, answer) != "No answer, so I did not look." {
			t.Fatalf("answer = %+v", answer)
		}
		if r := toolResult(t, e.model, 1); !strings.Contains(r, "rejected") {
			t.Errorf("the tool result the model saw = %q", r)
		}
	})
}

func TestReconnect(t *testing.T) {
	e := start(t, setup{ping: 1}, scripted.Reply{Content: "still here"})
	if !e.fake.Wait(waitLong, func() bool { return true }) || !waitFor(func() bool { return e.fake.Pings() >= 1 }) {
		t.Fatal("the client never pinged")
	}
	e.fake.Refuse(true)
	e.fake.DropConnections()
	h := e.waitState(t, gateway.StateReconnecting)
	if h.Restarts < 1 || h.LastError == "" {
		t.Errorf("health while reconnecting = %+v", h)
	}
	if err := e.app.Gateway.Ready(); err == nil || strings.Contains(err.Error(), appSecret) {
		t.Errorf("Ready() = %v", err)
	}
	e.fake.Refuse(false)
	e.waitState(t, gateway.StateUp)
	if err := e.app.Gateway.Ready(); err != nil {
		t.Errorf("Ready() after reconnecting = %v", err)
	}
	if n := e.fake.Connects(); n < 2 {
		t.Errorf("%d connections, want a new one", n)
	}
	e.push(t, "n1", feishutest.Message{MessageID: "om_n", ChatID: "oc_p2p", Sender: alice, Text: "are you there?"})
	if got := e.waitCalls(t, 1, replies); textOf(t, got[0]) != "still here" {
		t.Fatalf("reply = %+v", got[0])
	}
}

func waitFor(cond func() bool) bool {
	deadline := time.Now().Add(waitLong)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

func TestSendText(t *testing.T) {
	e := start(t, setup{})
	if err := e.adapter.SendText(context.Background(), "oc_sched", "daily report"); err != nil {
		t.Fatal(err)
	}
	got := e.waitCalls(t, 1, func(c feishutest.Call) bool { return c.Kind == "create" })
	if got[0].MessageID != "oc_sched" || textOf(t, got[0]) != "daily report" {
		t.Fatalf("create = %+v", got[0])
	}
	e.fake.RateLimitNext("create", 1)
	if err := e.adapter.SendText(context.Background(), "oc_sched", "again"); err == nil {
		t.Fatal("a refused send reported success")
	}
}

func TestNewRequiresCredentials(t *testing.T) {
	if _, err := feishu.New(nil, feishu.Options{AppID: "cli_x"}); err == nil || !strings.Contains(err.Error(), "NAGENT_FEISHU_APP_SECRET") {
		t.Fatalf("New without a secret = %v", err)
	}
}

func TestWrongSecretIsReported(t *testing.T) {
	const wrong = "wrong-secret-should-never-show"
	e := start(t, setup{secret: wrong})
	h := e.waitState(t, gateway.StateReconnecting)
	if !strings.Contains(h.LastError, "feishu.app_secret") || strings.Contains(h.LastError, wrong) {
		t.Errorf("LastError = %q", h.LastError)
	}
	if e.fake.Connects() != 0 {
		t.Errorf("connected with a wrong secret")
	}
}
