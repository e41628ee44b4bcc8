package web_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/nagent/nagent/runtime/chat"
	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/llm/scripted"
	"github.com/nagent/nagent/web"
)

// busyReply streams chars/2 deltas of two characters, one every pace
// (a fast model streams a token every few milliseconds).
func busyReply(chars int, pace time.Duration) scripted.Reply {
	return scripted.Reply{Content: strings.Repeat("busy ", chars/5), ChunkSize: 2, ChunkDelay: pace}
}

// rawSubscriber reads frames without decoding them, signalling acks and
// finished runs; it is the cheapest well-behaved client.
type rawSubscriber struct {
	conn     *websocket.Conn
	acks     chan struct{}
	finished chan struct{}
	closed   atomic.Bool
}

func (e *env) dialRaw(tb testing.TB, stalled bool) *websocket.Conn {
	tb.Helper()
	h := http.Header{"Origin": {e.srv.URL}}
	req, _ := http.NewRequest("GET", e.srv.URL+"/ws", nil)
	for _, c := range e.client.Jar.Cookies(req.URL) {
		req.AddCookie(c)
	}
	h.Set("Cookie", req.Header.Get("Cookie"))
	d := websocket.Dialer{HandshakeTimeout: 30 * time.Second}
	if stalled {
		nd := &net.Dialer{Control: shrinkReceiveBuffer}
		d.NetDialContext = nd.DialContext
		d.ReadBufferSize = 256
	}
	conn, _, err := d.Dial("ws"+strings.TrimPrefix(e.srv.URL, "http")+"/ws", h)
	if err != nil {
		tb.Fatalf("dial: %v", err)
	}
	return conn
}

func (e *env) subscriber(tb testing.TB) *rawSubscriber {
	s := &rawSubscriber{conn: e.dialRaw(tb, false), acks: make(chan struct{}, 16), finished: make(chan struct{}, 16)}
	go func() {
		defer s.closed.Store(true)
		for {
			_, data, err := s.conn.ReadMessage()
			if err != nil {
				return
			}
			switch {
			case bytes.HasPrefix(data, []byte(`{"topics"`)) || bytes.Contains(data, []byte(`"type":"subscribed"`)):
				s.acks <- struct{}{}
			case bytes.Contains(data, []byte(`"type":"run_finished"`)):
				s.finished <- struct{}{}
			}
		}
	}()
	return s
}

func subscribeMsg(topic string) []byte {
	return []byte(fmt.Sprintf(`{"type":"subscribe","topics":[%q]}`, topic))
}

// subscribeAll subscribes every subscriber to topic and waits for the acks.
func subscribeAll(tb testing.TB, subs []*rawSubscriber, topic string) {
	for _, s := range subs {
		if err := s.conn.WriteMessage(websocket.TextMessage, subscribeMsg(topic)); err != nil {
			tb.Fatal(err)
		}
	}
	for i, s := range subs {
		select {
		case <-s.acks:
		case <-time.After(60 * time.Second):
			tb.Fatalf("subscriber %d: no ack", i)
		}
	}
}

// TestStalledSubscriberIsDropped runs a busy session watched by 200 live
// subscribers and one that never reads (in a child process, as browsers
// would be): the stalled one is dropped, the run completes, and every live
// subscriber sees the whole run.
func TestStalledSubscriberIsDropped(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 201 websocket clients")
	}
	e := newEnv(t, envOptions{keys: []string{"k"}, web: web.Options{SendQueue: 512}})
	e.login("k")
	e.model.SetResponder(func(scripted.RecordedRequest) scripted.Reply { return busyReply(3000, 2*time.Millisecond) })
	const n = 200
	subs := e.startSubscribers(t, n, true)
	subs.command(t, "sub "+web.SessionTopic("busy"), "ready")
	waitFor(t, func() bool { return e.dash.Hub().Clients() == n+1 })

	start := time.Now()
	res, err := e.app.Chat.Stream(context.Background(), chat.Request{SessionID: "busy", Source: "api",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "go"}}}, nil)
	if err != nil || res.Status != "completed" {
		t.Fatalf("run = %+v, %v", res, err)
	}
	t.Logf("a run of 1500 deltas watched by %d subscribers + 1 stalled took %v", n, time.Since(start))
	subs.command(t, "wait", "done") // every live subscriber saw run_finished
	if got := e.dash.Hub().Dropped(); got != 1 {
		t.Fatalf("dropped %d clients, want exactly the stalled one", got)
	}
	waitFor(t, func() bool { return e.dash.Hub().Clients() == n })
}

