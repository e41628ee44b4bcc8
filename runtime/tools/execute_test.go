package tools_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nagent/nagent/runtime/tools"
)

// confirmerFunc adapts a function to tools.Confirmer.
type confirmerFunc func(ctx context.Context, call tools.ToolCallRequest, def tools.ToolDefinition, reasons []string) (bool, error)

func (f confirmerFunc) Confirm(ctx context.Context, call tools.ToolCallRequest, def tools.ToolDefinition, reasons []string) (bool, error) {
	return f(ctx, call, def, reasons)
}

// answer is a confirmer that always answers approved, err.
func answer(approved bool, err error) tools.Confirmer {
	return confirmerFunc(func(context.Context, tools.ToolCallRequest, tools.ToolDefinition, []string) (bool, error) {
		return approved, err
	})
}

// atCall exposes every tool and decides every call with d, err.
func atCall(d tools.Decision, err error) tools.Policy {
	return policyFunc(func(_ context.Context, in tools.PolicyInput) (tools.Decision, error) {
		if in.Phase == tools.PhaseExpose {
			return tools.Decision{Allow: true}, nil
		}
		return d, err
	})
}

// echo answers with the arguments it received.
var echo = tools.ExecutorFunc(func(_ context.Context, call tools.ToolCallRequest, _ tools.ExecutionContext) (string, error) {
	return call.Arguments, nil
})

// fixedNow is the clock of the design's example conversation.
var fixedNow = time.Date(2026, 6, 27, 15, 52, 6, 344631000, time.UTC)

var writeFileParameters = json.RawMessage(`{
	"type": "object",
	"properties": {
		"path": {"type": "string"},
		"content": {"type": "string"},
		"mode": {"type": "integer", "minimum": 0}
	},
	"required": ["path"],
	"additionalProperties": false
}`)

// NewTestService returns a service with get_current_time on a fixed clock,
// write_file (running exec, echo if nil), ping (no parameters, echo) and
// off (disabled). Unless opts says otherwise, the service's clock stands
// still and logs are dropped.
func NewTestService(tb testing.TB, policy tools.Policy, exec tools.Executor, opts tools.Options) *tools.ToolService {
	tb.Helper()
	if policy == nil {
		policy = allowAll
	}
	if exec == nil {
		exec = echo
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = func() time.Time { return fixedNow } // DurationMS is 0
	}
	s := tools.NewToolService(policy, opts)
	def, clock := tools.CurrentTimeTool(func() time.Time { return fixedNow })
	MustRegister(tb, s, def, clock)
	MustRegister(tb, s, tools.ToolDefinition{Name: "write_file", Parameters: writeFileParameters, RiskLevel: tools.RiskHigh}, exec)
	MustRegister(tb, s, tools.ToolDefinition{Name: "ping"}, echo)
	MustRegister(tb, s, tools.ToolDefinition{Name: "off", Disabled: true}, echo)
	return s
}

const hint = "send a JSON object that matches the tool's parameters schema"

