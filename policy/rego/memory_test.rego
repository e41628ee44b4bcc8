# Unit tests of memory.rego; run them with `nagent policy test`.
package nagent.memory_test

import data.nagent.memory

base := {
	"operation": "write",
	"provider": "builtin",
	"target": "memory.md",
	"agent_context": "primary",
	"session": {"id": "s1", "source": "cli"},
	"trusted_metadata": {},
	"time": "2026-06-27T15:52:06Z",
}

test_primary_writes_builtin_memory if {
	d := memory.decision with input as base
	d == {"allow": true, "reasons": []}
}

test_subagent_cannot_write_builtin_memory if {
	d := memory.decision with input as object.union(base, {"agent_context": "subagent"})
	d == {"allow": false, "reasons": ["a subagent run cannot write builtin memory"]}
}

test_cron_cannot_write_builtin_memory if {
	d := memory.decision with input as object.union(base, {"agent_context": "cron"})
	d == {"allow": false, "reasons": ["a cron run cannot write builtin memory"]}
}

test_unattended_writes_builtin_memory if {
	d := memory.decision with input as object.union(base, {"agent_context": "unattended"})
	d.allow == true
}

test_subagent_writes_other_providers if {
	d := memory.decision with input as object.union(base, {"agent_context": "subagent", "provider": "project:website"})
	d.allow == true
}

test_not_a_memory_input_is_undefined if {
	not memory.decision with input as json.remove(base, ["operation"])
}
