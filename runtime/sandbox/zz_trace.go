package sandbox

import (
	"fmt"
	"os"
	"time"
)

var traceOn = os.Getenv("NAGENT_TRACE") != ""

type tracer struct{ last time.Time; s string }

func newTracer() *tracer { return &tracer{last: time.Now()} }
func (t *tracer) mark(name string) {
	if !traceOn { return }
	now := time.Now()
	t.s += fmt.Sprintf(" %s=%.1f", name, float64(now.Sub(t.last).Microseconds())/1000)
	t.last = now
}
func (t *tracer) flush(p string) { if traceOn { fmt.Fprintln(os.Stderr, "TRACE", p, t.s) } }
