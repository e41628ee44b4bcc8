package acp

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/nagent/nagent/adapters/cli"
	"github.com/nagent/nagent/runtime/app"
	"github.com/nagent/nagent/runtime/config"
)

const about = `
Runs N-Agent as an Agent Client Protocol (ACP v1) agent: JSON-RPC 2.0, one
message per line, over stdin and stdout. Editors start it themselves; you
do not run it by hand. Standard output carries protocol messages only; logs
go to standard error (NAGENT_LOG_LEVEL=info for more).

Zed: add to settings.json

  {"agent_servers": {"N-Agent": {"command": "nagent", "args": ["acp"]}}}

and pass NAGENT_HOME or NAGENT_LLM_* under "env" if your setup needs them.
Sessions started from the editor have source "acp": they are the ones that
"nagent session list --source acp" and the dashboard show, and the editor
can load them again after a restart. Calls that a policy marks confirm ask
you in the editor (allow once, allow always for the session, reject).`

// Command is `nagent acp`.
func Command(ctx context.Context, args []string, stdio cli.IO) int {
	fs := cli.NewFlagSet(stdio, "acp", "acp", about)
	if code, ok := cli.Parse(fs, args, stdio); !ok {
		return code
	}
	out := stdio.Out
	if f, ok := out.(*os.File); ok && f == os.Stdout {
		proto, err := guardStdout()
		if err != nil {
			return cli.Fail(stdio, err)
		}
		out = proto
	}
	log := cli.Logger(stdio.Err)
	cfg, err := config.Load()
	if err != nil {
		return cli.Fail(stdio, err)
	}
	a, err := app.New(ctx, cfg, app.Options{Log: log})
	if err != nil {
		return cli.Fail(stdio, err)
	}
	defer a.Close()
	opts := Options{Gateway: a.Gateway, History: a.DB, Log: log}
	if a.MCP != nil {
		opts.MCP = a.MCP
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return cli.Fail(stdio, New(opts).Serve(ctx, stdio.In, out))
}
