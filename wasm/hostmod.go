package wasm

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/store"
)

// hostModuleName is the import module of the optional host functions.
const hostModuleName = "nagent"

// Return codes of host functions that return an i32 (see README.md).
const (
	codeNotFound = -1 // kv_get: no such key
	codeFailed   = -2 // the call failed; last_result holds {"error": "..."}
)

// Bounds on what a plugin may hand the host in one call.
const (
	maxLogBytes      = 4 << 10
	maxKeyBytes      = 256
	maxValueBytes    = 1 << 20
	maxRequestBytes  = 8 << 20
	maxRedirects     = 5
	auditDetailBytes = 200
)

type hostFunction struct {
	params, results []api.ValueType
	fn              func(ctx context.Context, st *callState, mod api.Module, stack []uint64)
}

var i32 = api.ValueTypeI32

// hostFunctions is the nagent module; README.md documents each function.
var hostFunctions = map[string]hostFunction{
	"log":          {[]api.ValueType{i32, i32, i32}, nil, hostLog},
	"http_request": {[]api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}, hostHTTPRequest},
	"kv_get":       {[]api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}, hostKVGet},
	"kv_set":       {[]api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}, hostKVSet},
	"kv_delete":    {[]api.ValueType{i32, i32}, []api.ValueType{i32}, hostKVDelete},
	"last_result":  {[]api.ValueType{i32, i32}, []api.ValueType{i32}, hostLastResult},
	tickFunction:   {nil, nil, hostTick},
}

// instantiateHostModule adds the nagent module to a plugin's runtime. The
// functions find the call they serve through the context.
func instantiateHostModule(ctx context.Context, rt wazero.Runtime) error {
	b := rt.NewHostModuleBuilder(hostModuleName)
	for name, f := range hostFunctions {
		b = b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
			st := stateFrom(ctx)
			if st == nil {
				panic("nagent." + name + " called outside a plugin call")
			}
			f.fn(ctx, st, mod, stack)
		}), f.params, f.results).Export(name)
	}
	_, err := b.Instantiate(ctx)
	return err
}

// read copies n bytes of guest memory at ptr.
func read(mod api.Module, ptr, n uint32) ([]byte, bool) {
	b, ok := mod.Memory().Read(ptr, n)
	if !ok {
		return nil, false
	}
	return append([]byte(nil), b...), true
}

// deliver keeps data as the last result and copies as much as fits into the
// guest's buffer; it returns the full length.
func (st *callState) deliver(mod api.Module, data []byte, outPtr, outCap uint32) int32 {
	st.mu.Lock()
	st.lastResult = data
	st.mu.Unlock()
	n := min(uint32(len(data)), outCap)
	if n > 0 && !mod.Memory().Write(outPtr, data[:n]) {
		return st.fail("the output buffer is outside the module's memory")
	}
	return int32(len(data))
}

// fail sets last_result to {"error": msg} and returns codeFailed.
func (st *callState) fail(msg string) int32 {
	b, _ := json.Marshal(map[string]string{"error": msg})
	st.mu.Lock()
	st.lastResult = b
	st.mu.Unlock()
	return codeFailed
}

// record appends one audit record.
func (st *callState) record(fn string, start time.Time, detail, outcome, errMsg string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.audit = append(st.audit, store.PluginHostCall{
		CreatedAt: start.UTC(), Plugin: st.plugin.manifest.Name, Tool: st.tool, SessionID: st.ec.SessionID,
		Function: fn, Detail: truncate(detail, auditDetailBytes), Outcome: outcome, Error: errMsg,
		DurationUS: time.Since(start).Microseconds(),
	})
}

// flushAudit hands a call's audit records to the auditor, even when the
// call failed or was cancelled.
func (p *plugin) flushAudit(ctx context.Context, st *callState) {
	st.mu.Lock()
	recs := st.audit
	st.audit = nil
	st.mu.Unlock()
	if len(recs) == 0 {
		return
	}
	log := p.host.opts.Log
	if p.host.opts.Store == nil {
		for _, r := range recs {
			log.InfoContext(ctx, "plugin host call", "plugin", r.Plugin, "tool", r.Tool, "session_id", r.SessionID,
				"function", r.Function, "detail", r.Detail, "outcome", r.Outcome, "error", r.Error)
		}
		return
	}
	p.host.audit.add(recs)
}

