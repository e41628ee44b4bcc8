package scheduler_test

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/llm/scripted"
	"github.com/nagent/nagent/runtime/scheduler"
	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/store"
)

func defNames(defs []tools.ToolDefinition) []string {
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
	}
	return names
}

// TestCronRunIsSafeOnlyWithoutConfirmation drives a scheduled run through
// the real policy engine and ToolService: tools of source agent and
// execute_code are not exposed, and a tool whose policy decision is confirm
// is denied, since no human watches a cron run. The same tools are exposed
// to a primary run, so the difference is the cron execution context.
func TestCronRunIsSafeOnlyWithoutConfirmation(t *testing.T) {
	e := newEnv(t,
		scripted.Reply{ToolCalls: []llm.ToolCall{
			{ID: "call_wipe", Name: "wipe_disk", Arguments: `{}`},
			{ID: "call_code", Name: "execute_code", Arguments: `{"code":"print(1)"}`},
			{ID: "call_agent", Name: "delegate_task", Arguments: `{}`},
		}},
		scripted.Reply{Content: "could not do it"},
	)
	ctx := context.Background()
	var ran atomic.Int32
	exec := tools.ExecutorFunc(func(context.Context, tools.ToolCallRequest, tools.ExecutionContext) (string, error) {
		ran.Add(1)
		return "ran", nil
	})
	ts := e.app.Tools
	if err := ts.Register(tools.ToolDefinition{Name: "wipe_disk", Description: "erases a disk", RiskLevel: tools.RiskHigh}, exec); err != nil {
		t.Fatal(err)
	}
	if err := ts.SetSlot(tools.SourceAgent, []tools.ToolDefinition{{Name: "delegate_task", Description: "hands a task to a subagent", RiskLevel: tools.RiskLow}}, exec); err != nil {
		t.Fatal(err)
	}
	primary := tools.ExecutionContext{AgentContext: tools.AgentPrimary, ToolExposurePolicy: tools.ExposureDefault}
	if !slices.Contains(defNames(ts.Definitions(ctx, primary)), "execute_code") {
		// The sandbox is not wired here: stand in for it with the same name.
		if err := ts.Register(tools.ToolDefinition{Name: "execute_code", Description: "runs Python", RiskLevel: tools.RiskMedium}, exec); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"wipe_disk", "execute_code", "delegate_task", "get_current_time"} {
		if !slices.Contains(defNames(ts.Definitions(ctx, primary)), name) {
			t.Fatalf("control: %s is not exposed to a primary run", name)
		}
	}

	s := e.add(t, scheduler.NewSchedule{Name: "risky", Kind: "every", Spec: "1h", Prompt: "clean up"})
	run, err := e.sched.RunNow(ctx, "risky")
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != store.RunCompleted {
		t.Fatalf("run = %+v", run)
	}
	cron := scheduler.CronExecutionContext(s, run.ID)
	if cron.AgentContext != tools.AgentCron || cron.ToolExposurePolicy != tools.ExposureSafeOnly || cron.Confirmer != nil {
		t.Fatalf("cron execution context = %+v", cron)
	}

	exposed := toolSpecNames(e.model.Requests()[0].Tools)
	for _, hidden := range []string{"wipe_disk", "execute_code", "delegate_task"} {
		if slices.Contains(exposed, hidden) {
			t.Errorf("%s was exposed to a cron run: %v", hidden, exposed)
		}
	}
	if !slices.Contains(exposed, "get_current_time") {
		t.Errorf("safe tools are missing from a cron run: %v", exposed)
	}

	// The model called them anyway: every call is denied, none ran.
	calls, err := e.app.DB.ListToolCalls(ctx, run.SessionID)
	if err != nil || len(calls) != 3 {
		t.Fatalf("tool calls = %+v, %v", calls, err)
	}
	want := map[string]string{
		"wipe_disk":     "high-risk tool needs a human's confirmation, and no human can answer in a cron run",
		"execute_code":  "execute_code is not available in a cron/unattended run",
		"delegate_task": "safe_only hides tools of source agent",
	}
	for _, c := range calls {
		if c.Status != "denied" || !strings.Contains(c.Result, want[c.Name]) {
			t.Errorf("%s: %s %q; want denied mentioning %q", c.Name, c.Status, c.Result, want[c.Name])
		}
	}
	if n := ran.Load(); n != 0 {
		t.Errorf("%d denied tools ran", n)
	}

	// The confirm decision itself: the policy says confirm for wipe_disk in
	// a primary run, and ToolService denies it when no Confirmer is set, as
	// in every cron run.
	d, err := e.app.Policy.Decide(ctx, tools.PolicyInput{Phase: tools.PhaseCall,
		Tool: tools.ToolDefinition{Name: "wipe_disk", RiskLevel: tools.RiskHigh, SourceType: tools.SourceBuiltin}, Exec: primary})
	if err != nil || !d.Allow || !d.Confirm {
		t.Fatalf("primary decision = %+v, %v; want confirm", d, err)
	}
	cronLike := primary // a primary run with no human: the Confirmer is nil as in cron
	res := ts.Execute(ctx, tools.ToolCallRequest{ID: "c1", Name: "wipe_disk", Arguments: "{}"}, cronLike)
	if res.Status != tools.StatusDenied || !strings.Contains(res.Content, "no human can answer") {
		t.Errorf("confirm without a confirmer = %+v", res)
	}
	if ran.Load() != 0 {
		t.Error("a confirm-gated tool ran without confirmation")
	}
}

func toolSpecNames(specs []llm.ToolSpec) []string {
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
	}
	return names
}
