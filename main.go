// Command nagent is the N-Agent agent runtime: an OpenAI-compatible server,
// a terminal chat, and tools to inspect what the runtime remembers.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/nagent/nagent/adapters/acp"
	"github.com/nagent/nagent/adapters/cli"
	"github.com/nagent/nagent/adapters/tui"
)

type command struct {
	about string
	run   func(ctx context.Context, args []string, stdio cli.IO) int
}

var commands = map[string]command{
	"run":     {"run one turn and print the answer", cli.Run},
	"chat":    {"talk with the agent in the terminal", cli.Chat},
	"session": {"list, show or delete stored sessions", cli.Session},
	"policy":  {"check, test and evaluate Rego policies; read their audit trail", cli.Policy},
	"serve":   {"serve the OpenAI-compatible API and the browser dashboard", serve},
	"plugin":  {"install, list, remove or call WASM plugin tools", cli.Plugin},
	"mcp":     {"add, list, probe or remove MCP sites (remote tool servers)", cli.MCP},
	"skills":  {"list, view or validate skills (SKILL.md packages)", cli.Skills},
	"kb":      {"add, list, ingest, search or remove knowledge bases", cli.KB},
	"sandbox": {"run code in a session's sandbox; list, audit or release sandboxes", cli.Sandbox},
	"tui":     {"talk with the agent in a full-screen terminal UI", tui.Run},

	"schedule": {"add, list, show, run, pause, resume or remove scheduled agent runs", cli.Schedule},
	"acp":      {"serve editors (Zed) over the Agent Client Protocol on stdio", acp.Command},
}

func main() {
	stdio := cli.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}
	os.Exit(dispatch(context.Background(), os.Args[1:], stdio))
}

func dispatch(ctx context.Context, args []string, stdio cli.IO) int {
	if len(args) == 0 {
		usage(stdio.Err)
		return cli.ExitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(stdio.Out)
		return cli.ExitOK
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stdio.Err, "nagent: unknown command %q\n\n", args[0])
		usage(stdio.Err)
		return cli.ExitUsage
	}
	return cmd.run(ctx, args[1:], stdio)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: nagent <command> [flags]\n\nCommands:")
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(w, "  %-9s %s\n", name, commands[name].about)
	}
	fmt.Fprintln(w, `
Configuration: $NAGENT_HOME/config.yaml (default ~/.nagent), overridden by
NAGENT_LLM_BASE_URL, NAGENT_LLM_API_KEY and NAGENT_LLM_MODEL (or OPENAI_BASE_URL
and OPENAI_API_KEY). Run "nagent <command> --help" for a command's flags.`)
}
