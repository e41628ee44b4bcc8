package sandbox

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/nagent/nagent/runtime/tools"
)

// ModuleName is the Python module injected into every sandbox.
const ModuleName = "nagent_tools"

//go:embed pymodule/nagent_tools.py
var moduleSource []byte

// ModuleSource returns the source of the nagent_tools module.
func ModuleSource() []byte { return slices.Clone(moduleSource) }

// ExecutionMode is the execution_context_mode of tool calls made from
// sandboxed code; policies can single them out with
// input.execution_context_mode == "sandbox".
const ExecutionMode = "sandbox"

// maxRequestBytes bounds one JSON line from the sandbox.
const maxRequestBytes = 1 << 20

// ToolDispatcher runs one tool call through the common path (lookup,
// validation, policy, executor). *tools.ToolService implements it.
type ToolDispatcher interface {
	Execute(ctx context.Context, call tools.ToolCallRequest, ec tools.ExecutionContext) tools.ToolResult
}

// CalledTool is one callback the code made.
type CalledTool struct {
	Name string `json:"name"`
	// Status is a tool status (success, error, denied) or "refused" when the
	// allowlist or max_tool_calls stopped the call before dispatch.
	Status string `json:"status"`
}

// callbackRequest is one line from nagent_tools.
type callbackRequest struct {
	ID        json.RawMessage `json:"id"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

// callbackAnswer is one line to nagent_tools.
type callbackAnswer struct {
	ID      json.RawMessage `json:"id"`
	OK      bool            `json:"ok"`
	Status  string          `json:"status"`
	Content string          `json:"content,omitempty"`
	Error   string          `json:"error,omitempty"`
}

// callbackServer serves the tool socket of one execution.
type callbackServer struct {
	ln       net.Listener
	tools    ToolDispatcher
	exec     tools.ExecutionContext
	allowed  []string
	maxCalls int
	idPrefix string

	mu     sync.Mutex
	called []CalledTool
	conns  map[net.Conn]bool
	wg     sync.WaitGroup
}

// startCallbackServer listens on dir/tools.sock. The socket is made
// connectable by any uid (the sandbox user differs per backend); dir's
// parent must keep other host users out.
func startCallbackServer(ctx context.Context, dir string, d ToolDispatcher, ec tools.ExecutionContext, allowed []string, maxCalls int, idPrefix string) (*callbackServer, error) {
	path := filepath.Join(dir, SocketName)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("sandbox: listen on the tool socket: %w", err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		ln.Close()
		return nil, fmt.Errorf("sandbox: tool socket: %w", err)
	}
	ec.ExecutionContextMode = ExecutionMode
	ec.Confirmer = nil // no human stands behind code; a confirm is a denial
	s := &callbackServer{ln: ln, tools: d, exec: ec, allowed: allowed, maxCalls: maxCalls, idPrefix: idPrefix, conns: map[net.Conn]bool{}}
	s.wg.Add(1)
	go s.accept(ctx)
	return s, nil
}

func (s *callbackServer) accept(ctx context.Context) {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serve(ctx, c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			c.Close()
		}()
	}
}

func (s *callbackServer) serve(ctx context.Context, c net.Conn) {
	r := bufio.NewReaderSize(c, 64<<10)
	w := bufio.NewWriter(c)
	for {
		line, err := readLine(r, maxRequestBytes)
		if err != nil {
			if errors.Is(err, errLineTooLong) {
				writeAnswer(w, callbackAnswer{Status: "error", Error: "request larger than 1 MiB"})
			}
			return
		}
		var req callbackRequest
		if err := json.Unmarshal(line, &req); err != nil {
			writeAnswer(w, callbackAnswer{Status: "error", Error: "request is not valid JSON: " + err.Error()})
			continue
		}
		if err := writeAnswer(w, s.dispatch(ctx, req)); err != nil {
			return
		}
	}
}

// dispatch applies the allowlist and max_tool_calls, then runs the call
// through the ToolService, so the policy decides again.
func (s *callbackServer) dispatch(ctx context.Context, req callbackRequest) callbackAnswer {
	ans := callbackAnswer{ID: req.ID}
	s.mu.Lock()
	n := len(s.called)
	switch {
	case !slices.Contains(s.allowed, req.Tool):
		s.called = append(s.called, CalledTool{Name: req.Tool, Status: "refused"})
		s.mu.Unlock()
		ans.Status = "refused"
		ans.Error = fmt.Sprintf("tool %q is not allowed from the sandbox; allowed: %v", req.Tool, s.allowed)
		return ans
	case s.countDispatched() >= s.maxCalls:
		s.called = append(s.called, CalledTool{Name: req.Tool, Status: "refused"})
		s.mu.Unlock()
		ans.Status = "refused"
		ans.Error = fmt.Sprintf("max_tool_calls (%d) reached for this execution", s.maxCalls)
		return ans
	}
	idx := len(s.called)
	s.called = append(s.called, CalledTool{Name: req.Tool, Status: "running"})
	s.mu.Unlock()

	args := string(req.Arguments)
	if args == "" || args == "null" {
		args = "{}"
	}
	res := s.tools.Execute(ctx, tools.ToolCallRequest{
		ID: fmt.Sprintf("%s_%d", s.idPrefix, n+1), Name: req.Tool, Arguments: args,
	}, s.exec)
	s.mu.Lock()
	s.called[idx].Status = string(res.Status)
	s.mu.Unlock()
	ans.Status = string(res.Status)
	if res.Status == tools.StatusSuccess {
		ans.OK = true
		ans.Content = res.Content
	} else {
		ans.Error = res.Content
	}
	return ans
}

// countDispatched counts calls that reached the ToolService; mu is held.
func (s *callbackServer) countDispatched() int {
	n := 0
	for _, c := range s.called {
		if c.Status != "refused" {
			n++
		}
	}
	return n
}

// close stops listening, cuts the open connections and waits for running
// calls, then returns the calls made.
func (s *callbackServer) close() []CalledTool {
	s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.called)
}

var errLineTooLong = errors.New("line too long")

func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > limit {
			return nil, errLineTooLong
		}
		if err == nil {
			return line, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
	}
}

func writeAnswer(w *bufio.Writer, a callbackAnswer) error {
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	w.Write(b)
	w.WriteByte('\n')
	return w.Flush()
}
