# The built-in external-memory policy of N-Agent. The engine evaluates
# data.nagent.memory.decision before a write to external memory; admin files
# in the same package add their own deny rules. policy/README.md documents
# the input document.
package nagent.memory

# decision is undefined for an input that is not a memory decision, which the
# engine treats as a denial (fail closed).
decision := {"allow": allow, "reasons": sort(deny)} if valid_input

valid_input if {
	is_string(input.operation)
	is_string(input.provider)
}

default allow := false

allow if count(deny) == 0

# By default a subagent or a cron run cannot write builtin memory: what the
# agent remembers about the user is written while a human is in the loop.
deny contains msg if {
	input.provider == "builtin"
	input.agent_context in {"subagent", "cron"}
	msg := sprintf("a %s run cannot write builtin memory", [input.agent_context])
}
