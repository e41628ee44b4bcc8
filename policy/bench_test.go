package policy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nagent/nagent/policy"
	"github.com/nagent/nagent/runtime/tools"
)

var benchNow = time.Date(2026, 6, 27, 15, 52, 6, 0, time.UTC)

func benchEngine(b *testing.B, dir string) *policy.Engine {
	return MustNewEngine(b, policy.Options{Dir: dir})
}

var benchExec = tools.ExecutionContext{
	SessionID: "sess_bench", Source: "api", AgentContext: tools.AgentPrimary,
	ToolExposurePolicy: tools.ExposureDefault, PermittedManagedTools: []string{"crm_export"},
	TrustedMetadata: map[string]any{"tenant": "acme"},
}

// BenchmarkDecideCall measures one call decision with the embedded defaults:
// input construction, evaluation and decision parsing (no audit trail).
func BenchmarkDecideCall(b *testing.B) {
	e := benchEngine(b, "")
	in := tools.PolicyInput{
		Phase: tools.PhaseCall, Time: benchNow, Exec: benchExec,
		Tool: tools.ToolDefinition{Name: "send_email", RiskLevel: tools.RiskHigh, SourceType: tools.SourceMCP},
		Args: json.RawMessage(`{"to":"ops@example.com","subject":"nightly report","body":"all green"}`),
	}
	ctx := context.Background()
	var lat []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		d, err := e.Decide(ctx, in)
		lat = append(lat, time.Since(start))
		if err != nil || !d.Allow || !d.Confirm {
			b.Fatalf("decision = %+v, %v", d, err)
		}
	}
	reportPercentiles(b, lat)
}

// reportPercentiles adds the median and 99th percentile of lat to the
// benchmark's output: on a noisy machine the mean hides the typical call.
func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// exposureTools is a registry of 200 tools of every source and risk.
func exposureTools() []tools.ToolDefinition {
	sources := []tools.SourceType{tools.SourceBuiltin, tools.SourceSkill, tools.SourceKnowledge, tools.SourceMCP, tools.SourcePlugin, tools.SourceAgent}
	risks := []tools.RiskLevel{tools.RiskSafe, tools.RiskLow, tools.RiskMedium, tools.RiskHigh}
	defs := make([]tools.ToolDefinition, 200)
	for i := range defs {
		defs[i] = tools.ToolDefinition{
			Name: fmt.Sprintf("tool_%03d", i), SourceType: sources[i%len(sources)], RiskLevel: risks[i%len(risks)],
			Managed: i%10 == 0,
		}
	}
	return defs
}

// toolService registers the 200 tools in a ToolService deciding with pol.
func toolService(b *testing.B, pol tools.Policy) *tools.ToolService {
	ts := tools.NewToolService(pol, tools.Options{Now: func() time.Time { return benchNow }})
	for _, def := range exposureTools() {
		if err := ts.Register(def, nil); err != nil {
			b.Fatal(err)
		}
	}
	return ts
}

// BenchmarkExpose200 is exposure filtering over 200 tools as one model call
// does it: ToolService.Definitions, one expose decision per tool.
//
//   - RiskPolicyGo: the former built-in Go rules, for reference.
//   - Cached: the embedded defaults, cache warm (every model call after the
//     first since the last reload: the key leaves out session.id).
//   - Uncached: a policy set that reads input.time, which turns the cache
//     off, so every tool is evaluated on every model call.
func BenchmarkExpose200(b *testing.B) {
	ctx := context.Background()
	run := func(b *testing.B, ts *tools.ToolService) {
		ts.Definitions(ctx, benchExec)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if n := len(ts.Definitions(ctx, benchExec)); n == 0 || n == 200 {
				b.Fatalf("exposed %d of 200", n)
			}
		}
	}
	b.Run("RiskPolicyGo", func(b *testing.B) { run(b, toolService(b, tools.RiskPolicy{})) })
	b.Run("Cached", func(b *testing.B) { run(b, toolService(b, benchEngine(b, ""))) })
	b.Run("Uncached", func(b *testing.B) {
		dir := b.TempDir()
		writeFile(b, dir, "clock.rego", "package nagent.tools\n\ndeny contains \"closed\" if input.time == \"never\"\n")
		e := benchEngine(b, dir)
		if e.CachesExposeDecisions() {
			b.Fatal("cache on")
		}
		run(b, toolService(b, e))
	})
}
