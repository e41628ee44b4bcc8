# The built-in tool policy of N-Agent. The engine evaluates
# data.nagent.tools.decision once per tool when the tools of a run are
# exposed to the model (input.phase == "expose") and once per call
# (input.phase == "call"). policy/README.md documents the input document.
#
# The decision is derived from three partial rules that admin files in the
# same package extend:
#
#   deny contains reason if { ... }      any deny hides the tool / refuses the call
#   confirm contains reason if { ... }   a human must approve each call
#   constraints[key] := value if { ... } limits of the call (timeout_ms, max_output_bytes)
package nagent.tools

# decision is undefined for an input that is not a tool decision, which the
# engine treats as a denial (fail closed). A denial gives every deny reason;
# an allowed call gives the confirm reasons. (One rule with else, rather
# than a rule per field, keeps a decision around 30 µs.)
decision := {
	"allow": false,
	"confirm": false,
	"reasons": sort(deny),
	"constraints": constraints,
} if {
	valid_input
	count(deny) > 0
} else := {
	"allow": true,
	"confirm": count(confirm) > 0,
	"reasons": sort(confirm),
	"constraints": constraints,
} if valid_input

# Equalities rather than `in`, so that OPA's rule index picks the rule.
valid_input if {
	input.phase == "call"
	is_string(input.tool.name)
}

valid_input if {
	input.phase == "expose"
	is_string(input.tool.name)
}

# Runs no human watches: a confirm cannot be answered there.
unattended if input.agent_context == "cron"

unattended if input.agent_context == "unattended"

# --- Built-in rules -----------------------------------------------------

deny contains "tool is disabled" if input.tool.disabled == true

# A managed tool must be listed in the run's permitted_managed_tools.
deny contains msg if {
	input.tool.managed == true
	not managed_tool_permitted
	msg := sprintf("managed tool %s is not in this run's permitted_managed_tools", [input.tool.name])
}

# A helper rule, not `not x in list`: in Rego a negated expression over an
# undefined reference (no list at all) is itself undefined, which would
# silently allow the tool.
managed_tool_permitted if input.tool.name in input.permitted_managed_tools

deny contains "tool_exposure_policy safe_only hides tools of source agent" if {
	input.tool_exposure_policy == "safe_only"
	input.tool.source_type == "agent"
}

deny contains "execute_code is not available in a cron/unattended run" if {
	input.tool.name == "execute_code"
	unattended
}

# execute_code is SAFE whatever its declared risk: its safety boundary is the
# sandbox, not a confirmation gate.
confirm contains "high-risk tool needs a human's confirmation" if {
	input.tool.risk_level == "high"
	input.tool.name != "execute_code"
}

# Fail closed: any confirm (built-in or an admin's) is a denial where no
# human can answer. Confirm rules must therefore not refer to deny.
deny contains msg if {
	unattended
	some reason in confirm
	msg := sprintf("%s, and no human can answer in a %s run", [reason, input.agent_context])
}

# Per-tool limits from data, e.g. in $NAGENT_HOME/policies/data.yaml:
#
#   nagent:
#     tool_limits:
#       execute_code: {timeout_ms: 120000, max_output_bytes: 65536}
constraints[key] := value if {
	some key, value in data.nagent.tool_limits[input.tool.name]
}
