package tools

import (
	"context"
	"errors"
	"sync"
)

// ErrNoExecutor is matched (errors.Is) by the error a CompositeToolExecutor
// returns for a tool that has neither a route nor a fallback.
var ErrNoExecutor = errors.New("no executor for tool")

// noExecutorError names the tool that had no executor.
type noExecutorError struct{ tool string }

func (e noExecutorError) Error() string        { return "no executor for tool " + e.tool }
func (e noExecutorError) Is(target error) bool { return target == ErrNoExecutor }

// CompositeToolExecutor dispatches each call to the executor routed for its
// tool name, or to Fallback when the name has no route. In the design the MCP
// executor doubles as the fallback.
//
// The zero value is ready to use. Route and Unroute may be called while
// calls run; Fallback must be set before the first Execute and not changed
// afterwards.
type CompositeToolExecutor struct {
	// Fallback runs calls for names without a route; nil means such calls fail
	// with ErrNoExecutor.
	Fallback Executor

	mu     sync.RWMutex
	routes map[string]Executor
}

var _ Executor = (*CompositeToolExecutor)(nil)

// NewCompositeToolExecutor returns an executor with no routes and the given
// fallback, which may be nil.
func NewCompositeToolExecutor(fallback Executor) *CompositeToolExecutor {
	return &CompositeToolExecutor{Fallback: fallback}
}

// Route sends calls for name to exec, replacing any earlier route. A nil exec
// removes the route, as Unroute does.
func (c *CompositeToolExecutor) Route(name string, exec Executor) {
	if exec == nil {
		c.Unroute(name)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.routes == nil {
		c.routes = make(map[string]Executor)
	}
	c.routes[name] = exec
}

// Unroute removes the route for name; later calls go to Fallback.
func (c *CompositeToolExecutor) Unroute(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.routes, name)
}

// Executor returns the executor that would run a call for name: its route,
// else Fallback, else nil.
func (c *CompositeToolExecutor) Executor(name string) Executor {
	c.mu.RLock()
	exec := c.routes[name]
	c.mu.RUnlock()
	if exec != nil {
		return exec
	}
	return c.Fallback
}

// Execute runs call on the executor for call.Name. The lock is not held
// while the executor runs.
func (c *CompositeToolExecutor) Execute(ctx context.Context, call ToolCallRequest, ec ExecutionContext) (string, error) {
	exec := c.Executor(call.Name)
	if exec == nil {
		return "", noExecutorError{tool: call.Name}
	}
	return exec.Execute(ctx, call, ec)
}
