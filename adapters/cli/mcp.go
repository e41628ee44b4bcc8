package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nagent/nagent/runtime/app"
	"github.com/nagent/nagent/runtime/config"
	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/runtime/mcp"
	"github.com/nagent/nagent/store"
)

const mcpAbout = `
Manages MCP sites: servers whose tools N-Agent exposes as mcp_<site>_<tool>.

  add NAME -- COMMAND [ARG...]   a stdio server, started by N-Agent
  add NAME --url URL             a streamable_http server (or --transport sse)
                                 probes the server first (--no-probe skips);
                                 --env K=V and --header K=V may repeat;
                                 --connect-timeout and --call-timeout;
                                 --disabled stores it switched off
  list                           stored sites and those of config.yaml
  probe NAME                     connect, list the tools and their risk
  remove NAME                    forget a stored site

Sites under mcp.sites in config.yaml shadow stored sites of the same name.
A running "nagent serve" picks up add and remove within seconds.
Env and header values are never printed. Every subcommand takes --json.`

var mcpSynopsis = map[string]string{
	"add":    "mcp add NAME (-- COMMAND [ARG...] | --url URL) [flags]",
	"list":   "mcp list [--json]",
	"probe":  "mcp probe NAME [--json]",
	"remove": "mcp remove NAME [--json]",
}

// keyValues is a repeatable K=V flag.
type keyValues map[string]string

func (kv keyValues) String() string { return strings.Join(sortedKeys(kv), ",") }

// sortedKeys lists a map's keys, never nil, so JSON shows [].
func sortedKeys(m map[string]string) []string {
	return append([]string{}, slices.Sorted(maps.Keys(m))...)
}

func (kv keyValues) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q is not KEY=VALUE", s)
	}
	kv[k] = v
	return nil
}

// MCP is `nagent mcp add|list|probe|remove`.
func MCP(ctx context.Context, args []string, stdio IO) int {
	sub, fs, rest, code, ok := subcommand(stdio, "mcp", "mcp add|list|probe|remove ...", mcpAbout, mcpSynopsis, args)
	if !ok {
		return code
	}
	var command []string
	if i := slices.Index(rest, "--"); i >= 0 {
		rest, command = rest[:i], rest[i+1:]
	}
	asJSON := fs.Bool("json", false, "print JSON")
	transport := fs.String("transport", "", "with add: stdio, sse or streamable_http (default: stdio with a command, streamable_http with --url)")
	url := fs.String("url", "", "with add: the server's URL")
	env, headers := keyValues{}, keyValues{}
	fs.Var(env, "env", "with add: KEY=VALUE for a stdio server's environment (repeatable)")
	fs.Var(headers, "header", "with add: NAME=VALUE HTTP header (repeatable)")
	connectTimeout := fs.Duration("connect-timeout", 0, "with add: bound on initialize and tools/list (default 30s)")
	callTimeout := fs.Duration("call-timeout", 0, "with add: bound on one tool call (default 60s)")
	disabled := fs.Bool("disabled", false, "with add: store the site switched off")
	noProbe := fs.Bool("no-probe", false, "with add: store without connecting first")
	operands, code, ok := parseInterleaved(fs, rest, stdio)
	if !ok {
		return code
	}
	want := map[string]int{"add": 1, "list": 0, "probe": 1, "remove": 1}[sub]
	if len(operands) != want || (sub != "add" && len(command) > 0) {
		fmt.Fprintf(stdio.Err, "nagent mcp %s: usage: nagent %s\n", sub, mcpSynopsis[sub])
		return ExitUsage
	}
	cfg, db, err := openStore(ctx)
	if err != nil {
		return Fail(stdio, err)
	}
	defer db.Close()
	svc, err := app.NewMCPService(cfg, db, nil, app.Options{Log: Logger(stdio.Err)})
	if err != nil {
		return Fail(stdio, err)
	}

	switch sub {
	case "add":
		site := mcp.Site{
			ID: mcp.NewSiteID(), Name: operands[0], Transport: *transport, URL: *url, Env: env, Headers: headers,
			Enabled: !*disabled, ConnectTimeout: *connectTimeout, CallTimeout: *callTimeout, Source: "store",
		}
		if len(command) > 0 {
			site.Command, site.Args = command[0], command[1:]
		}
		if site.Transport == "" {
			site.Transport = mcp.TransportStdio
			if site.URL != "" {
				site.Transport = mcp.TransportStreamableHTTP
			}
		}
		err = mcpAdd(ctx, cfg, db, site, !*noProbe, *asJSON, stdio)
	case "list":
		err = mcpList(ctx, svc, *asJSON, stdio)
	case "probe":
		err = mcpProbe(ctx, svc, operands[0], *asJSON, stdio)
	case "remove":
		if err = db.DeleteMCPSite(ctx, operands[0]); err == nil {
			if *asJSON {
				err = writeJSON(stdio.Out, map[string]any{"removed": true, "name": operands[0]})
			} else {
				fmt.Fprintf(stdio.Out, "removed MCP site %s\n", operands[0])
			}
		}
	}
	return Fail(stdio, err)
}

