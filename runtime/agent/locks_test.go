package agent

import (
	"context"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/errs"
)

func TestSessionLocks(t *testing.T) {
	var l sessionLocks
	ctx := context.Background()

	t.Run("OtherSessionsRunInParallel", func(t *testing.T) {
		r1, err := l.acquire(ctx, "a", 0)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := l.acquire(ctx, "b", 0)
		if err != nil {
			t.Fatal("a second session had to wait:", err)
		}
		r1()
		r2()
	})

	t.Run("SameSessionQueuesInOrder", func(t *testing.T) {
		release, _ := l.acquire(ctx, "s", 0)
		order := make(chan int, 3)
		for i := 1; i <= 3; i++ {
			go func() {
				r, err := l.acquire(ctx, "s", 0)
				if err != nil {
					t.Error(err)
					return
				}
				order <- i
				r()
			}()
			time.Sleep(20 * time.Millisecond) // let each waiter queue before the next
		}
		release()
		for want := 1; want <= 3; want++ {
			if got := <-order; got != want {
				t.Fatalf("turn %d ran in position %d", got, want)
			}
		}
	})

	t.Run("QueueLimit", func(t *testing.T) {
		release, _ := l.acquire(ctx, "q", 1)
		waiting := make(chan func())
		go func() {
			r, _ := l.acquire(ctx, "q", 1)
			waiting <- r
		}()
		time.Sleep(20 * time.Millisecond)
		if _, err := l.acquire(ctx, "q", 1); errs.Code(err) != errs.EBUSY {
			t.Errorf("third turn = %v, want EBUSY", err)
		}
		release()
		(<-waiting)()
	})

	t.Run("CancelWhileWaiting", func(t *testing.T) {
		release, _ := l.acquire(ctx, "c", 0)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := l.acquire(cctx, "c", 0); err != context.Canceled {
			t.Errorf("err = %v", err)
		}
		release()
		if r, err := l.acquire(ctx, "c", 0); err != nil {
			t.Errorf("lock not free after a cancelled waiter: %v", err)
		} else {
			r()
		}
	})

	if len(l.slots) != 0 {
		t.Errorf("%d session slots leaked", len(l.slots))
	}
}
