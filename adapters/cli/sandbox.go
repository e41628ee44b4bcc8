package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/nagent/nagent/runtime/app"
	"github.com/nagent/nagent/runtime/config"
	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/runtime/sandbox"
	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/store"
)

const sandboxAbout = `
Runs and inspects the execute_code sandboxes: one isolated environment per
session (Linux namespaces through bubblewrap, or docker), where Python code
runs with no network, a read-only /workspace, a fresh writable /scratch per
call, and tool callbacks through "import nagent_tools".

  exec --session ID FILE|-     run a Python file (or stdin) in the session's
                               sandbox, through the same executor and
                               boundary as the model's execute_code; prints
                               stdout and stderr; exits 0 when the code did
  list [--released]            sandboxes held by nagent processes right now
                               (from the database; a row whose process is
                               gone shows as stale), or with --released the
                               release audit
  history --session ID         the session's executions, newest first: code
                               hash, status, exit reason, tools allowed and
                               called, duration
  release --session ID         ask the process holding the sandbox to release
          [--force]            it (--force kills a running execution at once)
                               and wait for it; a stale row is cleaned up

This command runs in its own process: exec creates its own sandbox for the
session and releases it when done, and refuses when a running server holds
that session's sandbox. Configure under sandbox: in config.yaml (backend:
auto|local|docker|unisolated|off, limits, allowed_tools, idle_timeout).
Every subcommand takes --json for scripts.

Examples:
  echo 'print(6*7)' | nagent sandbox exec --session demo -
  nagent sandbox history --session demo --json
  nagent sandbox release --session demo --force`

var sandboxSynopsis = map[string]string{
	"exec":    "sandbox exec --session ID [--timeout D] [--json] FILE|-",
	"list":    "sandbox list [--released] [--limit N] [--json]",
	"history": "sandbox history --session ID [--limit N] [--json]",
	"release": "sandbox release --session ID [--force] [--wait D] [--json]",
}

// Sandbox is `nagent sandbox exec|list|history|release`.
func Sandbox(ctx context.Context, args []string, stdio IO) int {
	sub, fs, rest, code, ok := subcommand(stdio, "sandbox", "sandbox exec|list|history|release [flags]", sandboxAbout, sandboxSynopsis, args)
	if !ok {
		return code
	}
	asJSON := fs.Bool("json", false, "print JSON")
	session := fs.String("session", "", "the session id (exec, history, release)")
	limit := fs.Int("limit", 50, "with list --released and history: at most this many rows")
	released := fs.Bool("released", false, "with list: show the release audit instead of live sandboxes")
	force := fs.Bool("force", false, "with release: kill a running execution at once")
	wait := fs.Duration("wait", 15*time.Second, "with release: how long to wait for the holding process")
	timeout := fs.Duration("timeout", 0, "with exec: wall-clock limit (default sandbox.timeout)")
	if err := parse(fs, rest); err != nil {
		return Fail(stdio, err)
	}
	if sub != "list" && *session == "" {
		fmt.Fprintf(stdio.Err, "nagent sandbox %s: --session ID is required\n", sub)
		return ExitUsage
	}
	switch sub {
	case "exec":
		if fs.NArg() != 1 {
			fmt.Fprintln(stdio.Err, "nagent sandbox exec: give one FILE, or - to read the code from stdin")
			return ExitUsage
		}
		return sandboxExec(ctx, *session, fs.Arg(0), *timeout, *asJSON, stdio)
	case "list":
		return Fail(stdio, sandboxList(ctx, *released, *limit, *asJSON, stdio))
	case "history":
		return Fail(stdio, sandboxHistory(ctx, *session, *limit, *asJSON, stdio))
	case "release":
		return Fail(stdio, sandboxRelease(ctx, *session, *force, *wait, *asJSON, stdio))
	}
	return ExitUsage
}

func sandboxExec(ctx context.Context, session, file string, timeout time.Duration, asJSON bool, stdio IO) int {
	var code []byte
	var err error
	if file == "-" {
		code, err = io.ReadAll(stdio.In)
	} else {
		code, err = os.ReadFile(file)
	}
	if err != nil {
		return Fail(stdio, fmt.Errorf("read the code: %w", err))
	}
	// Ctrl-C or SIGTERM stops the execution (it is recorded as killed)
	// and the command exits 130.
	ctx, stop := signalContext(ctx)
	defer stop()
	cfg, err := config.Load()
	if err != nil {
		return Fail(stdio, err)
	}
	if cfg.Sandbox.Backend == "off" {
		return Fail(stdio, errs.Errorf(errs.EUNAVAILABLE, "sandbox.backend is off in %s; set it to auto, local or docker", cfg.Home))
	}
	// The whole runtime, without a model: callbacks go through the same
	// ToolService and policy as in a server.
	a, err := app.New(ctx, cfg, app.Options{Log: Logger(stdio.Err), AllowNoModel: true})
	if err != nil {
		if cancelled(ctx, stdio, err) {
			return ExitCancelled
		}
		return Fail(stdio, err)
	}
	defer a.Close()
	if a.Sandbox == nil {
		_, serr := app.SelectSandboxBackend(ctx, cfg, Logger(io.Discard))
		return Fail(stdio, errs.Errorf(errs.EUNAVAILABLE, "no sandbox: %v", serr))
	}
	res, err := a.Sandbox.Execute(ctx, sandbox.ExecuteRequest{
		SessionID: session, Code: string(code), Timeout: timeout,
		Exec: tools.ExecutionContext{SessionID: session, Source: "cli", AgentContext: tools.AgentPrimary, ToolExposurePolicy: tools.ExposureDefault},
	})
	if err != nil {
		if cancelled(ctx, stdio, err) {
			return ExitCancelled
		}
		return Fail(stdio, err)
	}
	if asJSON {
		writeJSON(stdio.Out, res)
	} else {
		io.WriteString(stdio.Out, res.Stdout)
		io.WriteString(stdio.Err, res.Stderr)
		if res.Warning != "" {
			fmt.Fprintln(stdio.Err, "nagent: warning:", res.Warning)
		}
		if res.ExitReason != sandbox.ExitOK {
			fmt.Fprintf(stdio.Err, "nagent: the code ended with %s (exit code %d) after %d ms in the %s sandbox\n", res.ExitReason, res.ExitCode, res.DurationMS, res.Backend)
		}
	}
	switch {
	case res.ExitReason != sandbox.ExitOK && ctx.Err() != nil:
		return ExitCancelled
	case res.ExitReason != sandbox.ExitOK:
		return ExitFailed
	}
	return ExitOK
}