var executeTests = []struct {
	name   string
	policy tools.Policy // nil means allowAll
	exec   tools.Executor
	ec     tools.ExecutionContext
	call   tools.ToolCallRequest
	want   tools.ToolResult // ToolCallID and ToolName are taken from call
}{
	{
		name: "Success",
		call: tools.ToolCallRequest{Name: "get_current_time", Arguments: `{}`},
		want: tools.ToolResult{Status: tools.StatusSuccess, Content: `{"now":"2026-06-27T15:52:06.344631+00:00"}`},
	},
	{
		name: "EmptyArgumentsMeanEmptyObject",
		call: tools.ToolCallRequest{Name: "ping", Arguments: ""},
		want: tools.ToolResult{Status: tools.StatusSuccess, Content: `{}`},
	},
	{
		name: "BlankArgumentsMeanEmptyObject",
		call: tools.ToolCallRequest{Name: "ping", Arguments: " \n"},
		want: tools.ToolResult{Status: tools.StatusSuccess, Content: `{}`},
	},
	{
		name: "ArgumentsPassedAsSent",
		call: tools.ToolCallRequest{Name: "write_file", Arguments: `{"path": "a.txt", "mode": 420}`},
		want: tools.ToolResult{Status: tools.StatusSuccess, Content: `{"path": "a.txt", "mode": 420}`},
	},
	{
		name: "UnknownTool",
		call: tools.ToolCallRequest{Name: "get_time", Arguments: `{}`},
		want: tools.ToolResult{Status: tools.StatusError, Error: "unknown tool",
			Content: `tool "get_time" does not exist; available tools: get_current_time, write_file, ping`},
	},
	{
		name: "UnknownToolListsOnlyExposed",
		policy: policyFunc(func(_ context.Context, in tools.PolicyInput) (tools.Decision, error) {
			return tools.Decision{Allow: in.Tool.Name == "ping"}, nil
		}),
		call: tools.ToolCallRequest{Name: "nope"},
		want: tools.ToolResult{Status: tools.StatusError, Error: "unknown tool",
			Content: `tool "nope" does not exist; available tools: ping`},
	},
	{
		name:   "UnknownToolNoneAvailable",
		policy: policyFunc(func(context.Context, tools.PolicyInput) (tools.Decision, error) { return tools.Decision{}, nil }),
		call:   tools.ToolCallRequest{Name: "nope"},
		want:   tools.ToolResult{Status: tools.StatusError, Error: "unknown tool", Content: `tool "nope" does not exist; no tools are available`},
	},
	{
		name: "MalformedJSONTruncated",
		call: tools.ToolCallRequest{Name: "get_current_time", Arguments: `{"timezone":`},
		want: tools.ToolResult{Status: tools.StatusError, Error: "invalid arguments: not valid JSON",
			Content: "invalid arguments for get_current_time: not valid JSON (unexpected end of JSON input at offset 12); " + hint},
	},
	{
		name: "MalformedJSONTrailingData",
		call: tools.ToolCallRequest{Name: "write_file", Arguments: `{"path":"a"} {"path":"b"}`},
		want: tools.ToolResult{Status: tools.StatusError, Error: "invalid arguments: not valid JSON",
			Content: "invalid arguments for write_file: not valid JSON (invalid character '{' after top-level value at offset 14); " + hint},
	},
	{
		name: "MalformedJSONSingleQuotes",
		call: tools.ToolCallRequest{Name: "write_file", Arguments: `{'path':'a'}`},
		want: tools.ToolResult{Status: tools.StatusError, Error: "invalid arguments: not valid JSON",
			Content: "invalid arguments for write_file: not valid JSON (invalid character '\\'' looking for beginning of object key string at offset 2); " + hint},
	},
	{
		name: "SchemaWrongType",
		call: tools.ToolCallRequest{Name: "get_current_time", Arguments: `{"timezone": 8}`},
		want: tools.ToolResult{Status: tools.StatusError, Error: "invalid arguments: schema violations",
			Content: "invalid arguments for get_current_time: 1 schema violation:\n- at /timezone: got number, want string\n" + hint},
	},
	{
		name: "SchemaMissingRequired",
		call: tools.ToolCallRequest{Name: "write_file", Arguments: `{"content": "hi"}`},
		want: tools.ToolResult{Status: tools.StatusError, Error: "invalid arguments: schema violations",
			Content: "invalid arguments for write_file: 1 schema violation:\n- at (root): missing property 'path'\n" + hint},
	},
	{
		name: "SchemaAdditionalProperty",
		call: tools.ToolCallRequest{Name: "get_current_time", Arguments: `{"tz": "UTC"}`},
		want: tools.ToolResult{Status: tools.StatusError, Error: "invalid arguments: schema violations",
			Content: "invalid arguments for get_current_time: 1 schema violation:\n- at (root): additional properties 'tz' not allowed\n" + hint},
	},
	{
		name: "SchemaSeveralViolationsSorted",
		call: tools.ToolCallRequest{Name: "write_file", Arguments: `{"path": 1, "mode": -1, "extra": true}`},
		want: tools.ToolResult{Status: tools.StatusError, Error: "invalid arguments: schema violations",
			Content: "invalid arguments for write_file: 3 schema violations:\n" +
				"- at (root): additional properties 'extra' not allowed\n" +
				"- at /mode: minimum: got -1, want 0\n" +
				"- at /path: got number, want string\n" + hint},
	},
	{
		name: "SchemaNotAnObject",
		call: tools.ToolCallRequest{Name: "ping", Arguments: `["a"]`},
		want: tools.ToolResult{Status: tools.StatusError, Error: "invalid arguments: schema violations",
			Content: "invalid arguments for ping: 1 schema violation:\n- at (root): got array, want object\n" + hint},
	},
	{
		name: "Disabled",
		call: tools.ToolCallRequest{Name: "off"},
		want: tools.ToolResult{Status: tools.StatusDenied, Error: "tool is disabled", Content: "call to off denied: tool is disabled"},
	},
	{
		name:   "PolicyDeny",
		policy: atCall(tools.Decision{Reasons: []string{"outside office hours", "path is read-only"}}, nil),
		call:   tools.ToolCallRequest{Name: "write_file", Arguments: `{"path":"a"}`},
		want: tools.ToolResult{Status: tools.StatusDenied, Error: "denied by policy",
			Content: "call to write_file denied: outside office hours; path is read-only"},
	},
	{
		name:   "PolicyDenyWithoutReasons",
		policy: atCall(tools.Decision{}, nil),
		call:   tools.ToolCallRequest{Name: "write_file", Arguments: `{"path":"a"}`},
		want:   tools.ToolResult{Status: tools.StatusDenied, Error: "denied by policy", Content: "call to write_file denied: not allowed by policy"},
	},
	{
		name:   "PolicyError",
		policy: atCall(tools.Decision{Allow: true}, errors.New("rego: undefined ref")),
		call:   tools.ToolCallRequest{Name: "write_file", Arguments: `{"path":"a"}`},
		want: tools.ToolResult{Status: tools.StatusDenied, Error: "policy evaluation failed: rego: undefined ref",
			Content: "call to write_file denied: policy evaluation failed; denied (fail closed)"},
	},
	{
		name:   "PolicyPanic",
		policy: policyFunc(func(context.Context, tools.PolicyInput) (tools.Decision, error) { panic("policy bug") }),
		call:   tools.ToolCallRequest{Name: "write_file", Arguments: `{"path":"a"}`},
		want:   tools.ToolResult{Status: tools.StatusError, Error: "internal error", Content: "write_file failed: internal error"},
	},
	{
		name:   "ConfirmerPanic",
		policy: tools.RiskPolicy{},
		ec: tools.ExecutionContext{AgentContext: tools.AgentPrimary, Confirmer: confirmerFunc(func(context.Context, tools.ToolCallRequest, tools.ToolDefinition, []string) (bool, error) {
			panic("confirmer bug")
		})},
		call: tools.ToolCallRequest{Name: "write_file", Arguments: `{"path":"a"}`},
		want: tools.ToolResult{Status: tools.StatusError, Error: "internal error", Content: "write_file failed: internal error"},
	},
	{
		name:   "ConfirmWithoutConfirmer",
		policy: tools.RiskPolicy{},
		ec:     tools.ExecutionContext{AgentContext: tools.AgentPrimary},
		call:   tools.ToolCallRequest{Name: "write_file", Arguments: `{"path":"a"}`},
		want: tools.ToolResult{Status: tools.StatusDenied, Error: "confirmation unavailable",
			Content: "call to write_file denied: requires confirmation, but no human can answer in this context"},
	},
	{
		name:   "ConfirmApproved",
		policy: tools.RiskPolicy{},
		ec:     tools.ExecutionContext{AgentContext: tools.AgentPrimary, Confirmer: answer(true, nil)},
		call:   tools.ToolCallRequest{Name: "write_file", Arguments: `{"path":"a"}`},
		want:   tools.ToolResult{Status: tools.StatusSuccess, Content: `{"path":"a"}`},
	},
	{
		name:   "ConfirmRejected",
		policy: tools.RiskPolicy{},
		ec:     tools.ExecutionContext{AgentContext: tools.AgentPrimary, Confirmer: answer(false, nil)},
		call:   tools.ToolCallRequest{Name: "write_file", Arguments: `{"path":"a"}`},
		want: tools.ToolResult{Status: tools.StatusDenied, Error: "rejected by the user",
			Content: "call to write_file denied: the user rejected this call"},
	},
	{
		name:   "ConfirmerError",
		policy: tools.RiskPolicy{},
		ec:     tools.ExecutionContext{AgentContext: tools.AgentPrimary, Confirmer: answer(true, errors.New("feishu card expired"))},
		call:   tools.ToolCallRequest{Name: "write_file", Arguments: `{"path":"a"}`},
		want: tools.ToolResult{Status: tools.StatusDenied, Error: "confirmation failed: feishu card expired",
			Content: "call to write_file denied: requires confirmation, and asking for it failed"},
	},
	{
		name:   "HighRiskInCronDenied",
		policy: tools.RiskPolicy{},
		ec:     tools.ExecutionContext{AgentContext: tools.AgentCron, Confirmer: answer(true, nil)},
		call:   tools.ToolCallRequest{Name: "write_file", Arguments: `{"path":"a"}`},
		want: tools.ToolResult{Status: tools.StatusDenied, Error: "denied by policy",
			Content: "call to write_file denied: high-risk tool needs a human's confirmation, and none can answer in a cron/unattended run"},
	},
	{
		name: "ExecutorError",
		exec: tools.ExecutorFunc(func(context.Context, tools.ToolCallRequest, tools.ExecutionContext) (string, error) {
			return "partial output is dropped", errors.New("disk full")
		}),
		call: tools.ToolCallRequest{Name: "write_file", Arguments: `{"path":"a"}`},
		want: tools.ToolResult{Status: tools.StatusError, Error: "disk full", Content: "write_file failed: disk full"},
	},
	{
		name: "ExecutorPanic",
		exec: tools.ExecutorFunc(func(context.Context, tools.ToolCallRequest, tools.ExecutionContext) (string, error) {
			panic("boom")
		}),
		call: tools.ToolCallRequest{Name: "write_file", Arguments: `{"path":"a"}`},
		want: tools.ToolResult{Status: tools.StatusError, Error: "internal error in the tool", Content: "write_file failed: internal error in the tool"},
	},
}

