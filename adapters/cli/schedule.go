package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/runtime/scheduler"
	"github.com/nagent/nagent/store"
)

const scheduleAbout = `
Manages scheduled agent runs. A schedule sends its prompt to the agent as a
new "cron" session whenever it fires, and delivers the answer.

  add NAME --cron EXPR|--every DUR|--at TIME --prompt TEXT [flags]
                 a new schedule:
                   --cron "0 9 * * 1-5"   5-field cron (or @daily, @hourly),
                                          read in --tz (default UTC)
                   --every 15m            every interval, counted from now
                   --at "2026-12-03 09:00" once, in --tz; or RFC 3339
                 --deliver inbox | webhook:URL | feishu:CHAT_ID
                   where the answer goes (default: nowhere, only recorded):
                   the dashboard inbox, a POST of JSON to URL (schedule_id,
                   run_id, session_id, status, content, ...), or a Feishu chat
                   (needs "nagent serve" with the Feishu adapter). Failed
                   deliveries are retried with backoff (scheduler.delivery).
                 --catch-up skip|run_once
                   runs that fell due while "nagent serve" was not running:
                   skip records one skipped_missed run and waits for the next
                   occurrence (default); run_once runs once on start, however
                   many were missed.
  list           schedules, their next run and state
  show NAME      one schedule and its recent runs (status, session, delivery)
  run NAME       run it now, in THIS process, and wait for the answer and the
                 delivery. It needs a model configured (as "nagent run" does).
                 If a run of the schedule is already running (in "nagent
                 serve" or elsewhere), it is not started: it is recorded as
                 skipped_overlap and the command exits 1.
  pause NAME     stop it firing (a running run finishes)
  resume NAME    fire again from the next occurrence; those in the pause are
                 not caught up
  remove NAME    delete it and its run records (inbox messages stay)
  inbox          the answers delivered to the inbox, newest first (also the
                 dashboard's Inbox page); --unread for unread ones only,
                 --mark-read to mark the ones shown as read

Schedules fire only while "nagent serve" runs (scheduler.enabled, default
true); it sees schedules added, paused or removed here within a tick.
Scheduled runs use agent_context=cron and tool exposure safe_only: tools of
source agent and execute_code are hidden, and a tool that needs a human's
confirmation is denied. Every subcommand takes --json for scripts.`

var scheduleSynopsis = map[string]string{
	"add":    "schedule add NAME --cron EXPR|--every DUR|--at TIME --prompt TEXT [--tz ZONE] [--deliver TARGET] [--catch-up skip|run_once] [--paused] [--json]",
	"list":   "schedule list [--json]",
	"show":   "schedule show NAME [--runs N] [--json]",
	"run":    "schedule run NAME [--json]",
	"pause":  "schedule pause NAME [--json]",
	"resume": "schedule resume NAME [--json]",
	"remove": "schedule remove NAME [--json]",
	"inbox":  "schedule inbox [--unread] [--limit N] [--mark-read] [--json]",
}

