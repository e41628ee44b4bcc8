// Package cli is the terminal entry adapter: one-shot `nagent run`, the
// line-based `nagent chat`, and `nagent session` to inspect session memory.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/nagent/nagent/runtime/app"
	"github.com/nagent/nagent/runtime/config"
	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/store"
)

// IO is a command's standard streams.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
}

// Exit codes.
const (
	ExitOK        = 0
	ExitFailed    = 1
	ExitUsage     = 2
	ExitCancelled = 130
)

// errUsage marks an error already explained by the flag set's usage text.
var errUsage = errors.New("usage")

// NewFlagSet builds a flag set whose usage text starts with the command's
// synopsis and explanation.
func NewFlagSet(stdio IO, name, synopsis, about string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stdio.Err)
	fs.Usage = func() {
		fmt.Fprintf(stdio.Err, "Usage: nagent %s\n\n%s\n", synopsis, strings.TrimSpace(about))
		var hasFlags bool
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprintln(stdio.Err, "\nFlags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parse parses args; it returns errUsage after printing help or a flag error.
// Flags may come before, between or after the positional arguments
// ("nagent run PROMPT --json"); "--" ends the flags, and a lone "-" is a
// positional argument (stdin). Afterwards fs.Args() holds every positional
// argument in order.
func parse(fs *flag.FlagSet, args []string) error {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return flag.ErrHelp
			}
			return errUsage
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if stoppedAtDashDash(fs, args[:len(args)-len(rest)]) {
			positional = append(positional, rest...)
			break
		}
		positional, args = append(positional, rest[0]), rest[1:]
	}
	// Leave the positional arguments in fs.Args(); "--" stops the flag
	// package from reading any of them as a flag.
	_ = fs.Parse(append([]string{"--"}, positional...))
	return nil
}

// stoppedAtDashDash reports whether the flag package, having consumed
// parsed (flags and their values), stopped at a "--" that ends the flags,
// and not at one that is a flag's value ("--session --").
func stoppedAtDashDash(fs *flag.FlagSet, parsed []string) bool {
	wantValue := false
	for i, a := range parsed {
		switch {
		case wantValue:
			wantValue = false
		case a == "--":
			return i == len(parsed)-1
		case !strings.Contains(a, "="):
			if f := fs.Lookup(strings.TrimLeft(a, "-")); f != nil {
				b, isBool := f.Value.(interface{ IsBoolFlag() bool })
				wantValue = !isBool || !b.IsBoolFlag()
			}
		}
	}
	return false
}

// subcommand reads the subcommand of a command group ("nagent kb add ...").
// It returns the subcommand, its flag set (titled with the subcommand's
// synopsis from synopses) and the remaining arguments. When ok is false the
// caller returns code: help was printed, or the subcommand is unknown.
func subcommand(stdio IO, group, synopsis, about string, synopses map[string]string, args []string) (sub string, fs *flag.FlagSet, rest []string, code int, ok bool) {
	top := NewFlagSet(stdio, group, synopsis, about)
	if len(args) == 0 {
		top.Usage()
		return "", nil, nil, ExitUsage, false
	}
	sub, rest = args[0], args[1:]
	switch sub {
	case "-h", "-help", "--help", "help":
		top.Usage()
		return "", nil, nil, ExitOK, false
	}
	subSynopsis, known := synopses[sub]
	if !known {
		fmt.Fprintf(stdio.Err, "nagent %s: unknown subcommand %q\n", group, sub)
		top.Usage()
		return "", nil, nil, ExitUsage, false
	}
	return sub, NewFlagSet(stdio, group+" "+sub, subSynopsis, about), rest, ExitOK, true
}

// signalContext returns a copy of ctx that is cancelled on SIGINT (Ctrl-C)
// or SIGTERM, so a command's turn ends as cancelled and is recorded so.
// After the first signal the default handling is back: a second Ctrl-C
// ends the process at once.
func signalContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	context.AfterFunc(ctx, stop)
	return ctx, stop
}

// cancelled reports whether err ended a command because ctx was cancelled
// (by signalContext); it prints so and the command exits ExitCancelled.
func cancelled(ctx context.Context, stdio IO, err error) bool {
	if err == nil || ctx.Err() == nil {
		return false
	}
	fmt.Fprintln(stdio.Err, "nagent: cancelled")
	return true
}

// noticeUnknownSession prints a one-line notice when --session names a
// session that does not exist yet. It does not refuse: scripts choose their
// own session ids, and the first turn creates the session.
func noticeUnknownSession(ctx context.Context, db *store.DB, id string, stdio IO) {
	if id == "" {
		return
	}
	if _, err := db.GetSession(ctx, id); errs.Code(err) == errs.ENOTFOUND {
		fmt.Fprintf(stdio.Err, "nagent: session %s not found; starting a new session with that id\n", id)
	}
}

// Logger returns the CLI's logger: text to stderr, at NAGENT_LOG_LEVEL
// (default warn, so a chat is not interleaved with logs).
func Logger(w io.Writer) *slog.Logger {
	level := slog.LevelWarn
	if v := os.Getenv("NAGENT_LOG_LEVEL"); v != "" {
		_ = level.UnmarshalText([]byte(v))
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// openStore loads the configuration and opens session memory, for commands
// that manage stored state without running the agent.
func openStore(ctx context.Context) (*config.Config, *store.DB, error) {
	cfg, err := config.Load()
	if err != nil {
		return nil, nil, err
	}
	db, err := store.Open(ctx, cfg.DBPath())
	if err != nil {
		return nil, nil, err
	}
	return cfg, db, nil
}

// loadApp loads the configuration and wires the runtime.
func loadApp(ctx context.Context, stdio IO) (*app.App, error) {
	cfg, err := config.Load()
	if err != nil {
		return nil, err
	}
	return app.New(ctx, cfg, app.Options{Log: Logger(stdio.Err)})
}

// Parse parses a command's flags. When it returns ok=false the command
// should exit with code (help was printed, or a flag was wrong).
func Parse(fs *flag.FlagSet, args []string, stdio IO) (code int, ok bool) {
	if err := parse(fs, args); err != nil {
		return Fail(stdio, err), false
	}
	return ExitOK, true
}

// Fail prints err for a terminal user and returns the exit code.
func Fail(stdio IO, err error) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, flag.ErrHelp):
		return ExitOK
	case errors.Is(err, errUsage):
		return ExitUsage
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(stdio.Err, "nagent: cancelled")
		return ExitCancelled
	}
	fmt.Fprintln(stdio.Err, "nagent:", errs.MessageOrError(err))
	return ExitFailed
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
