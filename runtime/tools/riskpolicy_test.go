package tools_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/nagent/nagent/runtime/tools"
)

var (
	allow   = tools.Decision{Allow: true}
	confirm = tools.Decision{Allow: true, Confirm: true, Reasons: []string{"high-risk tool needs a human's confirmation"}}
)

func deny(reason string) tools.Decision { return tools.Decision{Reasons: []string{reason}} }

var riskPolicyTests = []struct {
	name string
	tool tools.ToolDefinition
	ec   tools.ExecutionContext
	want tools.Decision
}{
	{name: "SafeAllowed", tool: tools.ToolDefinition{Name: "get_current_time", RiskLevel: tools.RiskSafe},
		ec: tools.ExecutionContext{AgentContext: tools.AgentPrimary}, want: allow},
	{name: "MediumAllowedInCron", tool: tools.ToolDefinition{Name: "search", RiskLevel: tools.RiskMedium},
		ec: tools.ExecutionContext{AgentContext: tools.AgentCron}, want: allow},

	{name: "Disabled", tool: tools.ToolDefinition{Name: "t", Disabled: true},
		ec: tools.ExecutionContext{AgentContext: tools.AgentPrimary}, want: deny("tool is disabled")},
	{name: "DisabledWinsOverEverything", tool: tools.ToolDefinition{Name: "execute_code", Disabled: true, Managed: true, RiskLevel: tools.RiskHigh, SourceType: tools.SourceAgent},
		ec: tools.ExecutionContext{AgentContext: tools.AgentCron, ToolExposurePolicy: tools.ExposureSafeOnly}, want: deny("tool is disabled")},

	{name: "ManagedNotPermitted", tool: tools.ToolDefinition{Name: "crm_export", Managed: true},
		ec:   tools.ExecutionContext{AgentContext: tools.AgentPrimary, PermittedManagedTools: []string{"crm_read"}},
		want: deny("managed tool crm_export is not in this run's permitted_managed_tools")},
	{name: "ManagedNoneListed", tool: tools.ToolDefinition{Name: "crm_export", Managed: true},
		ec:   tools.ExecutionContext{AgentContext: tools.AgentPrimary},
		want: deny("managed tool crm_export is not in this run's permitted_managed_tools")},
	{name: "ManagedPermitted", tool: tools.ToolDefinition{Name: "crm_export", Managed: true},
		ec: tools.ExecutionContext{AgentContext: tools.AgentPrimary, PermittedManagedTools: []string{"crm_read", "crm_export"}}, want: allow},

	{name: "SafeOnlyHidesAgentSource", tool: tools.ToolDefinition{Name: "delegate", SourceType: tools.SourceAgent, RiskLevel: tools.RiskSafe},
		ec: tools.ExecutionContext{AgentContext: tools.AgentPrimary, ToolExposurePolicy: tools.ExposureSafeOnly}, want: deny("tool_exposure_policy safe_only hides tools of source agent")},
	{name: "SafeOnlyKeepsOtherSources", tool: tools.ToolDefinition{Name: "search", SourceType: tools.SourceMCP},
		ec: tools.ExecutionContext{AgentContext: tools.AgentPrimary, ToolExposurePolicy: tools.ExposureSafeOnly}, want: allow},
	{name: "DefaultExposureKeepsAgentSource", tool: tools.ToolDefinition{Name: "delegate", SourceType: tools.SourceAgent},
		ec: tools.ExecutionContext{AgentContext: tools.AgentPrimary, ToolExposurePolicy: tools.ExposureDefault}, want: allow},

	{name: "ExecuteCodeCron", tool: tools.ToolDefinition{Name: "execute_code", RiskLevel: tools.RiskSafe},
		ec: tools.ExecutionContext{AgentContext: tools.AgentCron}, want: deny("execute_code is not available in a cron/unattended run")},
	{name: "ExecuteCodeUnattended", tool: tools.ToolDefinition{Name: "execute_code", RiskLevel: tools.RiskSafe},
		ec: tools.ExecutionContext{AgentContext: tools.AgentUnattended}, want: deny("execute_code is not available in a cron/unattended run")},
	{name: "ExecuteCodePrimary", tool: tools.ToolDefinition{Name: "execute_code", RiskLevel: tools.RiskSafe},
		ec: tools.ExecutionContext{AgentContext: tools.AgentPrimary}, want: allow},
	{name: "ExecuteCodeSubagent", tool: tools.ToolDefinition{Name: "execute_code", RiskLevel: tools.RiskSafe},
		ec: tools.ExecutionContext{AgentContext: tools.AgentSubagent}, want: allow},

	{name: "HighRiskPrimaryConfirms", tool: tools.ToolDefinition{Name: "send_email", RiskLevel: tools.RiskHigh},
		ec: tools.ExecutionContext{AgentContext: tools.AgentPrimary}, want: confirm},
	{name: "HighRiskSubagentConfirms", tool: tools.ToolDefinition{Name: "send_email", RiskLevel: tools.RiskHigh},
		ec: tools.ExecutionContext{AgentContext: tools.AgentSubagent}, want: confirm},
	{name: "HighRiskUnknownContextConfirms", tool: tools.ToolDefinition{Name: "send_email", RiskLevel: tools.RiskHigh},
		ec: tools.ExecutionContext{}, want: confirm},
	{name: "HighRiskCronDenied", tool: tools.ToolDefinition{Name: "send_email", RiskLevel: tools.RiskHigh},
		ec: tools.ExecutionContext{AgentContext: tools.AgentCron}, want: deny("high-risk tool needs a human's confirmation, and none can answer in a cron/unattended run")},
	{name: "HighRiskUnattendedDenied", tool: tools.ToolDefinition{Name: "send_email", RiskLevel: tools.RiskHigh},
		ec: tools.ExecutionContext{AgentContext: tools.AgentUnattended}, want: deny("high-risk tool needs a human's confirmation, and none can answer in a cron/unattended run")},
	{name: "HighRiskManagedPermittedConfirms", tool: tools.ToolDefinition{Name: "wire_money", RiskLevel: tools.RiskHigh, Managed: true},
		ec: tools.ExecutionContext{AgentContext: tools.AgentPrimary, PermittedManagedTools: []string{"wire_money"}}, want: confirm},
}