// tick() is imported by the loop-check rewrite (binary.go), never by
// plugins themselves: it returns to the module unless the call must stop.
// Being a Go call, it is also where Go's scheduler can preempt the plugin.
func hostTick(ctx context.Context, _ *callState, _ api.Module, _ []uint64) {
	if ctx.Err() != nil {
		panic(errStopped)
	}
}

// log(level, ptr, len): level 0 debug, 1 info, 2 warn, 3 error.
func hostLog(ctx context.Context, st *callState, mod api.Module, stack []uint64) {
	start := time.Now()
	level, ptr, n := int32(stack[0]), uint32(stack[1]), uint32(stack[2])
	msg, ok := read(mod, ptr, min(n, maxLogBytes))
	if !ok {
		st.record("log", start, "", "error", "message outside the module's memory")
		return
	}
	lv := map[int32]slog.Level{0: slog.LevelDebug, 1: slog.LevelInfo, 2: slog.LevelWarn, 3: slog.LevelError}[min(max(level, 0), 3)]
	text := strings.ToValidUTF8(string(msg), "\uFFFD")
	st.plugin.host.opts.Log.Log(ctx, lv, "plugin: "+text, "plugin", st.plugin.manifest.Name, "tool", st.tool, "session_id", st.ec.SessionID)
	st.record("log", start, lv.String()+": "+text, "ok", "")
}

// last_result(out_ptr, out_cap) -> len
func hostLastResult(_ context.Context, st *callState, mod api.Module, stack []uint64) {
	outPtr, outCap := uint32(stack[0]), uint32(stack[1])
	st.mu.Lock()
	data := st.lastResult
	st.mu.Unlock()
	stack[0] = api.EncodeI32(st.deliver(mod, data, outPtr, outCap))
}

// kv_get(key_ptr, key_len, out_ptr, out_cap) -> len | -1 | -2
func hostKVGet(ctx context.Context, st *callState, mod api.Module, stack []uint64) {
	start := time.Now()
	key, code := st.kvKey(mod, uint32(stack[0]), uint32(stack[1]))
	if code != 0 {
		st.record("kv_get", start, key, "error", "bad key")
		stack[0] = api.EncodeI32(code)
		return
	}
	v, found, err := st.plugin.host.opts.Store.PluginKVGet(ctx, st.plugin.manifest.Name, key)
	switch {
	case err != nil:
		st.record("kv_get", start, key, "error", err.Error())
		stack[0] = api.EncodeI32(st.fail("kv_get: the store failed"))
	case !found:
		st.record("kv_get", start, key+" (absent)", "ok", "")
		stack[0] = api.EncodeI32(codeNotFound)
	default:
		st.record("kv_get", start, key, "ok", "")
		stack[0] = api.EncodeI32(st.deliver(mod, v, uint32(stack[2]), uint32(stack[3])))
	}
}

// kv_set(key_ptr, key_len, val_ptr, val_len) -> 0 | -2
func hostKVSet(ctx context.Context, st *callState, mod api.Module, stack []uint64) {
	start := time.Now()
	key, code := st.kvKey(mod, uint32(stack[0]), uint32(stack[1]))
	if code != 0 {
		st.record("kv_set", start, key, "error", "bad key")
		stack[0] = api.EncodeI32(code)
		return
	}
	n := uint32(stack[3])
	if n > maxValueBytes {
		st.record("kv_set", start, key, "error", "value too large")
		stack[0] = api.EncodeI32(st.fail(fmt.Sprintf("kv_set: a value may have at most %d bytes", maxValueBytes)))
		return
	}
	v, ok := read(mod, uint32(stack[2]), n)
	if !ok {
		st.record("kv_set", start, key, "error", "value outside memory")
		stack[0] = api.EncodeI32(st.fail("kv_set: the value is outside the module's memory"))
		return
	}
	if err := st.plugin.host.opts.Store.PluginKVSet(ctx, st.plugin.manifest.Name, key, v); err != nil {
		st.record("kv_set", start, key, "error", err.Error())
		stack[0] = api.EncodeI32(st.fail("kv_set: the store failed"))
		return
	}
	st.record("kv_set", start, fmt.Sprintf("%s (%d bytes)", key, len(v)), "ok", "")
	stack[0] = 0
}