func TestToolService_Execute(t *testing.T) {
	for _, tt := range executeTests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewTestService(t, tt.policy, tt.exec, tools.Options{})
			tt.call.ID = "call_u8usl364ddpffrw3q5758dk3"
			got := s.Execute(context.Background(), tt.call, tt.ec)
			want := tt.want
			want.ToolCallID, want.ToolName = tt.call.ID, tt.call.Name
			if got != want {
				t.Errorf("Execute =\n%#v\nwant\n%#v", got, want)
			}
		})
	}
}

func TestToolService_ExecuteUnknownToolListIsBrief(t *testing.T) {
	s := tools.NewToolService(allowAll, tools.Options{})
	for i := range 35 {
		MustRegister(t, s, tool(fmt.Sprintf("t%02d", i), ""), echo)
	}
	got := s.Execute(context.Background(), tools.ToolCallRequest{ID: "c", Name: "t99"}, tools.ExecutionContext{})
	want := `tool "t99" does not exist; available tools: t00, t01, t02, t03, t04, t05, t06, t07, t08, t09, ` +
		`t10, t11, t12, t13, t14, t15, t16, t17, t18, t19, t20, t21, t22, t23, t24, t25, t26, t27, t28, t29 and 5 more`
	if got.Content != want {
		t.Errorf("Content =\n%s\nwant\n%s", got.Content, want)
	}
}