// liveRow is one row of `sandbox list`.
type liveRow struct {
	*store.LiveSandbox
	// Stale: the holding process is gone.
	Stale bool `json:"stale"`
}

func sandboxList(ctx context.Context, released bool, limit int, asJSON bool, stdio IO) error {
	_, db, err := openStore(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	if released {
		rows, err := db.ListReleasedSandboxes(ctx, "", limit)
		if err != nil {
			return err
		}
		if asJSON {
			if rows == nil {
				rows = []*store.ReleasedSandbox{}
			}
			return writeJSON(stdio.Out, map[string]any{"released_sandboxes": rows})
		}
		if len(rows) == 0 {
			fmt.Fprintln(stdio.Out, "no sandbox has been released yet")
			return nil
		}
		tw := tabwriter.NewWriter(stdio.Out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SESSION\tBACKEND\tREASON\tFORCED\tEXECUTIONS\tRELEASED")
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%d\t%s\n", r.SessionID, r.Backend, r.Reason, r.Forced, r.Executions, r.ReleasedAt.Local().Format("2006-01-02 15:04:05"))
		}
		return tw.Flush()
	}
	live, err := db.ListLiveSandboxes(ctx)
	if err != nil {
		return err
	}
	rows := make([]liveRow, 0, len(live))
	for _, l := range live {
		rows = append(rows, liveRow{LiveSandbox: l, Stale: !sandbox.OwnerAlive(l.Owner)})
	}
	if asJSON {
		return writeJSON(stdio.Out, map[string]any{"sandboxes": rows})
	}
	if len(rows) == 0 {
		fmt.Fprintln(stdio.Out, "no sandbox is held right now (sandboxes live inside a running nagent serve or sandbox exec); see past ones with: nagent sandbox list --released")
		return nil
	}
	tw := tabwriter.NewWriter(stdio.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tBACKEND\tSTATE\tEXECUTIONS\tLAST USED\tOWNER")
	for _, r := range rows {
		state := r.State
		if r.Stale {
			state += " (stale: owner gone)"
		} else if r.ReleaseRequested {
			state += " (release requested)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", r.SessionID, r.Backend, state, r.Executions, r.LastUsedAt.Local().Format("2006-01-02 15:04:05"), r.Owner)
	}
	return tw.Flush()
}

func sandboxHistory(ctx context.Context, session string, limit int, asJSON bool, stdio IO) error {
	_, db, err := openStore(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := db.ListSandboxExecutions(ctx, session, limit)
	if err != nil {
		return err
	}
	if asJSON {
		if rows == nil {
			rows = []*store.SandboxExecution{}
		}
		return writeJSON(stdio.Out, map[string]any{"history": rows})
	}
	if len(rows) == 0 {
		fmt.Fprintf(stdio.Out, "no executions recorded for session %s\n", session)
		return nil
	}
	tw := tabwriter.NewWriter(stdio.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tWHEN\tBACKEND\tSTATUS\tREASON\tMS\tCODE\tTOOLS CALLED")
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.Seq, r.CreatedAt.Local().Format("2006-01-02 15:04:05"), r.Backend, r.Status, r.ExitReason, r.DurationMS, r.CodeSHA256[:min(12, len(r.CodeSHA256))], r.CalledTools)
	}
	return tw.Flush()
}

func sandboxRelease(ctx context.Context, session string, force bool, wait time.Duration, asJSON bool, stdio IO) error {
	_, db, err := openStore(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	row, err := db.GetLiveSandbox(ctx, session)
	if err != nil {
		return err
	}
	report := func(how string) error {
		if asJSON {
			return writeJSON(stdio.Out, map[string]any{"released": true, "session_id": session, "how": how})
		}
		fmt.Fprintf(stdio.Out, "released the sandbox of session %s (%s)\n", session, how)
		return nil
	}
	if !sandbox.OwnerAlive(row.Owner) {
		if err := sandbox.ReleaseStale(ctx, db, row, time.Now()); err != nil {
			return err
		}
		return report("stale: its process " + row.Owner + " is gone")
	}
	if err := db.RequestSandboxRelease(ctx, session, force, sandbox.ReasonManual); err != nil {
		return err
	}
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		if _, err := db.GetLiveSandbox(ctx, session); errs.Code(err) == errs.ENOTFOUND {
			return report("by its process " + row.Owner)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	hint := ""
	if !force {
		hint = "; it may be waiting for a running execution, use --force to kill it"
	}
	return errs.Errorf(errs.EUNAVAILABLE, "asked %s to release session %s's sandbox, but it has not within %s%s", row.Owner, session, wait, hint)
}
