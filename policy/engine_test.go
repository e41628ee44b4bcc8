package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nagent/nagent/policy"
	"github.com/nagent/nagent/runtime/tools"
)

var clock = tools.ToolDefinition{Name: "get_current_time", SourceType: tools.SourceBuiltin, RiskLevel: tools.RiskSafe}

func callInput(def tools.ToolDefinition, args string) tools.PolicyInput {
	return tools.PolicyInput{
		Phase: tools.PhaseCall, Tool: def, Args: json.RawMessage(args), Time: benchNow,
		Exec: tools.ExecutionContext{SessionID: "s1", Source: "api", AgentContext: tools.AgentPrimary, ToolExposurePolicy: tools.ExposureDefault},
	}
}

func exposeInput(def tools.ToolDefinition) tools.PolicyInput {
	in := callInput(def, "")
	in.Phase, in.Args = tools.PhaseExpose, nil
	return in
}

func mustDecide(tb testing.TB, e *policy.Engine, in tools.PolicyInput) tools.Decision {
	tb.Helper()
	d, err := e.Decide(context.Background(), in)
	if err != nil {
		tb.Fatalf("Decide: %v", err)
	}
	return d
}

const denyClock = `package nagent.tools

deny contains "clocks are off today" if input.tool.name == "get_current_time"
`

// TestInputDocument pins the documented input shape (README.md).
func TestInputDocument(t *testing.T) {
	in := callInput(clock, `{"timezone":"Asia/Shanghai"}`)
	in.Exec.TrustedMetadata = map[string]any{"tenant": "acme"}
	in.Exec.PermittedManagedTools = []string{"crm_export"}
	in.Exec.ExecutionContextMode = "interactive"
	got, err := policy.InputDocument(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `{
		"phase": "call",
		"tool": {"name": "get_current_time", "source_type": "builtin", "risk_level": "safe", "managed": false, "disabled": false},
		"args": {"timezone": "Asia/Shanghai"},
		"session": {"id": "s1", "source": "api"},
		"agent_context": "primary",
		"tool_exposure_policy": "default",
		"execution_context_mode": "interactive",
		"trusted_metadata": {"tenant": "acme"},
		"permitted_managed_tools": ["crm_export"],
		"time": "2026-06-27T15:52:06Z"
	}`
	if !jsonEqual(got, []byte(want)) {
		t.Errorf("input document =\n%s\nwant\n%s", got, want)
	}
	in.Phase = tools.PhaseExpose
	got, _ = policy.InputDocument(in)
	if strings.Contains(string(got), `"args"`) {
		t.Errorf("expose input carries args: %s", got)
	}
}

func TestDecideDefaults(t *testing.T) {
	e := MustNewEngine(t, policy.Options{})
	if d := mustDecide(t, e, callInput(clock, `{}`)); !d.Allow || d.Confirm {
		t.Errorf("clock = %+v, want allowed", d)
	}
	email := tools.ToolDefinition{Name: "send_email", RiskLevel: tools.RiskHigh, SourceType: tools.SourceMCP}
	if d := mustDecide(t, e, callInput(email, `{}`)); !d.Allow || !d.Confirm {
		t.Errorf("send_email = %+v, want confirm", d)
	}
	cron := callInput(email, `{}`)
	cron.Exec.AgentContext = tools.AgentCron
	if d := mustDecide(t, e, cron); d.Allow {
		t.Errorf("send_email in cron = %+v, want denied", d)
	}
}

// TestFailClosed: evaluation failures deny, and say so.
func TestFailClosed(t *testing.T) {
	t.Run("InvalidArguments", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "args.rego", "package nagent.tools\n\ndeny contains \"x\" if input.args.x == 1\n")
		e := MustNewEngine(t, policy.Options{Dir: dir})
		d, err := e.Decide(context.Background(), callInput(clock, `{"x":`))
		if err == nil || d.Allow || !strings.Contains(d.Reasons[0], "fail closed") {
			t.Errorf("Decide = %+v, %v; want a denial with an error", d, err)
		}
	})
	t.Run("Cancelled", func(t *testing.T) {
		e := MustNewEngine(t, policy.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		d, err := e.Decide(ctx, callInput(clock, `{}`))
		if err == nil || d.Allow {
			t.Errorf("Decide on a cancelled context = %+v, %v; want a denial", d, err)
		}
	})
	t.Run("MemoryUndefined", func(t *testing.T) {
		e := MustNewEngine(t, policy.Options{})
		d, err := e.EvalMemory(context.Background(), map[string]any{"provider": "builtin"})
		if !errors.Is(err, policy.ErrUndefined) || d.Allow {
			t.Errorf("EvalMemory = %+v, %v; want a refusal with ErrUndefined", d, err)
		}
	})
}

