package feishu_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nagent/nagent/adapters/feishu"
	"github.com/nagent/nagent/adapters/feishu/feishutest"
	"github.com/nagent/nagent/runtime/llm/scripted"
)

// BenchmarkFirstCardUpdate measures the time from an inbound
// im.message.receive_v1 frame to the first card reply reaching the fake
// platform, with the scripted model streaming and StreamAfter < 0 (a card
// at the first delta), with the default order window (DefaultOrderWindow,
// which every message waits out) and without it. With the default
// StreamAfter the card comes that much later; shorter answers go as one
// text message instead.
func BenchmarkFirstCardUpdate(b *testing.B) {
	b.Run("order_window=default", func(b *testing.B) { benchFirstCard(b, 0) })
	b.Run("order_window=off", func(b *testing.B) { benchFirstCard(b, -1) })
}

func benchFirstCard(b *testing.B, window time.Duration) {
	e := start(b, setup{opts: feishu.Options{StreamAfter: -1, UpdateInterval: 10 * time.Millisecond, OrderWindow: window}})
	answer := strings.Repeat("streamed words ", 10)
	e.model.SetResponder(func(scripted.RecordedRequest) scripted.Reply {
		return scripted.Reply{Content: answer, ChunkSize: 8}
	})
	final := strings.TrimSpace(answer)
	var lat []time.Duration
	e.waitConnected(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := fmt.Sprintf("om_fc%d", i)
		sent := time.Now()
		if err := e.fake.Push("fc"+fmt.Sprint(i), feishutest.MessageEvent(appID, feishutest.Message{MessageID: id, ChatID: "oc_bench", Sender: alice, Text: "go"}), 1); err != nil {
			b.Fatal(err)
		}
		var card feishutest.Call
		e.fake.Wait(waitLong, func() bool {
			for _, c := range e.fake.CallsLocked() {
				if c.Kind == "reply" && c.MessageID == id {
					card = c
					return true
				}
			}
			return false
		})
		if card.Result == "" {
			b.Fatalf("no card for %s", id)
		}
		lat = append(lat, card.At.Sub(sent))
		// Let the turn finish before the next one.
		e.fake.Wait(waitLong, func() bool {
			for _, c := range e.fake.CallsLocked() {
				if c.Kind == "patch" && c.MessageID == card.Result && strings.Contains(c.Content, final) && !strings.Contains(c.Content, "Writing") {
					return true
				}
			}
			return false
		})
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms/first-card-median")
}

// BenchmarkEvents pushes b.N message events through the fake platform and
// waits until each is answered (Echo model, text replies): in one chat
// (turns run one at a time, in order) and spread over 50 chats.
func BenchmarkEvents(b *testing.B) {
	for _, chats := range []int{1, 50} {
		b.Run(fmt.Sprintf("chats=%d", chats), func(b *testing.B) {
			e := start(b, setup{})
			e.model.SetResponder(scripted.Echo)
			const window = 8 // per chat; the gateway queues at most 16
			e.waitConnected(b)
			b.ResetTimer()
			began := time.Now()
			for i := 0; i < b.N; i++ {
				// Keep at most window unanswered messages per chat.
				e.fake.Wait(waitLong, func() bool { return i-e.fake.CountLocked("reply") < window*chats })
				m := feishutest.Message{MessageID: fmt.Sprintf("om_ev%d", i), ChatID: fmt.Sprintf("oc_%d", i%chats), Sender: alice, Text: fmt.Sprintf("event %d", i)}
				if err := e.fake.Push(fmt.Sprintf("ev%d", i), feishutest.MessageEvent(appID, m), 1); err != nil {
					b.Fatal(err)
				}
			}
			if !e.fake.Wait(2*time.Minute, func() bool { return e.fake.CountLocked("reply") >= b.N }) {
				b.Fatalf("%d of %d events answered", len(e.fake.Calls()), b.N)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/time.Since(began).Seconds(), "events/s")
		})
	}
}
