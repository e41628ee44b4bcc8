package scheduler_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/nagent/nagent/runtime/llm/scripted"
	"github.com/nagent/nagent/runtime/scheduler"
	"github.com/nagent/nagent/store"
)

// receiver is a webhook endpoint that fails its first failFirst requests
// with status failWith.
type receiver struct {
	srv       *httptest.Server
	mu        sync.Mutex
	failFirst int
	failWith  int
	got       []scheduler.Payload
	headers   []http.Header
	attempts  int
}

func newReceiver(tb testing.TB, failFirst, failWith int) *receiver {
	r := &receiver{failFirst: failFirst, failWith: failWith}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.attempts++
		if r.attempts <= r.failFirst {
			http.Error(w, "receiver down", r.failWith)
			return
		}
		var p scheduler.Payload
		if err := json.Unmarshal(body, &p); err != nil || req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		r.got = append(r.got, p)
		r.headers = append(r.headers, req.Header.Clone())
		w.WriteHeader(http.StatusNoContent)
	}))
	tb.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) state() (attempts int, got []scheduler.Payload) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.attempts, append([]scheduler.Payload(nil), r.got...)
}

var webhookTests = []struct {
	name         string
	failFirst    int
	failWith     int
	wantStatus   string
	wantAttempts int
	wantErr      string
}{
	{name: "Delivered", wantStatus: store.DeliveryDelivered, wantAttempts: 1},
	{name: "RetryThenDelivered", failFirst: 2, failWith: http.StatusServiceUnavailable, wantStatus: store.DeliveryDelivered, wantAttempts: 3},
	{name: "FinallyFailed", failFirst: 100, failWith: http.StatusInternalServerError, wantStatus: store.DeliveryFailed, wantAttempts: 3, wantErr: "500 Internal Server Error"},
	{name: "RateLimitedIsRetried", failFirst: 100, failWith: http.StatusTooManyRequests, wantStatus: store.DeliveryFailed, wantAttempts: 3, wantErr: "429"},
	{name: "ClientErrorIsNotRetried", failFirst: 100, failWith: http.StatusNotFound, wantStatus: store.DeliveryFailed, wantAttempts: 1, wantErr: "404 Not Found"},
}

func TestWebhookDelivery(t *testing.T) {
	for _, tt := range webhookTests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, scripted.Reply{Content: "the report"})
			rcv := newReceiver(t, tt.failFirst, tt.failWith)
			url := rcv.srv.URL + "/hooks/secret-path-token?key=secret-query"
			s := e.add(t, scheduler.NewSchedule{Name: "report", Kind: "every", Spec: "1h", Target: "webhook:" + url})
			run, err := e.sched.RunNow(context.Background(), "report")
			if err != nil {
				t.Fatal(err)
			}
			if run.Status != store.RunCompleted || run.DeliveryStatus != tt.wantStatus || run.DeliveryAttempts != tt.wantAttempts ||
				!strings.Contains(run.DeliveryError, tt.wantErr) {
				t.Fatalf("run = %+v; want delivery %s after %d attempts", run, tt.wantStatus, tt.wantAttempts)
			}
			if strings.Contains(run.DeliveryError, "secret") {
				t.Errorf("delivery error shows the URL's secret parts: %s", run.DeliveryError)
			}
			attempts, got := rcv.state()
			if attempts != tt.wantAttempts {
				t.Errorf("receiver saw %d attempts, want %d", attempts, tt.wantAttempts)
			}
			if tt.wantStatus == store.DeliveryFailed {
				if len(got) != 0 {
					t.Errorf("failed delivery was received: %+v", got)
				}
				return
			}
			p := got[0]
			if len(got) != 1 || p.ScheduleID != s.ID || p.ScheduleName != "report" || p.RunID != run.ID ||
				p.SessionID != run.SessionID || p.Status != store.RunCompleted || p.Content != "the report" ||
				p.Trigger != scheduler.TriggerManual || p.FinishedAt.IsZero() {
				t.Errorf("payload = %+v", got)
			}
			if h := rcv.headers[0].Get("X-Nagent-Run-Id"); h != run.ID {
				t.Errorf("X-Nagent-Run-Id = %q", h)
			}
		})
	}
}