func TestDecideMemoryWrite(t *testing.T) {
	e := MustNewEngine(t, policy.Options{})
	for _, tt := range []struct {
		agent, provider string
		allow           bool
	}{
		{tools.AgentPrimary, "builtin", true},
		{tools.AgentSubagent, "builtin", false},
		{tools.AgentCron, "builtin", false},
		{tools.AgentSubagent, "project:website", true},
	} {
		d, err := e.DecideMemoryWrite(context.Background(), policy.MemoryWrite{
			Operation: "add", Provider: tt.provider, Target: "memory.md", AgentContext: tt.agent, SessionID: "s1", Source: "api",
		})
		if err != nil || d.Allow != tt.allow {
			t.Errorf("%s writing %s = %+v, %v; want allow=%t", tt.agent, tt.provider, d, err, tt.allow)
		}
	}
}

// TestReload: a file that fails to compile keeps the last good set in
// force and reports file and line; fixing it activates it.
func TestReload(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "clock.rego", denyClock)
	e := MustNewEngine(t, policy.Options{Dir: dir})
	if d := mustDecide(t, e, callInput(clock, `{}`)); d.Allow {
		t.Fatalf("admin deny not applied: %+v", d)
	}
	good := e.Revision()

	writeFile(t, dir, "clock.rego", "package nagent.tools\n\ndeny contains \"x\" if {\n\tinput.tool.name ==\n}\n")
	err := e.Reload(context.Background())
	var le *policy.LoadError
	if !errors.As(err, &le) || len(le.Problems) == 0 || le.Problems[0].Line != 5 || !strings.HasSuffix(le.Problems[0].File, "clock.rego") {
		t.Fatalf("Reload = %v, want a LoadError at clock.rego:5", err)
	}
	if e.LastError() == nil || e.Revision() != good {
		t.Errorf("LastError = %v, revision %s (want %s kept)", e.LastError(), e.Revision(), good)
	}
	if d := mustDecide(t, e, callInput(clock, `{}`)); d.Allow {
		t.Errorf("the last good rule was dropped: %+v", d)
	}
	if s := e.Status(); !strings.Contains(s, "clock.rego:5") || !strings.Contains(s, good) {
		t.Errorf("Status = %q", s)
	}

	if err := os.Remove(filepath.Join(dir, "clock.rego")); err != nil {
		t.Fatal(err)
	}
	if err := e.Reload(context.Background()); err != nil || e.LastError() != nil {
		t.Fatalf("Reload = %v, LastError = %v", err, e.LastError())
	}
	if e.Revision() == good {
		t.Error("revision unchanged after the files changed")
	}
	if d := mustDecide(t, e, callInput(clock, `{}`)); !d.Allow {
		t.Errorf("the removed rule still applies: %+v", d)
	}
}

// TestStartWithBrokenFile: a broken admin file at start-up leaves the
// embedded defaults in force, with the error reported.
func TestStartWithBrokenFile(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "good.rego", denyClock)
	writeFile(t, dir, "sub/broken.rego", "package nagent.tools\n\ndeny contains if\n")
	e := MustNewEngine(t, policy.Options{Dir: dir})
	if err := e.LastError(); err == nil || !strings.Contains(err.Error(), filepath.Join("sub", "broken.rego")+":3") {
		t.Fatalf("LastError = %v, want sub/broken.rego:3", err)
	}
	defaults := MustNewEngine(t, policy.Options{})
	if e.Revision() != defaults.Revision() {
		t.Errorf("revision %s, want the embedded defaults' %s", e.Revision(), defaults.Revision())
	}
	if d := mustDecide(t, e, callInput(clock, `{}`)); !d.Allow {
		t.Errorf("defaults only, yet %+v", d)
	}
}

// TestHotReload watches the directory: a change is picked up after the
// debounce, and a broken file keeps the old rule with the error reported.
func TestHotReload(t *testing.T) {
	dir := t.TempDir()
	e := MustNewEngine(t, policy.Options{Dir: dir, Debounce: 50 * time.Millisecond})
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	before := e.Revision()
	writeFile(t, dir, "clock.rego", denyClock)
	waitFor(t, "the new rule", func() bool { return !mustDecide(t, e, callInput(clock, `{}`)).Allow })
	if e.Revision() == before {
		t.Error("revision unchanged")
	}

	// A new subdirectory is watched too.
	writeFile(t, dir, "team/extra.rego", "package nagent.tools\n\ndeny contains \"no email\" if input.tool.name == \"send_email\"\n")
	email := tools.ToolDefinition{Name: "send_email", RiskLevel: tools.RiskLow}
	waitFor(t, "the rule in a new subdirectory", func() bool { return !mustDecide(t, e, callInput(email, `{}`)).Allow })

	good := e.Revision()
	writeFile(t, dir, "clock.rego", "package nagent.tools\n\ndeny contains \"oops\" if {\n")
	waitFor(t, "the load error", func() bool { return e.LastError() != nil })
	if e.Revision() != good || mustDecide(t, e, callInput(clock, `{}`)).Allow {
		t.Errorf("a broken file replaced the last good set (revision %s, want %s)", e.Revision(), good)
	}
}