// kv_delete(key_ptr, key_len) -> 0 | -2
func hostKVDelete(ctx context.Context, st *callState, mod api.Module, stack []uint64) {
	start := time.Now()
	key, code := st.kvKey(mod, uint32(stack[0]), uint32(stack[1]))
	if code != 0 {
		st.record("kv_delete", start, key, "error", "bad key")
		stack[0] = api.EncodeI32(code)
		return
	}
	if err := st.plugin.host.opts.Store.PluginKVDelete(ctx, st.plugin.manifest.Name, key); err != nil {
		st.record("kv_delete", start, key, "error", err.Error())
		stack[0] = api.EncodeI32(st.fail("kv_delete: the store failed"))
		return
	}
	st.record("kv_delete", start, key, "ok", "")
	stack[0] = 0
}

// kvKey reads and checks a key; a non-zero code is the function's result.
func (st *callState) kvKey(mod api.Module, ptr, n uint32) (string, int32) {
	if st.plugin.host.opts.Store == nil {
		return "", st.fail("the key-value store is not available in this host")
	}
	if n == 0 || n > maxKeyBytes {
		return "", st.fail(fmt.Sprintf("a key must have 1 to %d bytes", maxKeyBytes))
	}
	k, ok := read(mod, ptr, n)
	if !ok {
		return "", st.fail("the key is outside the module's memory")
	}
	if !utf8.Valid(k) {
		return "", st.fail("a key must be UTF-8 text")
	}
	return string(k), 0
}

// httpRequest is the JSON a plugin passes to http_request.
type httpRequest struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

// httpResponse is the JSON http_request returns on success.
type httpResponse struct {
	Status     int               `json:"status"`
	Headers    map[string]string `json:"headers"`
	Body       string            `json:"body"`
	BodyBase64 string            `json:"body_base64,omitempty"`
}

// http_request(req_ptr, req_len, out_ptr, out_cap) -> len | -2
//
// The result is {"status","headers","body"} or {"error": "..."}; a refused
// or failed request is still a result (its length is returned), so a plugin
// can pass the error on.
func hostHTTPRequest(ctx context.Context, st *callState, mod api.Module, stack []uint64) {
	start := time.Now()
	n := uint32(stack[1])
	if n > maxRequestBytes {
		st.record("http_request", start, "", "error", "request too large")
		stack[0] = api.EncodeI32(st.fail(fmt.Sprintf("http_request: the request may have at most %d bytes", maxRequestBytes)))
		return
	}
	raw, ok := read(mod, uint32(stack[0]), n)
	if !ok {
		st.record("http_request", start, "", "error", "request outside memory")
		stack[0] = api.EncodeI32(st.fail("http_request: the request is outside the module's memory"))
		return
	}
	res, detail, outcome, errMsg := st.plugin.httpRequest(ctx, st, raw)
	st.record("http_request", start, detail, outcome, errMsg)
	if outcome != "ok" {
		res, _ = json.Marshal(map[string]string{"error": errMsg})
	}
	stack[0] = api.EncodeI32(st.deliver(mod, res, uint32(stack[2]), uint32(stack[3])))
}