// Schedule is `nagent schedule add|list|show|run|pause|resume|remove`.
func Schedule(ctx context.Context, args []string, stdio IO) int {
	sub, fset, rest, code, ok := subcommand(stdio, "schedule", "schedule add|list|show|run|pause|resume|remove|inbox ...", scheduleAbout, scheduleSynopsis, args)
	if !ok {
		return code
	}
	asJSON := fset.Bool("json", false, "print JSON")
	var add struct {
		cron, every, at, prompt, tz, deliver, catchUp string
		paused                                        bool
	}
	var runs int
	var inbox struct {
		unread, markRead bool
		limit            int
	}
	switch sub {
	case "add":
		fset.StringVar(&add.cron, "cron", "", "5-field cron expression or @daily/@hourly/..., read in --tz")
		fset.StringVar(&add.every, "every", "", "interval of at least 1 minute, such as 90s, 15m or 24h")
		fset.StringVar(&add.at, "at", "", `one run at this time: "2026-12-03 09:00" (in --tz) or RFC 3339`)
		fset.StringVar(&add.prompt, "prompt", "", "what the agent is asked each time")
		fset.StringVar(&add.tz, "tz", "UTC", "IANA time zone of --cron and --at, e.g. Asia/Shanghai")
		fset.StringVar(&add.deliver, "deliver", "", "where answers go: inbox, webhook:URL or feishu:CHAT_ID")
		fset.StringVar(&add.catchUp, "catch-up", scheduler.CatchUpSkip, "runs missed while nagent was down: skip or run_once")
		fset.BoolVar(&add.paused, "paused", false, "add it paused (see resume)")
	case "show":
		fset.IntVar(&runs, "runs", 10, "how many recent runs to show")
	case "inbox":
		fset.BoolVar(&inbox.unread, "unread", false, "only messages not yet read")
		fset.IntVar(&inbox.limit, "limit", 20, "how many messages at most")
		fset.BoolVar(&inbox.markRead, "mark-read", false, "mark the messages shown as read")
	}
	operands, code, ok := parseInterleaved(fset, rest, stdio)
	if !ok {
		return code
	}
	want := 1
	if sub == "list" || sub == "inbox" {
		want = 0
	}
	if len(operands) != want {
		fmt.Fprintf(stdio.Err, "nagent schedule %s: usage: nagent %s\n", sub, scheduleSynopsis[sub])
		return ExitUsage
	}
	if sub == "run" {
		return scheduleRun(ctx, operands[0], *asJSON, stdio)
	}
	_, db, err := openStore(ctx)
	if err != nil {
		return Fail(stdio, err)
	}
	defer db.Close()
	sch := scheduler.New(db, scheduler.Options{Log: Logger(stdio.Err)})

	var sc store.Schedule
	switch sub {
	case "add":
		var n scheduler.NewSchedule
		if n, err = newScheduleFromFlags(operands[0], add.cron, add.every, add.at); err == nil {
			n.Prompt, n.Timezone, n.Target, n.CatchUp, n.Paused = add.prompt, add.tz, add.deliver, add.catchUp, add.paused
			if sc, err = sch.Add(ctx, n); err == nil {
				err = printSchedule(stdio.Out, "added", sc, *asJSON)
			}
		}
	case "list":
		err = scheduleList(ctx, sch, *asJSON, stdio)
	case "inbox":
		err = scheduleInbox(ctx, sch, store.InboxFilter{UnreadOnly: inbox.unread, Limit: inbox.limit}, inbox.markRead, *asJSON, stdio)
	case "show":
		err = scheduleShow(ctx, sch, operands[0], runs, *asJSON, stdio)
	case "pause":
		if sc, err = sch.Pause(ctx, operands[0]); err == nil {
			err = printSchedule(stdio.Out, "paused", sc, *asJSON)
		}
	case "resume":
		if sc, err = sch.Resume(ctx, operands[0]); err == nil {
			err = printSchedule(stdio.Out, "resumed", sc, *asJSON)
		}
	case "remove":
		if sc, err = sch.Remove(ctx, operands[0]); err == nil {
			if *asJSON {
				err = writeJSON(stdio.Out, map[string]any{"removed": true, "id": sc.ID, "name": sc.Name})
			} else {
				fmt.Fprintf(stdio.Out, "removed schedule %s (%s)\n", sc.Name, sc.ID)
			}
		}
	}
	return Fail(stdio, err)
}

func scheduleInbox(ctx context.Context, sch *scheduler.Scheduler, f store.InboxFilter, markRead, asJSON bool, stdio IO) error {
	if f.Limit <= 0 {
		return errs.Errorf(errs.EINVALID, "--limit must be at least 1")
	}
	msgs, err := sch.Inbox(ctx, f)
	if err != nil {
		return err
	}
	if markRead {
		for _, m := range msgs {
			if err := sch.MarkInboxRead(ctx, m.ID); err != nil {
				return err
			}
		}
	}
	if asJSON {
		if msgs == nil {
			msgs = []store.InboxMessage{}
		}
		return writeJSON(stdio.Out, map[string]any{"messages": msgs})
	}
	if len(msgs) == 0 {
		fmt.Fprintln(stdio.Out, "the inbox is empty; schedules added with --deliver inbox put their answers here")
		return nil
	}
	for _, m := range msgs {
		state := "unread"
		if m.ReadAt != nil {
			state = "read"
		}
		fmt.Fprintf(stdio.Out, "== %s  %s  %s  %s  session %s\n%s\n\n", m.CreatedAt.Local().Format("2006-01-02 15:04"),
			m.ScheduleName, m.Status, state, m.SessionID, strings.TrimSpace(m.Content))
	}
	return nil
}

func newScheduleFromFlags(name, cronSpec, every, at string) (scheduler.NewSchedule, error) {
	n := scheduler.NewSchedule{Name: name}
	set := 0
	for _, k := range []struct{ kind, spec string }{{scheduler.KindCron, cronSpec}, {scheduler.KindEvery, every}, {scheduler.KindOnce, at}} {
		if k.spec != "" {
			n.Kind, n.Spec = k.kind, k.spec
			set++
		}
	}
	if set != 1 {
		return n, errs.Errorf(errs.EINVALID, "give exactly one of --cron EXPR, --every DURATION or --at TIME")
	}
	return n, nil
}

func printSchedule(w io.Writer, verb string, sc store.Schedule, asJSON bool) error {
	if asJSON {
		return writeJSON(w, map[string]any{"schedule": sc})
	}
	fmt.Fprintf(w, "%s schedule %s (%s): %s, next run %s\n", verb, sc.Name, sc.ID,
		scheduler.Describe(sc.Kind, sc.Spec, sc.Timezone), formatWhen(sc.NextRunAt, sc.Timezone))
	return nil
}

func formatWhen(t *time.Time, tz string) string {
	if t == nil {
		return "none"
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		loc = time.UTC
	}
	return t.In(loc).Format("2006-01-02 15:04:05 MST")
}

