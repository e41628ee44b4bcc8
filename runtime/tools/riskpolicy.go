package tools

import (
	"context"
	"slices"
)

// ExecuteCodeTool is the name of the sandbox tool, which runs model-written
// code and is kept from runs no human watches.
const ExecuteCodeTool = "execute_code"

// RiskPolicy is the built-in Policy, used until the Rego engine lands. It
// takes the same decision at PhaseExpose and PhaseCall, applying the first
// rule that matches:
//
//  1. a disabled tool is denied;
//  2. a managed tool not in ec.PermittedManagedTools is denied;
//  3. tool_exposure_policy safe_only denies tools of source agent;
//  4. a cron or unattended run is denied execute_code;
//  5. a high-risk tool needs confirmation: Allow and Confirm in any other
//     agent context, denied in cron and unattended runs;
//  6. anything else is allowed.
//
// A confirm decision is Allow=true, Confirm=true: the tool is exposed, and
// each call waits for a human's approval.
type RiskPolicy struct{}

var _ Policy = RiskPolicy{}

// Decide applies the rules above. It never fails.
func (RiskPolicy) Decide(_ context.Context, in PolicyInput) (Decision, error) {
	t, ec := in.Tool, in.Exec
	unattended := ec.AgentContext == AgentCron || ec.AgentContext == AgentUnattended
	switch {
	case t.Disabled:
		return deny("tool is disabled"), nil
	case t.Managed && !slices.Contains(ec.PermittedManagedTools, t.Name):
		return deny("managed tool " + t.Name + " is not in this run's permitted_managed_tools"), nil
	case ec.ToolExposurePolicy == ExposureSafeOnly && t.SourceType == SourceAgent:
		return deny("tool_exposure_policy safe_only hides tools of source agent"), nil
	case unattended && t.Name == ExecuteCodeTool:
		return deny(ExecuteCodeTool + " is not available in a cron/unattended run"), nil
	case t.RiskLevel == RiskHigh && unattended:
		return deny("high-risk tool needs a human's confirmation, and none can answer in a cron/unattended run"), nil
	case t.RiskLevel == RiskHigh:
		return Decision{Allow: true, Confirm: true, Reasons: []string{"high-risk tool needs a human's confirmation"}}, nil
	default:
		return Decision{Allow: true}, nil
	}
}

func deny(reason string) Decision {
	return Decision{Reasons: []string{reason}}
}