func TestRiskPolicy(t *testing.T) {
	for _, tt := range riskPolicyTests {
		for _, phase := range []tools.Phase{tools.PhaseExpose, tools.PhaseCall} {
			t.Run(tt.name+"/"+string(phase), func(t *testing.T) {
				got, err := tools.RiskPolicy{}.Decide(context.Background(), tools.PolicyInput{Phase: phase, Tool: tt.tool, Exec: tt.ec})
				if err != nil {
					t.Fatalf("Decide: %v", err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("Decide = %+v, want %+v", got, tt.want)
				}
			})
		}
	}
}

// TestRiskPolicy_Exposure checks the policy through ToolService.Definitions:
// a confirm decision exposes the tool, a denial hides it.
func TestRiskPolicy_Exposure(t *testing.T) {
	s := tools.NewToolService(nil, tools.Options{}) // nil policy means RiskPolicy
	MustRegister(t, s, tools.ToolDefinition{Name: "get_current_time"}, echo)
	MustRegister(t, s, tools.ToolDefinition{Name: "execute_code"}, echo)
	MustRegister(t, s, tools.ToolDefinition{Name: "send_email", RiskLevel: tools.RiskHigh}, echo)
	MustSetSlot(t, s, tools.SourceAgent, echo, "delegate")

	for _, tt := range []struct {
		ec   tools.ExecutionContext
		want []string
	}{
		{tools.ExecutionContext{AgentContext: tools.AgentPrimary}, []string{"get_current_time", "execute_code", "send_email", "delegate"}},
		{tools.ExecutionContext{AgentContext: tools.AgentPrimary, ToolExposurePolicy: tools.ExposureSafeOnly}, []string{"get_current_time", "execute_code", "send_email"}},
		{tools.ExecutionContext{AgentContext: tools.AgentCron}, []string{"get_current_time", "delegate"}},
	} {
		if got := exposed(s, tt.ec); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Definitions(%s/%s) = %v, want %v", tt.ec.AgentContext, tt.ec.ToolExposurePolicy, got, tt.want)
		}
	}
}