// TestToolService_ExecuteWiring checks what the policy, the confirmer and the
// executor receive, and the identity and duration of the result.
func TestToolService_ExecuteWiring(t *testing.T) {
	start := time.Date(2026, 6, 27, 15, 52, 6, 0, time.UTC)
	var policyIn tools.PolicyInput
	var confirmReasons []string
	var execCall tools.ToolCallRequest
	var execEC tools.ExecutionContext
	policy := policyFunc(func(_ context.Context, in tools.PolicyInput) (tools.Decision, error) {
		policyIn = in
		return tools.Decision{Allow: true, Confirm: true, Reasons: []string{"writes to disk"}}, nil
	})
	exec := tools.ExecutorFunc(func(_ context.Context, call tools.ToolCallRequest, ec tools.ExecutionContext) (string, error) {
		execCall, execEC = call, ec
		return "ok", nil
	})
	s := NewTestService(t, policy, exec, tools.Options{Now: stepClock(start, 7*time.Millisecond)})
	ec := tools.ExecutionContext{
		SessionID:    "s1",
		AgentContext: tools.AgentSubagent,
		Confirmer: confirmerFunc(func(_ context.Context, call tools.ToolCallRequest, def tools.ToolDefinition, reasons []string) (bool, error) {
			if call.ID != "call_1" || def.Name != "write_file" {
				return false, fmt.Errorf("asked about %s/%s", call.ID, def.Name)
			}
			confirmReasons = reasons
			return true, nil
		}),
	}
	args := `{"path": "notes.md"}`
	got := s.Execute(context.Background(), tools.ToolCallRequest{ID: "call_1", Name: "write_file", Arguments: args}, ec)

	want := tools.ToolResult{ToolCallID: "call_1", ToolName: "write_file", Status: tools.StatusSuccess, Content: "ok", DurationMS: 7}
	if got != want {
		t.Errorf("Execute = %+v, want %+v", got, want)
	}
	if policyIn.Phase != tools.PhaseCall || policyIn.Tool.Name != "write_file" || string(policyIn.Args) != args ||
		policyIn.Exec.SessionID != "s1" || !policyIn.Time.Equal(start) {
		t.Errorf("policy input = %+v", policyIn)
	}
	if len(confirmReasons) != 1 || confirmReasons[0] != "writes to disk" {
		t.Errorf("confirmer reasons = %q", confirmReasons)
	}
	if execCall.ID != "call_1" || execCall.Arguments != args || execEC.SessionID != "s1" {
		t.Errorf("executor got %+v, %+v", execCall, execEC)
	}
}

