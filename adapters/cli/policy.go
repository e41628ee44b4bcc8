package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"go.yaml.in/yaml/v3"

	"github.com/nagent/nagent/policy"
	"github.com/nagent/nagent/runtime/config"
	"github.com/nagent/nagent/store"
)

const policyAbout = `
Works with the Rego policies that decide which tools a run may see and call,
under which constraints, and who may write external memory. The embedded
defaults always load first; your files in $NAGENT_HOME/policies add rules to
the same packages (nagent.tools, nagent.memory). A running server reloads
them when they change, and keeps the last good set if a file is broken.

  check [DIR]         parse, compile and type-check the policies; file:line errors
  test [DIR]          run the test_* rules (yours and the built-in ones), like opa test
  eval --input FILE   print the decision for one input document
  decisions           read the audit trail of tool-call decisions, newest first

DIR defaults to $NAGENT_HOME/policies. Run "nagent policy <subcommand> --help"
for each one's flags and examples. policy/README.md documents the input
document, the decision and how to write rules.`

// Policy is `nagent policy check|test|eval|decisions`.
func Policy(ctx context.Context, args []string, stdio IO) int {
	fs := NewFlagSet(stdio, "policy", "policy check|test|eval|decisions [flags]", policyAbout)
	if len(args) == 0 {
		fs.Usage()
		return ExitUsage
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "-h", "-help", "--help", "help":
		fs.Usage()
		return ExitOK
	case "check":
		return policyCheck(ctx, rest, stdio)
	case "test":
		return policyTest(ctx, rest, stdio)
	case "eval":
		return policyEval(ctx, rest, stdio)
	case "decisions":
		return policyDecisions(ctx, rest, stdio)
	}
	fmt.Fprintf(stdio.Err, "nagent policy: unknown subcommand %q\n", sub)
	fs.Usage()
	return ExitUsage
}

// policyDir returns DIR from the arguments, or $NAGENT_HOME/policies.
func policyDir(fs *flag.FlagSet) (string, error) {
	if fs.NArg() > 1 {
		return "", fmt.Errorf("%w: give at most one directory", errUsage)
	}
	if fs.NArg() == 1 {
		return fs.Arg(0), nil
	}
	cfg, err := config.Load()
	if err != nil {
		return "", err
	}
	return filepath.Join(cfg.Home, "policies"), nil
}

const checkAbout = `
Parses, compiles and type-checks the embedded defaults together with every
*.rego file and data.json / data.yaml under DIR (default
$NAGENT_HOME/policies), test files included, exactly as the engine loads
them. Each problem is printed as file:line: code: message, and the exit
status is 1 if there is any. A server keeps serving its last good policy
set while a file is broken, so run this before (or after) you save.

Also reported: the revision the engine will show for these files, and
whether it may cache expose decisions (no rule reads input.time,
input.session.id or the whole input).

Example:
  nagent policy check
  nagent policy check --strict ./my-policies`

func policyCheck(ctx context.Context, args []string, stdio IO) int {
	fs := NewFlagSet(stdio, "policy check", "policy check [--strict] [--json] [DIR]", checkAbout)
	strict := fs.Bool("strict", false, "also fail on unused variables and imports and on deprecated built-ins")
	asJSON := fs.Bool("json", false, "print the result (or the problems) as JSON")
	if code, ok := Parse(fs, args, stdio); !ok {
		return code
	}
	dir, err := policyDir(fs)
	if err != nil {
		return Fail(stdio, err)
	}
	res, err := policy.Check(ctx, dir, policy.CheckOptions{Strict: *strict})
	var le *policy.LoadError
	if errors.As(err, &le) {
		if *asJSON {
			writeJSON(stdio.Out, map[string]any{"ok": false, "problems": le.Problems})
		} else {
			for _, p := range le.Problems {
				fmt.Fprintln(stdio.Err, p.String())
			}
			fmt.Fprintf(stdio.Err, "%d problem(s); a running server keeps its last good policy set\n", len(le.Problems))
		}
		return ExitFailed
	}
	if err != nil {
		return Fail(stdio, err)
	}
	if *asJSON {
		writeJSON(stdio.Out, map[string]any{"ok": true, "files": res.Files, "revision": res.Revision, "expose_cache": res.ExposeCache})
		return ExitOK
	}
	var admin int
	for _, f := range res.Files {
		if !strings.HasPrefix(f, policy.BuiltinPrefix) {
			admin++
		}
	}
	cache := "yes"
	if !res.ExposeCache {
		cache = "no (a rule reads input.time, input.session.id, the whole input, or a nondeterministic built-in)"
	}
	fmt.Fprintf(stdio.Out, "ok: %d file(s), %d of them yours in %s\nrevision: %s\nexpose decisions cached: %s\n",
		len(res.Files), admin, dir, res.Revision, cache)
	return ExitOK
}

