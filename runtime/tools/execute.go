package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"strings"
	"time"
)

// Constraint keys a policy Decision may set at PhaseCall.
const (
	// ConstraintTimeoutMS (number, > 0) replaces Options.DefaultTimeout for the call.
	ConstraintTimeoutMS = "timeout_ms"
	// ConstraintMaxOutputBytes (number, > 0) lowers Options.MaxResultBytes for the call.
	ConstraintMaxOutputBytes = "max_output_bytes"
)

// maxListedTools bounds the tool names listed to the model after it calls an
// unknown tool.
const maxListedTools = 30

// errToolTimeout is the cause of the context of a call that ran out of time.
var errToolTimeout = errors.New("tool call timed out")

// Execute runs one call through the common path and never fails: every
// outcome, including a panic in the executor, the policy or the confirmer,
// is a ToolResult.
//
//  1. Look up the definition. Unknown → error; disabled → denied.
//  2. Parse the arguments ("" means {}) and validate them against the
//     compiled schema. Malformed JSON or violations → error.
//  3. Ask the policy (PhaseCall). An evaluation error or !Allow → denied.
//     Allow with Confirm asks ec.Confirmer; no confirmer, a rejection or a
//     confirmer error → denied.
//  4. Run the routed executor with a timeout (the timeout_ms constraint, else
//     Options.DefaultTimeout). An error, a timeout, a cancellation or a
//     panic → error.
//  5. Cap the content at Options.MaxResultBytes, or at the max_output_bytes
//     constraint if smaller, keeping head and tail.
//
// Content format: on success, the executor's content. On error and denied,
// plain text written for the model, naming the tool and saying what to do
// where it can, e.g.
//
//	invalid arguments for get_current_time: 1 schema violation:
//	- at /timezone: got number, want string
//	send a JSON object that matches the tool's parameters schema
//	call to run_shell denied: high-risk tool needs a human's confirmation, ...
//	get_current_time failed: unknown timezone "Mars/Base"; use an IANA name ...
//
// An executor's error message is shown to the model as is, so executors
// should write it for the model. A panic's details go to the log only.
// ToolResult.Error holds a short description for logs and events.
func (s *ToolService) Execute(ctx context.Context, call ToolCallRequest, ec ExecutionContext) (res ToolResult) {
	start := s.opts.Now()
	defer func() {
		// A panic outside the executor (a policy, a confirmer) must not
		// break the agent loop either; the call has not run.
		if v := recover(); v != nil {
			s.opts.Logger.ErrorContext(ctx, "tool call panicked",
				"tool", call.Name, "tool_call_id", call.ID, "session_id", ec.SessionID,
				"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			res = failed(StatusError, "internal error", call.Name+" failed: internal error")
		}
		res.ToolCallID = call.ID
		res.ToolName = call.Name
		res.DurationMS = s.opts.Now().Sub(start).Milliseconds()
	}()
	return s.execute(ctx, call, ec, start)
}

func (s *ToolService) execute(ctx context.Context, call ToolCallRequest, ec ExecutionContext, start time.Time) ToolResult {
	s.mu.RLock()
	r, ok := s.tools[call.Name]
	s.mu.RUnlock()
	if !ok {
		return failed(StatusError, "unknown tool", s.unknownToolMessage(ctx, call.Name, ec))
	}
	def := r.def
	if def.Disabled {
		return failed(StatusDenied, "tool is disabled", deniedMessage(def.Name, "tool is disabled"))
	}

	raw, doc, msg := parseArguments(def.Name, call.Arguments)
	if msg != "" {
		return failed(StatusError, "invalid arguments: not valid JSON", msg)
	}
	if msg := validateArguments(def.Name, r.schema, doc); msg != "" {
		return failed(StatusError, "invalid arguments: schema violations", msg)
	}
	call.Arguments = string(raw)

	d, err := s.policy.Decide(ctx, PolicyInput{Phase: PhaseCall, Tool: def, Args: raw, Exec: ec, Time: start})
	if err != nil {
		s.opts.Logger.WarnContext(ctx, "tool policy failed; call denied",
			"phase", PhaseCall, "tool", def.Name, "tool_call_id", call.ID, "session_id", ec.SessionID, "err", err)
		return failed(StatusDenied, "policy evaluation failed: "+err.Error(),
			deniedMessage(def.Name, "policy evaluation failed; denied (fail closed)"))
	}
	if !d.Allow {
		why := strings.Join(d.Reasons, "; ")
		if why == "" {
			why = "not allowed by policy"
		}
		return failed(StatusDenied, "denied by policy", deniedMessage(def.Name, why))
	}
	if d.Confirm {
		if res, ok := s.confirm(ctx, call, def, d, ec); !ok {
			return res
		}
	}

	content, err := s.run(ctx, call, ec, timeoutFor(d, s.opts.DefaultTimeout))
	limit := s.opts.MaxResultBytes
	if n, ok := positiveConstraint(d.Constraints, ConstraintMaxOutputBytes); ok && n < float64(limit) {
		limit = int(n)
	}
	if err != nil {
		return failed(StatusError, err.Error(), truncateMiddle(def.Name+" failed: "+err.Error(), limit))
	}
	return ToolResult{Status: StatusSuccess, Content: truncateMiddle(content, limit)}
}

// confirm asks ec.Confirmer about a call the policy marked confirm. It
// returns ok=true when a human approved.
func (s *ToolService) confirm(ctx context.Context, call ToolCallRequest, def ToolDefinition, d Decision, ec ExecutionContext) (ToolResult, bool) {
	if ec.Confirmer == nil {
		return failed(StatusDenied, "confirmation unavailable",
			deniedMessage(def.Name, "requires confirmation, but no human can answer in this context")), false
	}
	approved, err := ec.Confirmer.Confirm(ctx, call, def, d.Reasons)
	if err != nil {
		s.opts.Logger.WarnContext(ctx, "tool confirmation failed; call denied",
			"tool", def.Name, "tool_call_id", call.ID, "session_id", ec.SessionID, "err", err)
		return failed(StatusDenied, "confirmation failed: "+err.Error(),
			deniedMessage(def.Name, "requires confirmation, and asking for it failed")), false
	}
	if !approved {
		return failed(StatusDenied, "rejected by the user",
			deniedMessage(def.Name, "the user rejected this call")), false
	}
	return ToolResult{}, true
}

// run calls the routed executor under a timeout. The executor runs in its
// own goroutine so that a call returns when its time is up even if the
// executor ignores ctx; such an executor keeps its goroutine until it
// returns. The returned error is written for the model.
func (s *ToolService) run(ctx context.Context, call ToolCallRequest, ec ExecutionContext, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errToolTimeout)
	defer cancel()

	type outcome struct {
		content string
		err     error
	}
	done := make(chan outcome, 1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				s.opts.Logger.ErrorContext(ctx, "tool executor panicked",
					"tool", call.Name, "tool_call_id", call.ID, "session_id", ec.SessionID,
					"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				done <- outcome{err: errors.New("internal error in the tool")}
			}
		}()
		content, err := s.exec.Execute(ctx, call, ec)
		done <- outcome{content, err}
	}()

	select {
	case out := <-done:
		if out.err != nil && ctx.Err() != nil {
			// The executor gave up because the context ended; say why.
			return "", interrupted(ctx, timeout)
		}
		return out.content, out.err
	case <-ctx.Done():
		return "", interrupted(ctx, timeout)
	}
}

