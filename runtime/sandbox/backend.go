package sandbox

import (
	"context"
	"time"
)

// Backend creates isolated environments, one Env per session. The local
// backend (Linux namespaces through bubblewrap) and the docker backend
// implement it; the Manager owns the lifecycle around it.
type Backend interface {
	// Name is "local", "docker" or "unisolated".
	Name() string
	// Available returns nil when the backend is usable on this machine, and
	// otherwise an error saying why not and what to install or configure.
	Available(ctx context.Context) error
	// Open creates the environment of one session. For the docker backend
	// this starts the session's long-lived container.
	Open(ctx context.Context, spec EnvSpec) (Env, error)
}

// EnvSpec describes the environment of one session.
type EnvSpec struct {
	SessionID string
	// Workspace is a host directory, bound read-only at /workspace.
	Workspace string
	Limits    Limits
}

// Limits bound one execution. A zero field means the backend's default
// (see DefaultLimits); backends must never treat zero as "unlimited".
type Limits struct {
	// CPUSeconds is RLIMIT_CPU (the process is killed past it).
	CPUSeconds int `json:"cpu_seconds" yaml:"cpu_seconds"`
	// MemoryBytes is the address-space (local) or memory (docker) cap.
	MemoryBytes int64 `json:"memory_bytes" yaml:"memory_bytes"`
	// FileSizeBytes is RLIMIT_FSIZE: the largest file the code may write.
	FileSizeBytes int64 `json:"file_size_bytes" yaml:"file_size_bytes"`
	// OpenFiles is RLIMIT_NOFILE.
	OpenFiles int `json:"open_files" yaml:"open_files"`
	// Processes caps the number of processes (tasks) alive at once.
	Processes int `json:"processes" yaml:"processes"`
	// OutputBytes caps what is kept of stdout and of stderr, each (head and
	// tail are kept; see CapOutput).
	OutputBytes int `json:"output_bytes" yaml:"output_bytes"`
}

// DefaultLimits are the limits used for zero fields.
var DefaultLimits = Limits{
	CPUSeconds:    30,
	MemoryBytes:   512 << 20,
	FileSizeBytes: 64 << 20,
	OpenFiles:     256,
	Processes:     64,
	OutputBytes:   64 << 10,
}

// WithDefaults returns l with every zero or negative field set from
// DefaultLimits.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits
	if l.CPUSeconds <= 0 {
		l.CPUSeconds = d.CPUSeconds
	}
	if l.MemoryBytes <= 0 {
		l.MemoryBytes = d.MemoryBytes
	}
	if l.FileSizeBytes <= 0 {
		l.FileSizeBytes = d.FileSizeBytes
	}
	if l.OpenFiles <= 0 {
		l.OpenFiles = d.OpenFiles
	}
	if l.Processes <= 0 {
		l.Processes = d.Processes
	}
	if l.OutputBytes <= 0 {
		l.OutputBytes = d.OutputBytes
	}
	return l
}

// Paths inside every environment.
const (
	// WorkspacePath is where EnvSpec.Workspace is bound, read-only.
	WorkspacePath = "/workspace"
	// ScratchPath is where ExecRequest.Scratch is bound, writable; it is
	// also the working directory of the code.
	ScratchPath = "/scratch"
	// SocketDirPath is where ExecRequest.SocketDir is bound; the callback
	// socket is SocketDirPath + "/" + SocketName.
	SocketDirPath = "/run/nagent"
	// SocketName is the callback socket's file name inside SocketDir.
	SocketName = "tools.sock"
	// ModuleDirPath is where ExecRequest.ModuleDir is bound, read-only, and
	// is on PYTHONPATH; it holds the nagent_tools module.
	ModuleDirPath = "/opt/nagent"
	// CodeFileName is the file, in the scratch dir, holding the code.
	CodeFileName = "main.py"
)

// Env is the isolated environment of one session.
type Env interface {
	// Exec runs one program to completion (or timeout/kill). The scratch
	// dir is bound writable at /scratch, the socket dir (holding tools.sock)
	// at /run/nagent, the python module dir at /opt/nagent (on PYTHONPATH).
	// It kills the whole process tree when ctx ends or Timeout passes; no
	// process the code started may outlive Exec. Exec calls on one Env are
	// serialised by the Manager.
	//
	// An error means the environment could not run the code at all (for
	// example bwrap is missing); what the code itself did — a non-zero
	// exit, a timeout, a kill — is reported in ExecResult.Reason.
	Exec(ctx context.Context, req ExecRequest) (ExecResult, error)
	// Close kills everything and cleans up (for docker: kills and removes
	// the container). It is safe to call more than once, and concurrently
	// with Exec, which it makes return promptly.
	Close(ctx context.Context) error
}

// ExecRequest is one execution.
type ExecRequest struct {
	// Code is the Python source. The Manager also writes it to
	// Scratch/CodeFileName; a backend may run either.
	Code []byte
	// Scratch, SocketDir and ModuleDir are host directories (see Env.Exec).
	Scratch, SocketDir, ModuleDir string
	// Env is the complete environment of the program (the backend adds
	// nothing secret; it starts from an empty environment).
	Env map[string]string
	// Timeout is the wall-clock limit; zero means DefaultTimeout.
	Timeout time.Duration
}

// DefaultTimeout is the wall-clock limit of an execution that sets none.
const DefaultTimeout = 30 * time.Second

// ExecResult is what one execution did.
type ExecResult struct {
	// Stdout and Stderr are capped at EnvSpec.Limits.OutputBytes each,
	// keeping head and tail (OutputBuffer does this).
	Stdout, Stderr []byte
	// ExitCode is the program's exit status; -1 when it was killed by a signal.
	ExitCode int
	Reason   ExitReason
	Duration time.Duration
}

// ExitReason says how an execution ended.
type ExitReason string

// Exit reasons.
const (
	// ExitOK: the program exited with status 0.
	ExitOK ExitReason = "ok"
	// ExitError: the program exited with a non-zero status.
	ExitError ExitReason = "error"
	// ExitTimeout: the wall-clock timeout passed and the program was killed.
	ExitTimeout ExitReason = "timeout"
	// ExitKilled: the execution was cancelled or the sandbox force-released.
	ExitKilled ExitReason = "killed"
	// ExitOOM: the program ran out of memory (MemoryError or the OOM killer).
	ExitOOM ExitReason = "oom"
	// ExitLimit: a resource limit (CPU time, file size, processes) ended it.
	ExitLimit ExitReason = "limit"
)