const testAbout = `
Runs the Rego unit tests, the rules whose name starts with test_, of the
embedded defaults and of every *_test.rego file under DIR (default
$NAGENT_HOME/policies), with OPA's tester, as "opa test" does. Built-in
errors (such as to_number("x")) fail a test, as they deny a call at run time.

A test sets the input with "with":

  package nagent.tools_test

  import data.nagent.tools

  test_no_clock_for_cron if {
      d := tools.decision with input as {
          "phase": "call", "agent_context": "cron", "permitted_managed_tools": [],
          "tool": {"name": "get_current_time", "source_type": "builtin",
                   "risk_level": "safe", "managed": false, "disabled": false},
      }
      d.allow == false
  }

Exit status 1 if a test fails or the policies do not compile.`

func policyTest(ctx context.Context, args []string, stdio IO) int {
	fs := NewFlagSet(stdio, "policy test", "policy test [-v] [--run REGEX] [DIR]", testAbout)
	verbose := fs.Bool("v", false, "list every test, not only failures")
	run := fs.String("run", "", "run only the tests whose name matches this regular expression")
	if code, ok := Parse(fs, args, stdio); !ok {
		return code
	}
	dir, err := policyDir(fs)
	if err != nil {
		return Fail(stdio, err)
	}
	results, err := policy.Test(ctx, dir, policy.TestOptions{Run: *run})
	var le *policy.LoadError
	if errors.As(err, &le) {
		for _, p := range le.Problems {
			fmt.Fprintln(stdio.Err, p.String())
		}
		return ExitFailed
	}
	if err != nil {
		return Fail(stdio, err)
	}
	if len(results) == 0 {
		fmt.Fprintln(stdio.Err, "no tests found")
		return ExitFailed
	}
	if err := policy.ReportTests(stdio.Out, results, *verbose); err != nil {
		return Fail(stdio, err)
	}
	for _, r := range results {
		if !r.Pass() && !r.Skip {
			return ExitFailed
		}
	}
	return ExitOK
}

const evalAbout = `
Evaluates data.nagent.tools.decision (or, with --memory,
data.nagent.memory.decision) for one input document and prints the decision
as JSON. The input is JSON or YAML, in the shape the engine builds (see
policy/README.md); "-" reads standard input. Nothing is recorded in the
audit trail. A decision that fails to evaluate is printed as the denial the
engine would apply, and the exit status is 1.

Example input (call.json):

  {"phase": "call",
   "tool": {"name": "send_email", "source_type": "mcp", "risk_level": "high",
            "managed": false, "disabled": false},
   "args": {"to": "ops@example.com"},
   "session": {"id": "sess_1", "source": "api"},
   "agent_context": "cron", "tool_exposure_policy": "default",
   "execution_context_mode": "", "trusted_metadata": {},
   "permitted_managed_tools": [], "time": "2026-06-27T15:52:06Z"}

  nagent policy eval --input call.json
  {"allow": false, "confirm": false, "reasons": ["high-risk tool needs a
   human's confirmation, and no human can answer in a cron run"], ...}`

