package web

import (
	"fmt"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/agent"
)

// BenchmarkPublish is what a run pays per event to the hub: one delta
// published to a session topic with 0 or 200 subscribers (whose writers
// linger 10 ms and then drain, as writeLoop does), with and without one
// more whose queue is full (it is dropped on the first publish).
//
//	go test ./web -run '^$' -bench Publish
func BenchmarkPublish(b *testing.B) {
	ev := runEvent{Event: agent.Event{Type: agent.EventDelta, SessionID: "busy", Iteration: 1, Content: "to"}, Source: "api"}
	for _, bc := range []struct {
		n     int
		stall bool
	}{{0, false}, {200, false}, {200, true}} {
		name := fmt.Sprintf("subscribers=%d", bc.n)
		if bc.stall {
			name += "+1stalled"
		}
		b.Run(name, func(b *testing.B) {
			h := newHub(1024, time.Minute, time.Now)
			defer h.close()
			topic := SessionTopic("busy")
			h.Ensure(topic)
			stop := make(chan struct{})
			defer close(stop)
			for i := 0; i < bc.n; i++ {
				c := newClient(2048)
				h.add(c)
				h.subscribe(c, []string{topic}, 0)
				go func() { // a live client's writer, lingering as writeLoop does
					for {
						select {
						case <-c.send:
							time.Sleep(10 * time.Millisecond)
						drain:
							for {
								select {
								case <-c.send:
								default:
									break drain
								}
							}
						case <-stop:
							return
						}
					}
				}()
			}
			if bc.stall {
				c := newClient(1) // never drained
				h.add(c)
				h.subscribe(c, []string{topic}, 0)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				h.Publish(topic, ev)
			}
		})
	}
}