func TestToolService_ExecutePolicySeesEmptyObjectForEmptyArguments(t *testing.T) {
	var args string
	policy := policyFunc(func(_ context.Context, in tools.PolicyInput) (tools.Decision, error) {
		args = string(in.Args)
		return tools.Decision{Allow: true}, nil
	})
	s := NewTestService(t, policy, nil, tools.Options{})
	s.Execute(context.Background(), tools.ToolCallRequest{ID: "c", Name: "ping"}, tools.ExecutionContext{})
	if args != "{}" {
		t.Errorf("policy args = %q, want {}", args)
	}
}

func TestToolService_ExecutePanicIsLogged(t *testing.T) {
	var logs bytes.Buffer
	exec := tools.ExecutorFunc(func(context.Context, tools.ToolCallRequest, tools.ExecutionContext) (string, error) {
		panic("secret detail for the log only")
	})
	s := NewTestService(t, nil, exec, tools.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	got := s.Execute(context.Background(), tools.ToolCallRequest{ID: "c", Name: "write_file", Arguments: `{"path":"a"}`}, tools.ExecutionContext{})
	if got.Status != tools.StatusError || strings.Contains(got.Content, "secret") {
		t.Errorf("Execute = %+v", got)
	}
	if !strings.Contains(logs.String(), "tool executor panicked") || !strings.Contains(logs.String(), "secret detail for the log only") {
		t.Errorf("log = %s", logs.String())
	}
}

// block is an executor that waits for ctx to end, or, if it ignores ctx,
// for release.
func block(honourCtx bool, release <-chan struct{}) tools.Executor {
	return tools.ExecutorFunc(func(ctx context.Context, _ tools.ToolCallRequest, _ tools.ExecutionContext) (string, error) {
		if honourCtx {
			<-ctx.Done()
			return "", ctx.Err()
		}
		<-release
		return "too late", nil
	})
}

var timeoutTests = []struct {
	name      string
	timeout   any // the timeout_ms constraint
	honourCtx bool
	want      string
}{
	{name: "Float64", timeout: float64(30), honourCtx: true, want: "write_file failed: timed out after 30ms"},
	{name: "Int", timeout: 25, honourCtx: true, want: "write_file failed: timed out after 25ms"},
	{name: "JSONNumber", timeout: json.Number("40"), honourCtx: true, want: "write_file failed: timed out after 40ms"},
	{name: "ExecutorIgnoresContext", timeout: 20, honourCtx: false, want: "write_file failed: timed out after 20ms"},
	{name: "InvalidFallsBackToDefault", timeout: "soon", honourCtx: true, want: "write_file failed: timed out after 50ms"},
	{name: "ZeroFallsBackToDefault", timeout: 0, honourCtx: true, want: "write_file failed: timed out after 50ms"},
}

func TestToolService_ExecuteTimeout(t *testing.T) {
	for _, tt := range timeoutTests {
		t.Run(tt.name, func(t *testing.T) {
			release := make(chan struct{})
			defer close(release)
			policy := atCall(tools.Decision{Allow: true, Constraints: map[string]any{"timeout_ms": tt.timeout}}, nil)
			s := NewTestService(t, policy, block(tt.honourCtx, release), tools.Options{DefaultTimeout: 50 * time.Millisecond})
			began := time.Now()
			got := s.Execute(context.Background(), tools.ToolCallRequest{ID: "c", Name: "write_file", Arguments: `{"path":"a"}`}, tools.ExecutionContext{})
			if got.Status != tools.StatusError || got.Content != tt.want {
				t.Errorf("Execute = %+v, want error %q", got, tt.want)
			}
			if elapsed := time.Since(began); elapsed > 5*time.Second {
				t.Errorf("Execute took %s", elapsed)
			}
		})
	}
}

func TestToolService_ExecuteCallerCancels(t *testing.T) {
	s := NewTestService(t, nil, block(true, nil), tools.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	got := s.Execute(ctx, tools.ToolCallRequest{ID: "c", Name: "write_file", Arguments: `{"path":"a"}`}, tools.ExecutionContext{})
	if want := "write_file failed: interrupted: context canceled"; got.Status != tools.StatusError || got.Content != want {
		t.Errorf("Execute = %+v, want error %q", got, want)
	}
}

func TestToolService_ExecuteTruncates(t *testing.T) {
	content := strings.Repeat("日本語", 20) // 180 bytes, 3 per rune
	for _, tt := range []struct {
		name        string
		maxBytes    int
		constraints map[string]any
		want        string
	}{
		{name: "UnderLimit", maxBytes: 180, want: content},
		{name: "Option", maxBytes: 60, want: "日本語日本\n…[truncated 150 bytes]…\n本語日本語"},
		{name: "ConstraintLowers", maxBytes: 1000, constraints: map[string]any{"max_output_bytes": 60}, want: "日本語日本\n…[truncated 150 bytes]…\n本語日本語"},
		{name: "ConstraintCannotRaise", maxBytes: 60, constraints: map[string]any{"max_output_bytes": 10000}, want: "日本語日本\n…[truncated 150 bytes]…\n本語日本語"},
		{name: "TinyLimitKeepsHead", maxBytes: 10, want: "日本語"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := NewTestService(t, atCall(tools.Decision{Allow: true, Constraints: tt.constraints}, nil), reply(content), tools.Options{MaxResultBytes: tt.maxBytes})
			got := s.Execute(context.Background(), tools.ToolCallRequest{ID: "c", Name: "write_file", Arguments: `{"path":"a"}`}, tools.ExecutionContext{})
			if got.Status != tools.StatusSuccess || got.Content != tt.want {
				t.Errorf("Execute = %+v, want content %q", got, tt.want)
			}
		})
	}
}

// TestToolService_ExecuteTruncationInvariants checks, for every limit, that
// the capped content fits, is valid UTF-8, starts with the original head,
// ends with its tail, and counts the dropped bytes exactly.
func TestToolService_ExecuteTruncationInvariants(t *testing.T) {
	content := strings.Repeat("ascii é 日本 🙂 ", 40) // 1-, 2-, 3- and 4-byte runes
	for limit := 28; limit <= len(content)+1; limit++ {
		s := NewTestService(t, nil, reply(content), tools.Options{MaxResultBytes: limit})
		got := s.Execute(context.Background(), tools.ToolCallRequest{ID: "c", Name: "write_file", Arguments: `{"path":"a"}`}, tools.ExecutionContext{}).Content
		if len(got) > limit || !utf8.ValidString(got) {
			t.Fatalf("limit %d: %d bytes, valid UTF-8 %v", limit, len(got), utf8.ValidString(got))
		}
		if limit >= len(content) {
			if got != content {
				t.Fatalf("limit %d: content changed", limit)
			}
			continue
		}
		head, rest, ok := strings.Cut(got, "\n…[truncated ")
		if !ok {
			continue // limit too small for a marker: head only
		}
		countText, tail, ok := strings.Cut(rest, " bytes]…\n")
		var dropped int
		if _, err := fmt.Sscan(countText, &dropped); !ok || err != nil {
			t.Fatalf("limit %d: bad marker in %q", limit, got)
		}
		if !strings.HasPrefix(content, head) || !strings.HasSuffix(content, tail) || len(head)+dropped+len(tail) != len(content) {
			t.Fatalf("limit %d: head %d + dropped %d + tail %d != %d", limit, len(head), dropped, len(tail), len(content))
		}
		if len(head) == 0 || len(tail) == 0 {
			t.Fatalf("limit %d: lost the head or the tail: %q", limit, got)
		}
	}
}

func TestToolService_ExecuteTruncatesErrors(t *testing.T) {
	exec := tools.ExecutorFunc(func(context.Context, tools.ToolCallRequest, tools.ExecutionContext) (string, error) {
		return "", errors.New(strings.Repeat("x", 1000))
	})
	s := NewTestService(t, nil, exec, tools.Options{MaxResultBytes: 100})
	got := s.Execute(context.Background(), tools.ToolCallRequest{ID: "c", Name: "write_file", Arguments: `{"path":"a"}`}, tools.ExecutionContext{})
	if got.Status != tools.StatusError || len(got.Content) > 100 || !strings.HasPrefix(got.Content, "write_file failed: xxx") {
		t.Errorf("Execute = %+v", got)
	}
}

func TestToolService_ExecuteDoesNotHoldLockWhileRunning(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	exec := tools.ExecutorFunc(func(context.Context, tools.ToolCallRequest, tools.ExecutionContext) (string, error) {
		close(entered)
		<-release
		return "done", nil
	})
	s := NewTestService(t, nil, exec, tools.Options{})
	var wg sync.WaitGroup
	var got tools.ToolResult
	wg.Go(func() {
		got = s.Execute(context.Background(), tools.ToolCallRequest{ID: "c", Name: "write_file", Arguments: `{"path":"a"}`}, tools.ExecutionContext{})
	})
	<-entered
	// Writers must get through while the executor runs.
	MustSetSlot(t, s, tools.SourceMCP, reply("mcp"), "remote")
	s.ClearSlot(tools.SourceMCP)
	close(release)
	wg.Wait()
	if got.Content != "done" {
		t.Errorf("Execute = %+v", got)
	}
}

func BenchmarkToolServiceExecute(b *testing.B) {
	s := tools.NewToolService(tools.RiskPolicy{}, tools.Options{})
	def, exec := tools.CurrentTimeTool(nil)
	MustRegister(b, s, def, exec)
	ctx := context.Background()
	ec := tools.ExecutionContext{SessionID: "s1", AgentContext: tools.AgentPrimary, ToolExposurePolicy: tools.ExposureDefault}
	call := tools.ToolCallRequest{ID: "call_1", Name: "get_current_time", Arguments: `{"timezone":"Asia/Shanghai"}`}
	b.ReportAllocs()
	for b.Loop() {
		if res := s.Execute(ctx, call, ec); res.Status != tools.StatusSuccess {
			b.Fatalf("Execute = %+v", res)
		}
	}
}
