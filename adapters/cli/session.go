package cli

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/nagent/nagent/store"
)

const sessionAbout = `
Inspects session memory.

  list        sessions, most recently updated first, with the status of
              their last turn; --source S keeps those from one source
              (cli, api, ...), --limit N at most N
  show ID     one session: messages, tool-call records, task state, summary
  delete ID   a session and everything recorded for it

Every subcommand takes --json for scripts.`

var sessionSynopsis = map[string]string{
	"list":   "session list [--source S] [--limit N] [--json]",
	"show":   "session show ID [--json]",
	"delete": "session delete ID [--json]",
}

// Session is `nagent session list|show ID|delete ID`.
func Session(ctx context.Context, args []string, stdio IO) int {
	sub, fs, rest, code, ok := subcommand(stdio, "session", "session list [--source S] [--limit N]|show ID|delete ID [--json]", sessionAbout, sessionSynopsis, args)
	if !ok {
		return code
	}
	asJSON := fs.Bool("json", false, "print JSON")
	source := fs.String("source", "", "with list: only sessions from this source (cli, api, ...)")
	limit := fs.Int("limit", 50, "with list: at most this many sessions")
	if err := parse(fs, rest); err != nil {
		return Fail(stdio, err)
	}
	if sub != "list" && fs.NArg() != 1 {
		fmt.Fprintf(stdio.Err, "nagent session %s: give exactly one session id\n", sub)
		return ExitUsage
	}
	_, db, err := openStore(ctx)
	if err != nil {
		return Fail(stdio, err)
	}
	defer db.Close()

	switch sub {
	case "list":
		err = sessionList(ctx, db, store.SessionFilter{Source: *source, Limit: *limit}, *asJSON, stdio)
	case "show":
		err = sessionShow(ctx, db, fs.Arg(0), *asJSON, stdio)
	case "delete":
		if err = db.DeleteSession(ctx, fs.Arg(0)); err == nil {
			if *asJSON {
				writeJSON(stdio.Out, map[string]any{"deleted": true, "session_id": fs.Arg(0)})
			} else {
				fmt.Fprintf(stdio.Out, "deleted session %s\n", fs.Arg(0))
			}
		}
	}
	return Fail(stdio, err)
}

// sessionRow is one session of `nagent session list`, with the status of
// its last turn (running, completed, failed, cancelled; "" before any).
type sessionRow struct {
	*store.Session
	TaskStatus string `json:"task_status,omitempty"`
}

func sessionList(ctx context.Context, db *store.DB, f store.SessionFilter, asJSON bool, stdio IO) error {
	list, err := db.ListSessions(ctx, f)
	if err != nil {
		return err
	}
	rows := make([]sessionRow, 0, len(list))
	for _, s := range list {
		ts, err := db.GetTaskState(ctx, s.ID)
		if err != nil {
			return err
		}
		row := sessionRow{Session: s}
		if ts != nil {
			row.TaskStatus = ts.Status
		}
		rows = append(rows, row)
	}
	if asJSON {
		return writeJSON(stdio.Out, map[string]any{"sessions": rows})
	}
	if len(rows) == 0 {
		if f.Source != "" {
			fmt.Fprintf(stdio.Out, "no sessions with source %q; see all with: nagent session list\n", f.Source)
		} else {
			fmt.Fprintln(stdio.Out, "no sessions yet; start one with: nagent chat")
		}
		return nil
	}
	tw := tabwriter.NewWriter(stdio.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSOURCE\tSTATUS\tUPDATED\tTITLE")
	for _, r := range rows {
		status := r.TaskStatus
		if status == "" {
			status = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Source, status, r.UpdatedAt.Local().Format("2006-01-02 15:04"), r.Title)
	}
	return tw.Flush()
}

// sessionDetail is the --json shape of `nagent session show`.
type sessionDetail struct {
	Session   *store.Session    `json:"session"`
	Messages  []*store.Message  `json:"messages"`
	ToolCalls []*store.ToolCall `json:"tool_calls"`
	TaskState *store.TaskState  `json:"task_state"`
	Summary   *string           `json:"summary"`
}

func sessionShow(ctx context.Context, db *store.DB, id string, asJSON bool, stdio IO) error {
	d := sessionDetail{Messages: []*store.Message{}, ToolCalls: []*store.ToolCall{}}
	var err error
	if d.Session, err = db.GetSession(ctx, id); err != nil {
		return err
	}
	if msgs, err := db.ListMessages(ctx, id); err != nil {
		return err
	} else if msgs != nil {
		d.Messages = msgs
	}
	if calls, err := db.ListToolCalls(ctx, id); err != nil {
		return err
	} else if calls != nil {
		d.ToolCalls = calls
	}
	if d.TaskState, err = db.GetTaskState(ctx, id); err != nil {
		return err
	}
	sum, err := db.GetSummary(ctx, id)
	if err != nil {
		return err
	}
	if sum != nil {
		d.Summary = &sum.Content
	}
	if asJSON {
		return writeJSON(stdio.Out, d)
	}
	out := stdio.Out
	fmt.Fprintf(out, "session %s (%s) %q\n", d.Session.ID, d.Session.Source, d.Session.Title)
	if d.TaskState != nil {
		fmt.Fprintf(out, "task: %s after %d model call(s)", d.TaskState.Status, d.TaskState.IterationCount)
		if d.TaskState.Error != "" {
			fmt.Fprintf(out, " (%s)", d.TaskState.Error)
		}
		fmt.Fprintln(out)
	}
	if d.Summary != nil {
		fmt.Fprintf(out, "summary: %s\n", *d.Summary)
	}
	fmt.Fprintln(out)
	for _, m := range d.Messages {
		label := m.Role
		if m.Name != "" {
			label += " " + m.Name
		}
		if m.Status != "" {
			label += " [" + m.Status + "]"
		}
		fmt.Fprintf(out, "%s: %s\n", label, m.Content)
		if len(m.ToolCalls) > 0 {
			fmt.Fprintf(out, "  tool_calls: %s\n", m.ToolCalls)
		}
	}
	if len(d.ToolCalls) > 0 {
		fmt.Fprintln(out, "\ntool calls:")
		for _, c := range d.ToolCalls {
			fmt.Fprintf(out, "  %s %s(%s) -> %s in %d ms\n", c.ID, c.Name, c.Arguments, c.Status, c.DurationMS)
		}
	}
	return nil
}