func scheduleList(ctx context.Context, sch *scheduler.Scheduler, asJSON bool, stdio IO) error {
	list, err := sch.List(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		if list == nil {
			list = []store.Schedule{}
		}
		return writeJSON(stdio.Out, map[string]any{"schedules": list})
	}
	if len(list) == 0 {
		fmt.Fprintln(stdio.Out, `no schedules yet; add one with: nagent schedule add daily --cron "0 9 * * *" --prompt "..."`)
		return nil
	}
	tw := tabwriter.NewWriter(stdio.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tWHEN\tSTATE\tNEXT RUN\tDELIVER\tCATCH-UP")
	for _, s := range list {
		state := "enabled"
		if !s.Enabled {
			state = "paused"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, scheduler.Describe(s.Kind, s.Spec, s.Timezone), state,
			formatWhen(s.NextRunAt, s.Timezone), scheduler.FormatTarget(s.DeliveryKind, s.DeliveryTarget), s.CatchUp)
	}
	return tw.Flush()
}

func scheduleShow(ctx context.Context, sch *scheduler.Scheduler, key string, n int, asJSON bool, stdio IO) error {
	sc, err := sch.Get(ctx, key)
	if err != nil {
		return err
	}
	runs, err := sch.RecentRuns(ctx, sc.ID, n)
	if err != nil {
		return err
	}
	if runs == nil {
		runs = []store.ScheduleRun{}
	}
	if asJSON {
		return writeJSON(stdio.Out, map[string]any{"schedule": sc, "runs": runs})
	}
	out := stdio.Out
	state := "enabled"
	if !sc.Enabled {
		state = "paused"
	}
	fmt.Fprintf(out, "schedule %s (%s), %s\n", sc.Name, sc.ID, state)
	fmt.Fprintf(out, "  when:     %s, catch-up %s\n", scheduler.Describe(sc.Kind, sc.Spec, sc.Timezone), sc.CatchUp)
	fmt.Fprintf(out, "  next run: %s\n  last run: %s\n", formatWhen(sc.NextRunAt, sc.Timezone), formatWhen(sc.LastRunAt, sc.Timezone))
	fmt.Fprintf(out, "  deliver:  %s\n  prompt:   %s\n", scheduler.FormatTarget(sc.DeliveryKind, sc.DeliveryTarget), truncate(sc.Prompt, 100))
	if len(runs) == 0 {
		fmt.Fprintln(out, "\nno runs yet")
		return nil
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSCHEDULED FOR\tTRIGGER\tSTATUS\tSESSION\tDELIVERY\tDETAIL")
	for _, r := range runs {
		detail := r.Error
		if detail == "" {
			detail = r.Note
		}
		if r.DeliveryError != "" {
			detail = strings.TrimSpace(detail + " delivery: " + r.DeliveryError)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s (%d)\t%s\n", r.ID, formatWhen(&r.ScheduledFor, sc.Timezone), r.Trigger,
			r.Status, r.SessionID, r.DeliveryStatus, r.DeliveryAttempts, truncate(detail, 80))
	}
	return tw.Flush()
}

// scheduleRun runs a schedule in this process with the configured model.
func scheduleRun(ctx context.Context, key string, asJSON bool, stdio IO) int {
	// Ctrl-C or SIGTERM cancels the run; it is recorded as cancelled.
	ctx, stop := signalContext(ctx)
	defer stop()
	a, err := loadApp(ctx, stdio)
	if err != nil {
		if cancelled(ctx, stdio, err) {
			return ExitCancelled
		}
		return Fail(stdio, err)
	}
	defer a.Close()
	run, err := a.Scheduler().RunNow(ctx, key)
	if err != nil {
		if cancelled(ctx, stdio, err) {
			return ExitCancelled
		}
		return Fail(stdio, err)
	}
	if asJSON {
		writeJSON(stdio.Out, map[string]any{"run": run})
	} else {
		switch run.Status {
		case store.RunCompleted:
			fmt.Fprintln(stdio.Out, run.Content)
		case store.RunSkippedOverlap:
			fmt.Fprintf(stdio.Err, "nagent schedule run: not started: %s\n", run.Note)
		default:
			fmt.Fprintf(stdio.Err, "nagent schedule run: run %s %s: %s\n", run.ID, run.Status, run.Error)
		}
		if run.DeliveryStatus == store.DeliveryFailed {
			fmt.Fprintf(stdio.Err, "nagent schedule run: delivery failed after %d attempt(s): %s\n", run.DeliveryAttempts, run.DeliveryError)
		}
		fmt.Fprintf(stdio.Err, "run %s, session %s, delivery %s\n", run.ID, run.SessionID, run.DeliveryStatus)
	}
	switch {
	case run.Status == store.RunCancelled || (run.Status != store.RunCompleted && ctx.Err() != nil):
		return ExitCancelled
	case run.Status != store.RunCompleted || run.DeliveryStatus == store.DeliveryFailed:
		return ExitFailed
	}
	return ExitOK
}