func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestExposeCache: expose decisions are cached per policy set, unless a
// rule reads what the cache key leaves out.
func TestExposeCache(t *testing.T) {
	t.Run("DefaultsAreCached", func(t *testing.T) {
		e := MustNewEngine(t, policy.Options{})
		if !e.CachesExposeDecisions() {
			t.Fatal("the embedded defaults are not cacheable")
		}
		agent := tools.ToolDefinition{Name: "delegate", SourceType: tools.SourceAgent}
		in := exposeInput(agent)
		if !mustDecide(t, e, in).Allow {
			t.Fatal("agent tool hidden by default")
		}
		in.Exec.ToolExposurePolicy = tools.ExposureSafeOnly // a field in the key
		if mustDecide(t, e, in).Allow {
			t.Error("a cached decision ignored tool_exposure_policy")
		}
	})
	t.Run("ReloadDropsTheCache", func(t *testing.T) {
		dir := t.TempDir()
		e := MustNewEngine(t, policy.Options{Dir: dir})
		if !mustDecide(t, e, exposeInput(clock)).Allow {
			t.Fatal("clock hidden")
		}
		writeFile(t, dir, "clock.rego", denyClock)
		if err := e.Reload(context.Background()); err != nil {
			t.Fatal(err)
		}
		if mustDecide(t, e, exposeInput(clock)).Allow {
			t.Error("a decision cached under the old revision was served")
		}
	})
	volatile := []struct{ name, rule string }{
		{"Time", `deny contains "after hours" if input.time >= "2026-06-27T18:00:00Z"`},
		{"SessionID", `deny contains "not this one" if input.session.id == "s2"`},
		{"WholeInput", `deny contains "not this one" if object.get(input, ["session", "id"], "") == "s2"`},
		{"DynamicKey", `deny contains "x" if { some k in ["time"]; input[k] >= "2026-06-27T18:00:00Z" }`},
		{"Nondeterministic", `deny contains "x" if time.now_ns() < 0`},
	}
	for _, tt := range volatile {
		t.Run("Volatile"+tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "v.rego", "package nagent.tools\n\n"+tt.rule+"\n")
			e := MustNewEngine(t, policy.Options{Dir: dir})
			if err := e.LastError(); err != nil {
				t.Fatal(err)
			}
			if e.CachesExposeDecisions() {
				t.Fatal("expose decisions cached although a rule reads what the key leaves out")
			}
		})
	}
	// And the volatile rules do see each input.
	dir := t.TempDir()
	writeFile(t, dir, "v.rego", "package nagent.tools\n\n"+volatile[0].rule+"\n"+volatile[1].rule+"\n")
	e := MustNewEngine(t, policy.Options{Dir: dir})
	in := exposeInput(clock)
	if !mustDecide(t, e, in).Allow {
		t.Fatal("denied at 15:52 in s1")
	}
	in.Time = benchNow.Add(3 * time.Hour)
	if mustDecide(t, e, in).Allow {
		t.Error("after-hours rule did not see the new time")
	}
	in = exposeInput(clock)
	in.Exec.SessionID = "s2"
	if mustDecide(t, e, in).Allow {
		t.Error("session rule did not see the new session")
	}
}

// TestConcurrentDecideAndReload decides from many goroutines while the
// policy set is swapped; run it with -race.
func TestConcurrentDecideAndReload(t *testing.T) {
	dir := t.TempDir()
	e := MustNewEngine(t, policy.Options{Dir: dir})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				in := callInput(clock, `{}`)
				if i%2 == 0 {
					in = exposeInput(clock)
				}
				d, err := e.Decide(context.Background(), in)
				if err != nil {
					t.Error(err)
					return
				}
				// Either set, never a mix: a deny comes with its reason.
				if !d.Allow && (len(d.Reasons) != 1 || d.Reasons[0] != "clocks are off today") {
					t.Errorf("half a policy: %+v", d)
					return
				}
			}
		}()
	}
	for i := range 20 {
		if i%2 == 0 {
			writeFile(t, dir, "clock.rego", denyClock)
		} else {
			os.Remove(filepath.Join(dir, "clock.rego"))
		}
		if err := e.Reload(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	wg.Wait()
}