// BenchmarkRunLatency measures one turn (100 streamed deltas, one every
// 3 ms, plus its state events, all published to the hub) with nobody
// watching, with 200 subscribers on the session, and with 200 plus one that
// never reads (send queues of 512, so it is dropped within a few turns).
// The subscribers live in a child process, as browsers would be elsewhere;
// on a 2-core machine they still share the CPU with the run.
//
//	go test ./web -run '^$' -bench RunLatency -benchtime 20x
func BenchmarkRunLatency(b *testing.B) {
	for _, bc := range []struct {
		n     int
		stall bool
	}{{0, false}, {200, false}, {200, true}} {
		name := fmt.Sprintf("subscribers=%d", bc.n)
		if bc.stall {
			name += "+1stalled"
		}
		b.Run(name, func(b *testing.B) {
			e := newEnv(b, envOptions{keys: []string{"k"}, web: web.Options{SendQueue: 512}})
			e.login("k")
			e.model.SetResponder(func(scripted.RecordedRequest) scripted.Reply { return busyReply(400, 3*time.Millisecond) })
			var subs *subscriberProcess
			if bc.n > 0 {
				subs = e.startSubscribers(b, bc.n, bc.stall)
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				sid := fmt.Sprintf("bench-%d", i)
				if subs != nil {
					subs.command(b, "sub "+web.SessionTopic(sid), "ready")
				}
				b.StartTimer()
				start := time.Now()
				res, err := e.app.Chat.Stream(context.Background(), chat.Request{SessionID: sid, Source: "api",
					Messages: []llm.Message{{Role: llm.RoleUser, Content: "go"}}}, nil)
				lat = append(lat, time.Since(start))
				b.StopTimer()
				if err != nil || res.Status != "completed" {
					b.Fatalf("run = %+v, %v", res, err)
				}
				if subs != nil {
					subs.command(b, "wait", "done")
				}
				b.StartTimer()
			}
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(e.dash.Hub().Dropped()), "dropped")
		})
	}
}

// subscriberProcess drives TestSubscriberProcess in a child process.
type subscriberProcess struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

func (e *env) startSubscribers(tb testing.TB, n int, stall bool) *subscriberProcess {
	tb.Helper()
	req, _ := http.NewRequest("GET", e.srv.URL+"/ws", nil)
	for _, c := range e.client.Jar.Cookies(req.URL) {
		req.AddCookie(c)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSubscriberProcess$", "-test.v")
	cmd.Env = append(os.Environ(), "WEB_SUBSCRIBERS="+strconv.Itoa(n), "WEB_SUBSCRIBERS_URL="+e.srv.URL,
		"WEB_SUBSCRIBERS_COOKIE="+req.Header.Get("Cookie"), "WEB_SUBSCRIBERS_STALL="+strconv.FormatBool(stall))
	cmd.Stderr = os.Stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	p := &subscriberProcess{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	tb.Cleanup(func() {
		in.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	p.command(tb, "", "connected")
	return p
}

// command sends a line (if any) and waits for the child's answer.
func (p *subscriberProcess) command(tb testing.TB, line, want string) {
	tb.Helper()
	if line != "" {
		fmt.Fprintln(p.in, line)
	}
	for p.out.Scan() {
		if got := p.out.Text(); got == want {
			return
		} else if strings.HasPrefix(got, "FAIL") || strings.HasPrefix(got, "error") {
			tb.Fatalf("subscriber process: %s", got)
		}
	}
	tb.Fatalf("subscriber process ended before %q: %v", want, p.out.Err())
}

// TestSubscriberProcess is the child of startSubscribers: it holds
// WEB_SUBSCRIBERS websocket clients (and one that never reads, with
// WEB_SUBSCRIBERS_STALL) and obeys stdin: "sub TOPIC" subscribes them all
// and answers "ready"; "wait" answers "done" once each live client has
// seen a run_finished.
func TestSubscriberProcess(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("WEB_SUBSCRIBERS"))
	if n == 0 {
		t.Skip("only runs as the child of BenchmarkRunLatency")
	}
	e := &env{tb: t, srv: &httptest.Server{URL: os.Getenv("WEB_SUBSCRIBERS_URL")}}
	jar, _ := cookiejar.New(nil)
	u, _ := url.Parse(e.srv.URL)
	for _, c := range strings.Split(os.Getenv("WEB_SUBSCRIBERS_COOKIE"), "; ") {
		if name, value, ok := strings.Cut(c, "="); ok {
			jar.SetCookies(u, []*http.Cookie{{Name: name, Value: value}})
		}
	}
	e.client = &http.Client{Jar: jar}
	subs := make([]*rawSubscriber, n)
	for i := range subs {
		subs[i] = e.subscriber(t)
	}
	var stalled *websocket.Conn
	if os.Getenv("WEB_SUBSCRIBERS_STALL") == "true" {
		stalled = e.dialRaw(t, true)
	}
	fmt.Println("connected")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		cmd, arg, _ := strings.Cut(in.Text(), " ")
		switch cmd {
		case "sub":
			if stalled != nil {
				if err := stalled.WriteMessage(websocket.TextMessage, subscribeMsg(arg)); err != nil {
					stalled = e.dialRaw(t, true) // dropped: a new stalled client takes its place
					stalled.WriteMessage(websocket.TextMessage, subscribeMsg(arg))
				}
			}
			subscribeAll(t, subs, arg)
			fmt.Println("ready")
		case "wait":
			for i, s := range subs {
				select {
				case <-s.finished:
				case <-time.After(60 * time.Second):
					fmt.Printf("error: subscriber %d missed run_finished (closed %v)\n", i, s.closed.Load())
					return
				}
			}
			fmt.Println("done")
		}
	}
}
