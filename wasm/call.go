package wasm

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/store"
)

// stderrLimit caps what a call may write to stderr; the tail goes into
// error messages and the log.
const stderrLimit = 64 << 10

// request is the JSON document a plugin reads on stdin.
type request struct {
	Tool      string            `json:"tool"`
	Arguments json.RawMessage   `json:"arguments"`
	Config    json.RawMessage   `json:"config"`
	Secrets   map[string]string `json:"secrets"`
	SessionID string            `json:"session_id"`
	Metadata  map[string]any    `json:"metadata"`
}

// response is the JSON document a plugin writes on stdout.
type response struct {
	Content json.RawMessage `json:"content"`
	Error   *string         `json:"error"`
}

// Why a call was interrupted.
var (
	errCallTimeout    = errors.New("plugin call timed out")
	errOutputOverflow = errors.New("plugin output over its limit")
	// errStopped is what nagent.tick panics with to stop a call.
	errStopped = errors.New("plugin call stopped")
)

// callTool runs one tool call.
func (p *plugin) callTool(ctx context.Context, call tools.ToolCallRequest, ec tools.ExecutionContext) (string, error) {
	args := json.RawMessage(call.Arguments)
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	req, err := p.request(call.Name, args, ec)
	if err != nil {
		return "", err
	}
	return p.result(p.run(ctx, runSpec{entry: "_start", tool: call.Name, stdin: req, ec: ec}))
}

// request encodes the stdin document of a call.
func (p *plugin) request(tool string, args json.RawMessage, ec tools.ExecutionContext) ([]byte, error) {
	meta := ec.TrustedMetadata
	if meta == nil {
		meta = map[string]any{}
	}
	b, err := json.Marshal(request{
		Tool: tool, Arguments: args, Config: p.config, Secrets: p.secrets,
		SessionID: ec.SessionID, Metadata: meta,
	})
	if err != nil {
		return nil, fmt.Errorf("plugin %s: encode request: %w", p.manifest.Name, err)
	}
	return b, nil
}

// runSpec is one run of a module: which export to call, with what on stdin.
type runSpec struct {
	entry string
	tool  string
	stdin []byte
	ec    tools.ExecutionContext
}

// runOutcome is what one run produced. err is set when the run failed; the
// message is written for the model.
type runOutcome struct {
	stdout, stderr []byte
	result         uint64 // the i32 an export such as nagent_check returned
	exitCode       uint32
	err            error
}

// callState is one run's state, reachable from host functions through the
// context.
type callState struct {
	plugin *plugin
	tool   string
	ec     tools.ExecutionContext

	mu         sync.Mutex
	lastResult []byte
	audit      []store.PluginHostCall
}

type callStateKey struct{}

func stateFrom(ctx context.Context) *callState {
	st, _ := ctx.Value(callStateKey{}).(*callState)
	return st
}

