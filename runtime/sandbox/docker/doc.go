// Package docker is the docker sandbox backend: each session gets one
// long-lived container, reached through the Docker Engine API with the
// official Go client (github.com/moby/moby/client), and every execution is a
// `docker exec` in it.
//
// # The container
//
// The container runs the image Config.Image (nagent-sandbox:debian, built
// with no registry by testdata/build-image.sh) with --network none, a
// read-only root, every capability dropped, no-new-privileges, a non-root
// user, pids, memory (no swap) and CPU limits, rlimits for CPU time, file
// size and open files, a tmpfs /tmp and docker's init as PID 1. It is
// created and started on the session's first Exec, because only then does
// the backend know the host directories to mount:
//
//	EnvSpec.Workspace                         → /workspace   read-only
//	dir(ExecRequest.Scratch)/.docker-scratch  → /scratch     writable (below)
//	the backend's relay socket dir            → /run/nagent  read-only
//	ExecRequest.ModuleDir                     → /opt/nagent  read-only
//
// Docker's init and an idle process run as a second non-root user (65533),
// the code as the sandbox user (65534, or the server's own uid when that is
// not root), so the code can neither signal nor trace them.
//
// # Scratch directories
//
// A container's mounts are fixed when it is created, but every call gets a
// fresh scratch directory. So one live directory, beside the call dirs and
// on the same file system, is mounted at /scratch for the container's life:
// before each call the backend empties it and moves the call dir's entries
// and the code into it; after the call, once every process is dead, it moves
// everything back. The moves are renames, which never follow a symlink the
// code made, so the call dir ends up as if it had been mounted itself, and
// the code's working directory really is /scratch. If a later call's
// scratch or module dir lives elsewhere, the container is replaced.
//
// # Callback socket
//
// The Manager opens a new callback socket, in a new directory, for every
// call. The backend keeps one relay socket per session in a directory of
// its own (with a 0700 parent), mounted at /run/nagent, and joins each
// connection to the current call's socket; between calls it refuses them.
//
// # Ending every process of an execution
//
// Docker cannot kill an exec. Each exec therefore runs a small shell
// supervisor (busybox sh in the image) that runs python3 and then
// `kill -9 -1`, which ends every process of the sandbox user (never init or
// the idle process, which belong to the other user), so no background
// process outlives the call. After each exec the backend asks the engine how
// many processes the container holds (one-shot stats: a cgroup read the code
// cannot forge) and, if more than those two are left (the code killed or
// traced its supervisor), runs a second `kill -9 -1` exec. On a timeout or
// cancellation the backend runs that kill exec at once; if even that leaves
// processes (a fork bomb outrunning it), it removes the container, and the
// next call starts a fresh one.
//
// Close kills and removes the container. Containers carry the labels
// org.nagent.sandbox, .session and .owner (host:pid); Available removes
// those whose owner process on this host is gone (a crash, a kill -9).
package docker
