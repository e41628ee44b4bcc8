package sandbox

import (
	"strconv"
	"sync"
)

// OutputBuffer is an io.Writer that keeps at most Limit bytes of what is
// written to it: the first half and the last half, dropping the middle. It
// is safe for concurrent use. The zero Limit keeps DefaultLimits.OutputBytes.
type OutputBuffer struct {
	Limit int

	mu      sync.Mutex
	head    []byte
	tail    []byte // ring of the last bytes, in order after compact
	total   int64
	dropped int64
}

// Write keeps the head and tail of p and never fails.
func (b *OutputBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	limit := b.Limit
	if limit <= 0 {
		limit = DefaultLimits.OutputBytes
	}
	headCap := (limit + 1) / 2
	tailCap := limit - headCap
	n := len(p)
	b.total += int64(n)
	if room := headCap - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 {
		return n, nil
	}
	b.tail = append(b.tail, p...)
	if over := len(b.tail) - tailCap; over > 0 {
		b.dropped += int64(over)
		b.tail = append(b.tail[:0], b.tail[over:]...)
	}
	return n, nil
}

// Bytes returns what was kept; when bytes were dropped, a marker naming how
// many stands between head and tail.
func (b *OutputBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]byte, 0, len(b.head)+len(b.tail)+40)
	out = append(out, b.head...)
	if b.dropped > 0 {
		out = append(out, "\n…[truncated "+strconv.FormatInt(b.dropped, 10)+" bytes]…\n"...)
	}
	return append(out, b.tail...)
}

// Total is the number of bytes written, kept or not.
func (b *OutputBuffer) Total() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total
}