// run instantiates the module afresh, calls spec.entry, and classifies what
// happened. It never panics on the module's behalf: traps, exits, timeouts,
// memory exhaustion and output overflows all become outcome.err.
func (p *plugin) run(ctx context.Context, spec runSpec) (out runOutcome) {
	m, lim := p.manifest, p.manifest.Limits
	callCtx, cancel := context.WithTimeoutCause(ctx, lim.Timeout.Std(), errCallTimeout)
	defer cancel()

	// The cause of an interruption we started ourselves (output overflow).
	// Cancelling callCtx stops the module at its next tick (loop_check) or
	// loop head (close_on_context_done).
	var cause atomic.Pointer[error]
	interrupt := func(why error) {
		cause.CompareAndSwap(nil, &why)
		cancel()
	}

	st := &callState{plugin: p, tool: spec.tool, ec: spec.ec}
	defer p.flushAudit(ctx, st)
	callCtx = context.WithValue(callCtx, callStateKey{}, st)

	mem := &memoryLimit{limit: uint64(lim.memoryPages()) * 65536}
	stdout := &cappedBuffer{limit: lim.OutputBytes, overflow: func() { interrupt(errOutputOverflow) }}
	stderr := &cappedBuffer{limit: stderrLimit}
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions().
		WithArgs(m.Name).
		WithStdin(bytes.NewReader(spec.stdin)).
		WithStdout(stdout).
		WithStderr(stderr).
		WithSysWalltime().
		WithSysNanotime().
		WithNanosleep(sleeper(callCtx)).
		WithRandSource(rand.Reader).
		WithFSConfig(p.fs)
	for _, kv := range p.env {
		cfg = cfg.WithEnv(kv[0], kv[1])
	}

	mod, err := p.rt.InstantiateModule(experimental.WithMemoryAllocator(callCtx, mem), p.compiled, cfg)
	if err != nil {
		out.err = fmt.Errorf("plugin %s could not start: %v", m.Name, err)
		return out
	}
	defer mod.Close(context.WithoutCancel(ctx))

	fn := mod.ExportedFunction(spec.entry)
	if fn == nil {
		out.err = fmt.Errorf("plugin %s does not export %s", m.Name, spec.entry)
		return out
	}
	results, callErr := fn.Call(callCtx)
	out.stdout, out.stderr = stdout.Bytes(), stderr.Bytes()
	if len(results) == 1 {
		out.result = results[0]
	}

	var exit *sys.ExitError
	trapped := false
	switch {
	case callErr == nil:
	case errors.As(callErr, &exit):
		out.exitCode = exit.ExitCode()
		if out.exitCode == sys.ExitCodeDeadlineExceeded || out.exitCode == sys.ExitCodeContextCanceled {
			trapped = true // stopped by wazero's close-on-context-done
		}
	case errors.Is(callErr, errStopped):
		trapped = true // stopped by nagent.tick
	default:
		trapped = true
	}
	failed := trapped || out.exitCode != 0

	switch c := cause.Load(); {
	case c != nil && *c == errOutputOverflow:
		out.err = fmt.Errorf("plugin %s wrote more than %d bytes to stdout (limits.output_bytes in its plugin.yaml)", m.Name, lim.OutputBytes)
	case failed && context.Cause(callCtx) == errCallTimeout:
		out.err = fmt.Errorf("plugin %s timed out after %s (limits.timeout in its plugin.yaml) and was stopped", m.Name, lim.Timeout.Std())
	case failed && ctx.Err() != nil:
		out.err = fmt.Errorf("plugin %s was interrupted: %w", m.Name, context.Cause(ctx))
	case failed && mem.refused.Load() > 0:
		out.err = fmt.Errorf("plugin %s ran out of memory: it asked for %s, over its limit of %d MiB (limits.memory_mib in its plugin.yaml)%s",
			m.Name, mib(mem.refused.Load()), lim.MemoryMiB, stderrTail(out.stderr))
	case trapped:
		out.err = fmt.Errorf("plugin %s crashed: %s%s", m.Name, trapMessage(callErr), stderrTail(out.stderr))
	}
	return out
}

// result turns a tool run's outcome into the content for the model, or an
// error for it.
func (p *plugin) result(out runOutcome) (string, error) {
	name := p.manifest.Name
	if out.err != nil {
		return "", out.err
	}
	res, perr := parseResponse(out.stdout)
	if out.exitCode != 0 {
		if perr == nil && res.Error != nil {
			return "", errors.New(*res.Error)
		}
		return "", fmt.Errorf("plugin %s exited with code %d%s", name, out.exitCode, stderrTail(out.stderr))
	}
	if perr != nil {
		return "", fmt.Errorf("plugin %s wrote invalid output: %v; stdout began %q%s", name, perr, truncate(string(out.stdout), 120), stderrTail(out.stderr))
	}
	if res.Error != nil {
		return "", errors.New(*res.Error)
	}
	var s string
	if res.Content[0] == '"' && json.Unmarshal(res.Content, &s) == nil {
		return s, nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, res.Content); err != nil {
		return string(res.Content), nil
	}
	return b.String(), nil
}