func policyEval(ctx context.Context, args []string, stdio IO) int {
	fs := NewFlagSet(stdio, "policy eval", "policy eval --input FILE [--memory] [--dir DIR]", evalAbout)
	input := fs.String("input", "", "the input document, JSON or YAML (- for standard input)")
	memory := fs.Bool("memory", false, "evaluate a memory-write decision (package nagent.memory)")
	dirFlag := fs.String("dir", "", "the admin policy directory (default $NAGENT_HOME/policies)")
	if code, ok := Parse(fs, args, stdio); !ok {
		return code
	}
	if *input == "" || fs.NArg() > 0 {
		fmt.Fprintln(stdio.Err, "nagent policy eval: give the input document with --input FILE")
		return ExitUsage
	}
	dir := *dirFlag
	if dir == "" {
		var err error
		if dir, err = policyDir(fs); err != nil {
			return Fail(stdio, err)
		}
	}
	doc, err := readInputDocument(*input, stdio.In)
	if err != nil {
		return Fail(stdio, err)
	}
	e, err := policy.New(ctx, policy.Options{Dir: dir, Log: Logger(io.Discard)})
	if err != nil {
		return Fail(stdio, err)
	}
	defer e.Close()
	if err := e.LastError(); err != nil {
		fmt.Fprintf(stdio.Err, "nagent policy eval: your policies do not load, so this is the embedded defaults' decision: %v\n", err)
	}
	var out any
	if *memory {
		d, evalErr := e.EvalMemory(ctx, doc)
		if d.Reasons == nil {
			d.Reasons = []string{}
		}
		out, err = d, evalErr
	} else {
		d, evalErr := e.EvalTools(ctx, doc)
		if d.Reasons == nil {
			d.Reasons = []string{}
		}
		out, err = d, evalErr
	}
	writeJSON(stdio.Out, out)
	if err != nil {
		fmt.Fprintln(stdio.Err, "nagent: evaluation failed, which is a denial:", err)
		return ExitFailed
	}
	return ExitOK
}

// readInputDocument reads a JSON or YAML document from path ("-": in).
func readInputDocument(path string, in io.Reader) (map[string]any, error) {
	var raw []byte
	var err error
	if path == "-" {
		raw, err = io.ReadAll(in)
	} else {
		raw, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("read input: %w", err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil { // YAML is a superset of JSON
		return nil, fmt.Errorf("input %s: %w", path, err)
	}
	if doc == nil {
		return nil, fmt.Errorf("input %s: empty; want a JSON or YAML object", path)
	}
	return doc, nil
}

const decisionsAbout = `
Reads the audit trail: every tool-call decision the policy engine took, with
its time, session, tool, outcome, reasons, the policy revision that decided
and how long evaluation took. Arguments are stored redacted (values of keys
such as token, password or api_key, and credential-looking strings, are
replaced). Records are kept when a session is deleted.

Example:
  nagent policy decisions --session sess_1a2b
  nagent policy decisions --limit 200 --json`

func policyDecisions(ctx context.Context, args []string, stdio IO) int {
	fs := NewFlagSet(stdio, "policy decisions", "policy decisions [--session ID] [--limit N] [--json]", decisionsAbout)
	session := fs.String("session", "", "only the decisions of this session")
	limit := fs.Int("limit", 50, "at most this many decisions")
	asJSON := fs.Bool("json", false, "print JSON, with the redacted arguments")
	if code, ok := Parse(fs, args, stdio); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintln(stdio.Err, "nagent policy decisions: unexpected arguments; use --session ID")
		return ExitUsage
	}
	_, db, err := openStore(ctx)
	if err != nil {
		return Fail(stdio, err)
	}
	defer db.Close()
	list, err := db.ListPolicyDecisions(ctx, store.PolicyDecisionFilter{SessionID: *session, Limit: *limit})
	if err != nil {
		return Fail(stdio, err)
	}
	if *asJSON {
		if list == nil {
			list = []*store.PolicyDecision{}
		}
		return Fail(stdio, writeJSON(stdio.Out, map[string]any{"decisions": list}))
	}
	if len(list) == 0 {
		fmt.Fprintln(stdio.Out, "no policy decisions recorded yet")
		return ExitOK
	}
	tw := tabwriter.NewWriter(stdio.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tSESSION\tTOOL\tDECISION\tEVAL\tREVISION\tREASONS")
	for _, d := range list {
		outcome := "allow"
		switch {
		case d.Error != "":
			outcome = "deny (error)"
		case !d.Allow:
			outcome = "deny"
		case d.Confirm:
			outcome = "confirm"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%dµs\t%s\t%s\n", d.CreatedAt.Local().Format("2006-01-02 15:04:05"),
			d.SessionID, d.Tool, outcome, d.EvalMicros, d.Revision, strings.Join(d.Reasons, "; "))
	}
	return Fail(stdio, tw.Flush())
}