func TestWebhookUnreachableFails(t *testing.T) {
	e := newEnv(t, scripted.Reply{Content: "x"})
	rcv := newReceiver(t, 0, 0)
	url := rcv.srv.URL + "/secret-path"
	rcv.srv.Close()
	e.add(t, scheduler.NewSchedule{Name: "gone", Kind: "every", Spec: "1h", Target: url})
	run, err := e.sched.RunNow(context.Background(), "gone")
	if err != nil {
		t.Fatal(err)
	}
	if run.DeliveryStatus != store.DeliveryFailed || run.DeliveryAttempts != 3 || strings.Contains(run.DeliveryError, "secret") ||
		!strings.Contains(run.DeliveryError, "webhook: POST http://127.0.0.1") {
		t.Fatalf("run = %+v", run)
	}
}

// chatSender records Feishu deliveries; it fails its first failFirst sends.
type chatSender struct {
	mu        sync.Mutex
	failFirst int
	sent      []string
}

func (c *chatSender) SendText(_ context.Context, chatID, text string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failFirst > 0 {
		c.failFirst--
		return errors.New("feishu: rate limited")
	}
	c.sent = append(c.sent, chatID+": "+text)
	return nil
}

func TestFeishuDelivery(t *testing.T) {
	t.Run("NoSenderRegisteredFails", func(t *testing.T) {
		e := newEnv(t, scripted.Reply{Content: "hello chat"})
		e.add(t, scheduler.NewSchedule{Name: "chat", Kind: "every", Spec: "1h", Target: "feishu:oc_123"})
		run, err := e.sched.RunNow(context.Background(), "chat")
		if err != nil {
			t.Fatal(err)
		}
		if run.DeliveryStatus != store.DeliveryFailed || run.DeliveryAttempts != 1 ||
			!strings.Contains(run.DeliveryError, "no Feishu chat sender is registered") {
			t.Fatalf("run = %+v", run)
		}
	})
	t.Run("SenderRetriedThenDelivered", func(t *testing.T) {
		e := newEnv(t, scripted.Reply{Content: "hello chat"})
		sender := &chatSender{failFirst: 1}
		e.sched.SetChatSender(sender)
		e.add(t, scheduler.NewSchedule{Name: "chat", Kind: "every", Spec: "1h", Target: "feishu:oc_123"})
		run, err := e.sched.RunNow(context.Background(), "chat")
		if err != nil {
			t.Fatal(err)
		}
		if run.DeliveryStatus != store.DeliveryDelivered || run.DeliveryAttempts != 2 {
			t.Fatalf("run = %+v", run)
		}
		if len(sender.sent) != 1 || sender.sent[0] != "oc_123: [chat] hello chat" {
			t.Errorf("sent = %q", sender.sent)
		}
	})
}

func TestParseTarget(t *testing.T) {
	for in, want := range map[string][2]string{
		"":                          {"none", ""},
		"inbox":                     {"inbox", ""},
		"https://x.example/h":       {"webhook", "https://x.example/h"},
		"webhook:http://127.0.0.1/": {"webhook", "http://127.0.0.1/"},
		"feishu:oc_1":               {"feishu", "oc_1"},
	} {
		kind, target, err := scheduler.ParseTarget(in)
		if err != nil || kind != want[0] || target != want[1] {
			t.Errorf("ParseTarget(%q) = %q, %q, %v", in, kind, target, err)
		}
		if back := scheduler.FormatTarget(kind, target); in != "" && !strings.HasPrefix(in, "https://") && back != in {
			t.Errorf("FormatTarget(%q, %q) = %q", kind, target, back)
		}
	}
	for _, bad := range []string{"feishu:", "webhook:ftp://x", "slack:#general"} {
		if _, _, err := scheduler.ParseTarget(bad); err == nil {
			t.Errorf("ParseTarget(%q) accepted", bad)
		}
	}
}