// interrupted explains why a call's context ended: its own timeout, or the
// caller's cancellation.
func interrupted(ctx context.Context, timeout time.Duration) error {
	if context.Cause(ctx) == errToolTimeout {
		return fmt.Errorf("timed out after %s", timeout)
	}
	return fmt.Errorf("interrupted: %w", context.Cause(ctx))
}

// timeoutFor returns the timeout_ms constraint of d, else def.
func timeoutFor(d Decision, def time.Duration) time.Duration {
	ms, ok := positiveConstraint(d.Constraints, ConstraintTimeoutMS)
	if !ok {
		return def
	}
	if ms >= float64(math.MaxInt64/int64(time.Millisecond)) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(ms * float64(time.Millisecond))
}

// positiveConstraint reads a positive number from constraints. Policies
// written in Rego hand numbers over as json.Number or float64; Go policies
// may use any numeric type.
func positiveConstraint(constraints map[string]any, key string) (float64, bool) {
	var f float64
	switch v := constraints[key].(type) {
	case float64:
		f = v
	case float32:
		f = float64(v)
	case int:
		f = float64(v)
	case int32:
		f = float64(v)
	case int64:
		f = float64(v)
	case uint:
		f = float64(v)
	case uint32:
		f = float64(v)
	case uint64:
		f = float64(v)
	case json.Number:
		var err error
		if f, err = v.Float64(); err != nil {
			return 0, false
		}
	default:
		return 0, false
	}
	if !(f > 0) || math.IsInf(f, 1) {
		return 0, false
	}
	return f, true
}

// unknownToolMessage tells the model that name does not exist and lists the
// tools it can call here, briefly.
func (s *ToolService) unknownToolMessage(ctx context.Context, name string, ec ExecutionContext) string {
	defs := s.Definitions(ctx, ec)
	names := make([]string, 0, min(len(defs), maxListedTools))
	for _, d := range defs[:min(len(defs), maxListedTools)] {
		names = append(names, d.Name)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "tool %q does not exist", name)
	switch {
	case len(names) == 0:
		b.WriteString("; no tools are available")
	default:
		b.WriteString("; available tools: ")
		b.WriteString(strings.Join(names, ", "))
		if more := len(defs) - len(names); more > 0 {
			fmt.Fprintf(&b, " and %d more", more)
		}
	}
	return b.String()
}

// deniedMessage is the model-visible content of a denied call.
func deniedMessage(tool, why string) string {
	return "call to " + tool + " denied: " + why
}

// failed builds an error or denied result; Execute fills in the identity
// and duration.
func failed(status Status, short, content string) ToolResult {
	return ToolResult{Status: status, Error: short, Content: content}
}
