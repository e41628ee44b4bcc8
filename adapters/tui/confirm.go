package tui

import (
	"context"
	"sync"

	"github.com/nagent/nagent/runtime/tools"
)

// answer is the person's reply to a confirmation prompt.
type answer int

const (
	answerDeny answer = iota
	answerOnce
	answerAlways
)

// confirmRequest is one policy confirm decision waiting for the person.
type confirmRequest struct {
	call    tools.ToolCallRequest
	def     tools.ToolDefinition
	reasons []string
	reply   chan answer // buffered: the UI never blocks answering
}

// confirmMsg asks the UI to show a confirmation prompt.
type confirmMsg struct{ req *confirmRequest }

// confirmer is the tools.Confirmer of the terminal: it runs on the turn's
// goroutine, posts the question to the UI and waits for the answer. A
// cancelled turn is a denial. "Allow always" lasts for the current session.
type confirmer struct {
	post func(context.Context, any) bool

	mu     sync.Mutex
	always map[string]bool // tool names allowed for the rest of the session
}

var _ tools.Confirmer = (*confirmer)(nil)

func newConfirmer(post func(context.Context, any) bool) *confirmer {
	return &confirmer{post: post, always: map[string]bool{}}
}

// Confirm implements tools.Confirmer.
func (c *confirmer) Confirm(ctx context.Context, call tools.ToolCallRequest, def tools.ToolDefinition, reasons []string) (bool, error) {
	c.mu.Lock()
	ok := c.always[def.Name]
	c.mu.Unlock()
	if ok {
		return true, nil
	}
	req := &confirmRequest{call: call, def: def, reasons: reasons, reply: make(chan answer, 1)}
	if !c.post(ctx, confirmMsg{req}) {
		return false, ctx.Err()
	}
	select {
	case a := <-req.reply:
		if a == answerAlways {
			c.mu.Lock()
			c.always[def.Name] = true
			c.mu.Unlock()
		}
		return a != answerDeny, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// reset forgets "allow always" answers (a new or resumed session).
func (c *confirmer) reset() {
	c.mu.Lock()
	clear(c.always)
	c.mu.Unlock()
}
