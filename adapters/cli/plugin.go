package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/nagent/nagent/runtime/app"
	"github.com/nagent/nagent/runtime/config"
	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/store"
	"github.com/nagent/nagent/wasm"
)

const pluginAbout = `
Manages WASM plugin tools in $NAGENT_HOME/plugins (see wasm/README.md).

  install PATH|DIR        copy a plugin (its directory, plugin.yaml or .wasm)
                          in, after checking that it loads; replaces an
                          installed plugin of the same name
  list                    installed plugins, their tools and state
  remove NAME             uninstall a plugin (its key-value data stays)
  call NAME TOOL          run one tool directly, for plugin authors:
                          --args JSON (default {}), --session ID

A running "nagent serve" picks up install and remove within a second.
Every subcommand takes --json for scripts.`

var pluginSynopsis = map[string]string{
	"install": "plugin install PATH|DIR [--json]",
	"list":    "plugin list [--json]",
	"remove":  "plugin remove NAME [--json]",
	"call":    "plugin call NAME TOOL [--args JSON] [--session ID] [--json]",
}

// Plugin is `nagent plugin install|list|remove|call`.
func Plugin(ctx context.Context, args []string, stdio IO) int {
	sub, fs, rest, code, ok := subcommand(stdio, "plugin", "plugin install|list|remove|call ...", pluginAbout, pluginSynopsis, args)
	if !ok {
		return code
	}
	asJSON := fs.Bool("json", false, "print JSON")
	callArgs := fs.String("args", "{}", "with call: the tool's arguments, a JSON object")
	session := fs.String("session", "cli-plugin-call", "with call: the session_id the plugin sees")
	// Flags may follow the operands: nagent plugin call NAME TOOL --args '{}'.
	operands, code, ok := parseInterleaved(fs, rest, stdio)
	if !ok {
		return code
	}
	want := map[string]int{"install": 1, "list": 0, "remove": 1, "call": 2}[sub]
	if len(operands) != want {
		fmt.Fprintf(stdio.Err, "nagent plugin %s: usage: nagent %s\n", sub, pluginSynopsis[sub])
		return ExitUsage
	}
	cfg, db, err := openStore(ctx)
	if err != nil {
		return Fail(stdio, err)
	}
	defer db.Close()

	switch sub {
	case "install":
		err = pluginInstall(ctx, cfg, db, operands[0], *asJSON, stdio)
	case "list":
		err = pluginList(ctx, cfg, db, *asJSON, stdio)
	case "remove":
		if err = wasm.Remove(cfg.PluginsDir(), operands[0]); err == nil {
			if *asJSON {
				err = writeJSON(stdio.Out, map[string]any{"removed": true, "name": operands[0]})
			} else {
				fmt.Fprintf(stdio.Out, "removed plugin %s\n", operands[0])
			}
		}
	case "call":
		return pluginCall(ctx, cfg, db, operands[0], operands[1], *callArgs, *session, *asJSON, stdio)
	}
	return Fail(stdio, err)
}

func newHost(cfg *config.Config, db *store.DB, slot wasm.Slot, stdio IO) (*wasm.Host, error) {
	return app.NewPluginHost(cfg, db, slot, nil, app.Options{Log: Logger(stdio.Err)})
}

func pluginInstall(ctx context.Context, cfg *config.Config, db *store.DB, src string, asJSON bool, stdio IO) error {
	h, err := newHost(cfg, db, nil, stdio)
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	var st wasm.Status
	_, err = wasm.Install(ctx, src, cfg.PluginsDir(), func(ctx context.Context, dir string) error {
		// Compiling here also fills the compilation cache a server shares.
		st = h.Inspect(ctx, dir)
		if st.State == wasm.StateError {
			return errs.Errorf(errs.EINVALID, "plugin %s does not load: %s", st.Name, st.Error)
		}
		return nil
	})
	if err != nil {
		return err
	}
	st.Dir = filepath.Join(cfg.PluginsDir(), st.Name)
	if asJSON {
		return writeJSON(stdio.Out, map[string]any{"installed": st})
	}
	fmt.Fprintf(stdio.Out, "installed plugin %s %s into %s: tools %s\n", st.Name, st.Version, st.Dir, strings.Join(st.Tools, ", "))
	if st.State == wasm.StateUnusable {
		fmt.Fprintf(stdio.Out, "note: its check says it cannot run here, so its tools stay hidden: %s\n", st.Error)
	}
	return nil
}

func pluginList(ctx context.Context, cfg *config.Config, db *store.DB, asJSON bool, stdio IO) error {
	h, err := newHost(cfg, db, nil, stdio)
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	statuses, err := h.Load(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		if statuses == nil {
			statuses = []wasm.Status{}
		}
		return writeJSON(stdio.Out, map[string]any{"plugins": statuses})
	}
	if len(statuses) == 0 {
		fmt.Fprintf(stdio.Out, "no plugins in %s; install one with: nagent plugin install DIR\n", cfg.PluginsDir())
		return nil
	}
	tw := tabwriter.NewWriter(stdio.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tSTATE\tTOOLS\tERROR")
	for _, st := range statuses {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", st.Name, st.Version, st.State, strings.Join(st.Tools, ","), st.Error)
	}
	return tw.Flush()
}

// allowAll is the policy of a direct call by a plugin's author.
type allowAll struct{}

func (allowAll) Decide(context.Context, tools.PolicyInput) (tools.Decision, error) {
	return tools.Decision{Allow: true}, nil
}

func pluginCall(ctx context.Context, cfg *config.Config, db *store.DB, name, tool, args, session string, asJSON bool, stdio IO) int {
	ts := tools.NewToolService(allowAll{}, tools.Options{
		MaxResultBytes: cfg.Agent.MaxToolResultBytes,
		DefaultTimeout: cfg.Agent.ToolTimeout.Std(),
	})
	h, err := newHost(cfg, db, ts, stdio)
	if err != nil {
		return Fail(stdio, err)
	}
	defer h.Close(ctx)
	statuses, err := h.Load(ctx)
	if err != nil {
		return Fail(stdio, err)
	}
	var st *wasm.Status
	for i := range statuses {
		if statuses[i].Name == name {
			st = &statuses[i]
		}
	}
	switch {
	case st == nil:
		return Fail(stdio, errs.Errorf(errs.ENOTFOUND, "plugin %s is not installed in %s", name, cfg.PluginsDir()))
	case st.State != wasm.StateReady:
		return Fail(stdio, errs.Errorf(errs.EINVALID, "plugin %s is %s: %s", name, st.State, st.Error))
	case !slices.Contains(st.Tools, tool):
		return Fail(stdio, errs.Errorf(errs.ENOTFOUND, "plugin %s has no tool %s; its tools: %s", name, tool, strings.Join(st.Tools, ", ")))
	}
	res := ts.Execute(ctx, tools.ToolCallRequest{ID: "cli", Name: tool, Arguments: args},
		tools.ExecutionContext{SessionID: session, Source: "cli", AgentContext: tools.AgentPrimary})
	if asJSON {
		writeJSON(stdio.Out, res)
	} else if res.Status == tools.StatusSuccess {
		fmt.Fprintln(stdio.Out, prettyJSON(res.Content))
	} else {
		fmt.Fprintln(stdio.Err, "nagent:", res.Content)
	}
	if res.Status != tools.StatusSuccess {
		return ExitFailed
	}
	return ExitOK
}

// prettyJSON indents JSON content and leaves anything else as it is.
func prettyJSON(s string) string {
	var b bytes.Buffer
	if json.Indent(&b, []byte(s), "", "  ") != nil {
		return s
	}
	return b.String()
}