// httpRequest checks and performs one request. outcome is "ok", "denied"
// or "error"; errMsg is written for the plugin (and through it the model).
func (p *plugin) httpRequest(ctx context.Context, st *callState, raw []byte) (res []byte, detail, outcome, errMsg string) {
	name := p.manifest.Name
	var req httpRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return nil, "", "error", "http_request: the request is not valid JSON: " + err.Error()
	}
	if req.Method == "" {
		req.Method = http.MethodGet
	}
	req.Method = strings.ToUpper(req.Method)
	detail = req.Method + " " + req.URL
	u, err := url.Parse(req.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, detail, "error", fmt.Sprintf("http_request: %q is not an absolute http or https URL", req.URL)
	}
	if !p.hostAllowed(u) {
		return nil, detail, "denied", fmt.Sprintf("http_request to %s refused: host %s is not in permissions.allowed_hosts of plugin %s", u.Redacted(), u.Host, name)
	}
	if why, ok := p.policyAllows(ctx, st, req.Method, u); !ok {
		return nil, detail, "denied", fmt.Sprintf("http_request to %s refused by policy: %s", u.Redacted(), why)
	}

	lim := p.manifest.Limits
	ctx, cancel := context.WithTimeout(ctx, lim.HTTPTimeout.Std())
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, req.Method, u.String(), strings.NewReader(req.Body))
	if err != nil {
		return nil, detail, "error", "http_request: " + err.Error()
	}
	for k, v := range req.Headers {
		hreq.Header.Set(k, v)
	}
	client := *p.host.opts.HTTPClient
	client.CheckRedirect = func(r *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		if !p.hostAllowed(r.URL) {
			return fmt.Errorf("redirect to host %s refused: not in permissions.allowed_hosts", r.URL.Host)
		}
		return nil
	}
	resp, err := client.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			return nil, detail, "error", fmt.Sprintf("http_request to %s timed out after %s (limits.http_timeout)", u.Redacted(), lim.HTTPTimeout.Std())
		}
		return nil, detail, "error", "http_request: " + err.Error()
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(lim.HTTPResponseBytes)+1))
	if err != nil {
		return nil, detail, "error", "http_request: reading the response: " + err.Error()
	}
	detail = fmt.Sprintf("%s -> %d", detail, resp.StatusCode)
	if len(body) > lim.HTTPResponseBytes {
		return nil, detail, "error", fmt.Sprintf("http_request: the response body is larger than %d bytes (limits.http_response_bytes)", lim.HTTPResponseBytes)
	}
	out := httpResponse{Status: resp.StatusCode, Headers: map[string]string{}}
	for k, v := range resp.Header {
		out.Headers[strings.ToLower(k)] = strings.Join(v, ", ")
	}
	if utf8.Valid(body) {
		out.Body = string(body)
	} else {
		out.BodyBase64 = base64.StdEncoding.EncodeToString(body)
	}
	res, err = json.Marshal(out)
	if err != nil {
		return nil, detail, "error", "http_request: " + err.Error()
	}
	return res, detail, "ok", ""
}

// hostAllowed matches u's host against permissions.allowed_hosts. A pattern
// without a port matches the host name ("[::1]" for IPv6); one with a port
// matches host:port, the port defaulting to the scheme's.
func (p *plugin) hostAllowed(u *url.URL) bool {
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	bare := host
	if strings.Contains(host, ":") {
		bare = "[" + host + "]"
	}
	for _, pat := range p.manifest.Permissions.AllowedHosts {
		pat = strings.ToLower(pat)
		subject := bare
		if patternHasPort(pat) {
			subject = net.JoinHostPort(host, port)
		}
		if ok, _ := path.Match(pat, subject); ok {
			return true
		}
	}
	return false
}

func patternHasPort(pat string) bool {
	if strings.HasPrefix(pat, "[") {
		return strings.Contains(pat, "]:")
	}
	return strings.Contains(pat, ":")
}

// policyAllows asks the policy about an http_request. The input is a
// call-phase decision for the plugin tool being run, whose args are
// {"host_call": "http_request", "method", "url", "host"} (see README.md).
// A confirm decision counts as allowed: the tool call itself was confirmed.
func (p *plugin) policyAllows(ctx context.Context, st *callState, method string, u *url.URL) (string, bool) {
	pol := p.host.opts.Policy
	if pol == nil {
		return "", true
	}
	def := tools.ToolDefinition{Name: st.tool, SourceType: tools.SourcePlugin, RiskLevel: tools.RiskMedium}
	for _, d := range p.defs {
		if d.Name == st.tool {
			def = d
		}
	}
	args, _ := json.Marshal(map[string]string{"host_call": "http_request", "method": method, "url": u.Redacted(), "host": u.Host})
	d, err := pol.Decide(ctx, tools.PolicyInput{Phase: tools.PhaseCall, Tool: def, Args: args, Exec: st.ec, Time: p.host.opts.Now()})
	if err != nil {
		return "policy evaluation failed (denied, fail closed)", false
	}
	if !d.Allow {
		why := strings.Join(d.Reasons, "; ")
		if why == "" {
			why = "not allowed by policy"
		}
		return why, false
	}
	return "", true
}
