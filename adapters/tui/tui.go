// Package tui is the full-screen terminal entry adapter, `nagent tui`: a
// bubbletea program that streams answers, shows tool calls as collapsible
// blocks, asks for policy confirmations, and picks sessions and models.
// Its turns go through the GatewayService as platform "cli".
package tui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/term"

	"github.com/nagent/nagent/adapters/cli"
	"github.com/nagent/nagent/runtime/app"
	"github.com/nagent/nagent/runtime/config"
)

const about = `
Starts a full-screen conversation in the terminal: answers stream and are
rendered as Markdown, tool calls show as blocks (Ctrl-O shows their details),
calls the policy marks "confirm" ask you first (y allows once, a allows for
the session; Enter or n denies), and /sessions and /model open pickers.
/help lists the commands. Ctrl-C cancels a running turn; pressed again, or
when idle, it quits. Log lines go to $NAGENT_HOME/tui.log.

For pipes and scripts, use "nagent chat" or "nagent run".`

// Run is `nagent tui [--session ID | --continue]`.
func Run(ctx context.Context, args []string, stdio cli.IO) int {
	fs := cli.NewFlagSet(stdio, "tui", "tui [--session ID | --continue]", about)
	session := fs.String("session", "", "resume this stored session")
	cont := fs.Bool("continue", false, "resume the session this terminal user talked in last")
	if code, ok := cli.Parse(fs, args, stdio); !ok {
		return code
	}
	if f, ok := stdio.In.(*os.File); !ok || !term.IsTerminal(f.Fd()) {
		return cli.Fail(stdio, errors.New("tui: standard input is not a terminal; use \"nagent chat\" or \"nagent run\" in pipes and scripts"))
	}
	cfg, err := config.Load()
	if err != nil {
		return cli.Fail(stdio, err)
	}
	logFile, err := openLog(cfg.Home)
	if err != nil {
		return cli.Fail(stdio, err)
	}
	defer logFile.Close()
	a, err := app.New(ctx, cfg, app.Options{Log: cli.Logger(logFile)})
	if err != nil {
		return cli.Fail(stdio, err)
	}
	defer a.Close()

	b := newAppBackend(a)
	id := *session
	if *cont && id == "" {
		if id, err = b.lastSession(ctx); err != nil {
			return cli.Fail(stdio, err)
		}
	}
	resumed := id != ""
	if id, err = b.Bind(ctx, id); err != nil {
		return cli.Fail(stdio, err)
	}
	m := New(ctx, b, Options{Session: id})
	if resumed {
		msgs, calls, err := b.History(ctx, id)
		if err != nil {
			return cli.Fail(stdio, err)
		}
		m.LoadHistory(msgs, calls)
	}

	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithInput(stdio.In), tea.WithOutput(stdio.Out))
	go forward(m, p)
	_, err = p.Run()
	m.quitCmd() // ends a running turn when the program ended another way
	waitTurn(m, 10*time.Second)
	if err != nil && !errors.Is(err, tea.ErrProgramKilled) {
		return cli.Fail(stdio, fmt.Errorf("tui: %w", err))
	}
	fmt.Fprintf(stdio.Out, "resume with: nagent tui --session %s\n", m.session)
	return cli.ExitOK
}

// forward hands the messages of running turns to the program until the UI
// quits.
func forward(m *Model, p *tea.Program) {
	for {
		select {
		case msg := <-m.Inbox():
			p.Send(msg)
		case <-m.Done():
			return
		}
	}
}

// waitTurn waits up to d for a cancelled turn to end, so that what it says
// last is stored before the store closes.
func waitTurn(m *Model, d time.Duration) {
	done := make(chan struct{})
	go func() { m.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}

// openLog opens $NAGENT_HOME/tui.log for appending: the screen is the
// program's, so log lines must not reach stderr.
func openLog(home string) (*os.File, error) {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, fmt.Errorf("tui: create %s: %w", home, err)
	}
	f, err := os.OpenFile(filepath.Join(home, "tui.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("tui: open the log file: %w", err)
	}
	return f, nil
}
