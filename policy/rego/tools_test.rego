# Unit tests of tools.rego; run them with `nagent policy test`.
package nagent.tools_test

import data.nagent.tools

# base is a call of a safe builtin tool in an interactive run.
base := {
	"phase": "call",
	"tool": {"name": "get_current_time", "source_type": "builtin", "risk_level": "safe", "managed": false, "disabled": false},
	"args": {},
	"session": {"id": "s1", "source": "cli"},
	"agent_context": "primary",
	"tool_exposure_policy": "default",
	"execution_context_mode": "",
	"trusted_metadata": {},
	"permitted_managed_tools": [],
	"time": "2026-06-27T15:52:06Z",
}

# patched(patch) is base with patch merged in (recursively).
patched(patch) := object.union(base, patch)

allowed(d) if {
	d.allow == true
	d.confirm == false
	d.reasons == []
}

denied(d, reason) if {
	d.allow == false
	d.confirm == false
	reason in d.reasons
}

confirmed(d, reason) if {
	d.allow == true
	d.confirm == true
	d.reasons == [reason]
}

test_safe_tool_allowed if {
	allowed(tools.decision) with input as base
}

test_safe_tool_allowed_at_expose if {
	allowed(tools.decision) with input as patched({"phase": "expose"})
}

test_medium_risk_allowed_in_cron if {
	allowed(tools.decision) with input as patched({"agent_context": "cron", "tool": {"risk_level": "medium"}})
}

test_disabled_denied if {
	denied(tools.decision, "tool is disabled") with input as patched({"tool": {"disabled": true}})
}

test_managed_not_permitted_denied if {
	d := tools.decision with input as patched({"tool": {"name": "crm_export", "managed": true}, "permitted_managed_tools": ["crm_read"]})
	denied(d, "managed tool crm_export is not in this run's permitted_managed_tools")
}

test_managed_without_list_denied if {
	inp := json.remove(patched({"tool": {"name": "crm_export", "managed": true}}), ["permitted_managed_tools"])
	denied(tools.decision, "managed tool crm_export is not in this run's permitted_managed_tools") with input as inp
}

test_managed_permitted_allowed if {
	d := tools.decision with input as patched({"tool": {"name": "crm_export", "managed": true}, "permitted_managed_tools": ["crm_read", "crm_export"]})
	allowed(d)
}

test_safe_only_hides_agent_source if {
	d := tools.decision with input as patched({"tool_exposure_policy": "safe_only", "tool": {"source_type": "agent"}})
	denied(d, "tool_exposure_policy safe_only hides tools of source agent")
}

test_safe_only_keeps_other_sources if {
	allowed(tools.decision) with input as patched({"tool_exposure_policy": "safe_only", "tool": {"source_type": "mcp"}})
}

test_default_exposure_keeps_agent_source if {
	allowed(tools.decision) with input as patched({"tool": {"source_type": "agent"}})
}

test_execute_code_denied_in_cron if {
	d := tools.decision with input as patched({"agent_context": "cron", "tool": {"name": "execute_code"}})
	denied(d, "execute_code is not available in a cron/unattended run")
}

test_execute_code_denied_unattended if {
	d := tools.decision with input as patched({"agent_context": "unattended", "tool": {"name": "execute_code"}})
	denied(d, "execute_code is not available in a cron/unattended run")
}

test_execute_code_allowed_for_primary_and_subagent if {
	allowed(tools.decision) with input as patched({"tool": {"name": "execute_code"}})
	allowed(tools.decision) with input as patched({"agent_context": "subagent", "tool": {"name": "execute_code"}})
}

test_execute_code_never_confirms if {
	allowed(tools.decision) with input as patched({"tool": {"name": "execute_code", "risk_level": "high"}})
}

test_high_risk_confirms_in_interactive_contexts if {
	every ctx in ["primary", "subagent", ""] {
		d := tools.decision with input as patched({"agent_context": ctx, "tool": {"name": "send_email", "risk_level": "high"}})
		confirmed(d, "high-risk tool needs a human's confirmation")
	}
}

test_high_risk_denied_where_no_human_answers if {
	every ctx in ["cron", "unattended"] {
		d := tools.decision with input as patched({"agent_context": ctx, "tool": {"name": "send_email", "risk_level": "high"}})
		denied(d, sprintf("high-risk tool needs a human's confirmation, and no human can answer in a %s run", [ctx]))
	}
}

test_deny_reasons_win_over_confirm if {
	d := tools.decision with input as patched({"tool": {"risk_level": "high", "disabled": true}})
	d.allow == false
	d.confirm == false
	d.reasons == ["tool is disabled"]
}

test_every_deny_reason_is_listed if {
	d := tools.decision with input as patched({"agent_context": "cron", "tool": {"name": "execute_code", "disabled": true}})
	d.reasons == ["execute_code is not available in a cron/unattended run", "tool is disabled"]
}

test_tool_limits_become_constraints if {
	d := tools.decision with input as base
		with data.nagent.tool_limits as {"get_current_time": {"timeout_ms": 500, "max_output_bytes": 1024}}
	d.constraints == {"timeout_ms": 500, "max_output_bytes": 1024}
}

test_no_limits_no_constraints if {
	d := tools.decision with input as base
	d.constraints == {}
}

test_unknown_phase_is_undefined if {
	not tools.decision with input as patched({"phase": "later"})
}

test_missing_tool_is_undefined if {
	not tools.decision with input as json.remove(base, ["tool"])
}
