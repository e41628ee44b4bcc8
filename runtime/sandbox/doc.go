// Package sandbox owns execute_code: one isolated environment per session,
// reused across calls, behind the Backend interface; the callback socket
// through which code calls allowlisted tools; the execution history and
// release audit; and the lifecycle (active → executing → active … →
// releasing → released) with an event on every state change.
//
// The local backend (bubblewrap: user, PID, mount, IPC, UTS and network
// namespaces, a read-only root, rlimits and a cgroup pids cap) lives here;
// the docker backend lives in runtime/sandbox/docker.
package sandbox