func mcpAdd(ctx context.Context, cfg *config.Config, db *store.DB, site mcp.Site, probe, asJSON bool, stdio IO) error {
	if err := mcp.ValidateSite(site); err != nil {
		return err
	}
	if _, ok := cfg.MCP.Sites[site.Name]; ok {
		return errs.Errorf(errs.ECONFLICT, "MCP site %s is defined in %s, which would shadow it; pick another name", site.Name, cfg.File)
	}
	var found *mcp.ProbeResult
	if probe {
		res, err := mcp.Probe(ctx, site, Logger(stdio.Err))
		if err != nil {
			return errs.Errorf(errs.EUNAVAILABLE, "MCP site %s did not answer, so it was not added (add --no-probe to store it anyway): %v", site.Name, err)
		}
		found = &res
	}
	if err := db.PutMCPSite(ctx, site); err != nil {
		return err
	}
	if asJSON {
		return writeJSON(stdio.Out, map[string]any{"added": site, "probe": found})
	}
	fmt.Fprintf(stdio.Out, "added MCP site %s (%s, id %s)\n", site.Name, site.Transport, site.ID)
	if found != nil {
		fmt.Fprintf(stdio.Out, "%s %s offers %d tools; a running \"nagent serve\" picks them up within seconds\n", found.ServerName, found.ServerVersion, len(found.Tools))
	}
	return nil
}

// mcpSiteView is one site as `mcp list` shows it: secrets stay hidden.
type mcpSiteView struct {
	mcp.Site
	EnvKeys    []string `json:"env_keys"`
	HeaderKeys []string `json:"header_keys"`
	// ConnectTimeoutMS and CallTimeoutMS are 0 for the defaults.
	ConnectTimeoutMS int64 `json:"connect_timeout_ms"`
	CallTimeoutMS    int64 `json:"call_timeout_ms"`
}

func mcpList(ctx context.Context, svc *mcp.Service, asJSON bool, stdio IO) error {
	sites, err := svc.Sites(ctx)
	if err != nil {
		return err
	}
	views := make([]mcpSiteView, 0, len(sites))
	for _, s := range sites {
		views = append(views, mcpSiteView{
			Site: s, EnvKeys: sortedKeys(s.Env), HeaderKeys: sortedKeys(s.Headers),
			ConnectTimeoutMS: s.ConnectTimeout.Milliseconds(), CallTimeoutMS: s.CallTimeout.Milliseconds(),
		})
	}
	if asJSON {
		return writeJSON(stdio.Out, map[string]any{"sites": views})
	}
	if len(views) == 0 {
		fmt.Fprintln(stdio.Out, "no MCP sites; add one with: nagent mcp add NAME -- COMMAND [ARG...]")
		return nil
	}
	tw := tabwriter.NewWriter(stdio.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTRANSPORT\tENABLED\tSOURCE\tTARGET")
	for _, v := range views {
		target := v.URL
		if v.Transport == mcp.TransportStdio {
			target = strings.Join(append([]string{v.Command}, v.Args...), " ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%s\n", v.Name, v.Transport, v.Enabled, v.Source, target)
	}
	return tw.Flush()
}

func mcpProbe(ctx context.Context, svc *mcp.Service, name string, asJSON bool, stdio IO) error {
	sites, err := svc.Sites(ctx)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(sites, func(s mcp.Site) bool { return s.Name == name || s.ID == name })
	if i < 0 {
		return errs.Errorf(errs.ENOTFOUND, "no MCP site %s; list them with: nagent mcp list", name)
	}
	res, err := mcp.Probe(ctx, sites[i], Logger(stdio.Err))
	if err != nil {
		return errs.Errorf(errs.EUNAVAILABLE, "probing MCP site %s: %v", name, err)
	}
	if asJSON {
		return writeJSON(stdio.Out, res)
	}
	fmt.Fprintf(stdio.Out, "%s: %s %s, protocol %s, %d tools in %s\n", res.Site, res.ServerName, res.ServerVersion,
		res.ProtocolVersion, len(res.Tools), res.Duration.Round(time.Millisecond))
	tw := tabwriter.NewWriter(stdio.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tRISK\tDESCRIPTION")
	for _, t := range res.Tools {
		desc, _, _ := strings.Cut(t.Description, "\n")
		fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Name, t.RiskLevel, desc)
	}
	return tw.Flush()
}