// parseResponse parses stdout as one JSON object with "content" or "error".
func parseResponse(stdout []byte) (response, error) {
	var res response
	trimmed := bytes.TrimSpace(stdout)
	if len(trimmed) == 0 {
		return res, errors.New(`stdout is empty; a plugin must write one JSON object, {"content": ...} or {"error": "..."}`)
	}
	if trimmed[0] != '{' {
		return res, errors.New(`stdout is not a JSON object; a plugin must write {"content": ...} or {"error": "..."}`)
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if err := dec.Decode(&res); err != nil {
		return res, fmt.Errorf("stdout is not valid JSON: %v", err)
	}
	if dec.More() {
		return res, errors.New("stdout holds more than one JSON value; write exactly one result")
	}
	switch {
	case res.Error != nil && res.Content != nil:
		return res, errors.New(`the result has both "content" and "error"; write one`)
	case res.Error == nil && res.Content == nil:
		return res, errors.New(`the result has neither "content" nor "error"`)
	}
	return res, nil
}

// trapMessage is the first line of a wazero trap, with the function it
// happened in: "integer divide by zero (in $divide)".
func trapMessage(err error) string {
	msg := err.Error()
	lines := strings.Split(msg, "\n")
	first := strings.TrimPrefix(lines[0], "wasm error: ")
	for i, l := range lines {
		if strings.TrimSpace(l) == "wasm stack trace:" && i+1 < len(lines) {
			return first + " (in " + strings.TrimPrefix(strings.TrimSpace(lines[i+1]), ".") + ")"
		}
	}
	return first
}

// stderrTail is "; stderr: ..." with the start of stderr, where runtimes
// print the error before any trace, or "".
func stderrTail(stderr []byte) string {
	s := strings.TrimSpace(string(stderr))
	if s == "" {
		return ""
	}
	return "; stderr: " + truncate(s, 400)
}

func mib(n uint64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// sleeper implements WASI sleeps that end early when the call ends.
func sleeper(ctx context.Context) sys.Nanosleep {
	return func(ns int64) {
		t := time.NewTimer(time.Duration(ns))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
}

// cappedBuffer keeps at most limit bytes; a write past the limit fails and
// calls overflow once.
type cappedBuffer struct {
	mu       sync.Mutex
	buf      bytes.Buffer
	limit    int
	over     bool
	overflow func()
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.limit - c.buf.Len(); len(p) > room {
		c.buf.Write(p[:max(room, 0)])
		if !c.over && c.overflow != nil {
			c.over = true
			c.overflow()
		}
		return max(room, 0), errors.New("output limit reached")
	}
	return c.buf.Write(p)
}

func (c *cappedBuffer) Bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.buf.Bytes())
}

// memoryLimit backs a module's linear memory and refuses to grow it past
// limit, remembering the refused size so the failure can be explained.
type memoryLimit struct {
	limit   uint64
	refused atomic.Uint64
}

func (m *memoryLimit) Allocate(capacity, _ uint64) experimental.LinearMemory {
	return &linearMemory{m: m, buf: make([]byte, 0, min(capacity, m.limit))}
}

type linearMemory struct {
	m   *memoryLimit
	buf []byte
}

func (l *linearMemory) Reallocate(size uint64) []byte {
	if size > l.m.limit {
		l.m.refused.Store(size)
		return nil
	}
	if size <= uint64(cap(l.buf)) {
		l.buf = l.buf[:size]
		return l.buf
	}
	grown := make([]byte, size, min(max(size, 2*uint64(cap(l.buf))), l.m.limit))
	copy(grown, l.buf)
	l.buf = grown
	return l.buf
}

func (l *linearMemory) Free() { l.buf = nil }
