package feishu

import (
	"slices"
	"strconv"
	"sync"
	"time"
)

// DefaultOrderWindow is how long a message waits for its chat's
// neighbours before it is handed to the gateway. The SDK runs each
// websocket frame's handler in its own goroutine, so messages sent a few
// milliseconds apart can reach the adapter out of order; within the window
// they are put back in the order Feishu stamped on them (create_time).
const DefaultOrderWindow = 20 * time.Millisecond

// orderer holds each chat's just-arrived messages for the order window and
// submits them sorted by create_time.
type orderer struct {
	window time.Duration
	submit func(inbound)

	mu    sync.Mutex
	chats map[string][]inbound
}

func (o *orderer) add(in inbound) {
	if o.window <= 0 {
		o.submit(in)
		return
	}
	key := in.ChatID + "\x00" + in.ThreadID
	o.mu.Lock()
	pending, waiting := o.chats[key]
	o.chats[key] = append(pending, in)
	o.mu.Unlock()
	if !waiting {
		time.AfterFunc(o.window, func() { o.flush(key) })
	}
}

func (o *orderer) flush(key string) {
	o.mu.Lock()
	batch := o.chats[key]
	delete(o.chats, key)
	o.mu.Unlock()
	slices.SortStableFunc(batch, func(a, b inbound) int {
		switch {
		case a.CreateTime < b.CreateTime:
			return -1
		case a.CreateTime > b.CreateTime:
			return 1
		}
		return 0
	})
	for _, in := range batch {
		o.submit(in)
	}
}

func parseMillis(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}
