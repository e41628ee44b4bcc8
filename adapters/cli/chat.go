package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/nagent/nagent/runtime/agent"
	"github.com/nagent/nagent/runtime/chat"
	"github.com/nagent/nagent/runtime/gateway"
	"github.com/nagent/nagent/runtime/memory"
	"github.com/nagent/nagent/runtime/tools"
)

const chatHelp = `Commands:
  /new       start a new session
  /session   print the current session id
  /help      show this help
  /exit      quit (Ctrl-D works too)
Ctrl-C stops the turn in progress; what was said so far is kept.`

// Chat is `nagent chat [--session ID]`: a line-based terminal conversation
// that streams the answer and shows tool calls as they happen.
func Chat(ctx context.Context, args []string, stdio IO) int {
	fs := NewFlagSet(stdio, "chat", "chat [--session ID]", `
Starts a conversation in the terminal. Each line you type is one turn; the
answer streams as it is generated and tool calls are shown as they run.
Every turn is stored, so "nagent chat --session ID" picks up where you left.

`+chatHelp)
	session := fs.String("session", "", "continue this session instead of starting a new one")
	if err := parse(fs, args); err != nil {
		return Fail(stdio, err)
	}
	a, err := loadApp(ctx, stdio)
	if err != nil {
		return Fail(stdio, err)
	}
	defer a.Close()

	noticeUnknownSession(ctx, a.DB, *session, stdio)
	id := *session
	if id == "" {
		id = chat.NewSessionID()
	}
	fmt.Fprintf(stdio.Out, "N-Agent chat, session %s (model %s). /help for commands.\n", id, a.Config.LLM.Model)
	in := bufio.NewScanner(stdio.In)
	in.Buffer(make([]byte, 64<<10), 1<<20)
	for {
		fmt.Fprint(stdio.Out, "> ")
		if !in.Scan() {
			fmt.Fprintln(stdio.Out)
			return ExitOK
		}
		line := strings.TrimSpace(in.Text())
		switch line {
		case "":
			continue
		case "/exit", "/quit":
			return ExitOK
		case "/help":
			fmt.Fprintln(stdio.Out, chatHelp)
			continue
		case "/session":
			fmt.Fprintln(stdio.Out, id)
			continue
		case "/new":
			id = chat.NewSessionID()
			fmt.Fprintf(stdio.Out, "new session %s\n", id)
			continue
		}
		if err := chatTurn(ctx, a.Gateway, id, line, &lineConfirmer{in: in, out: stdio.Out}, stdio.Out); err != nil {
			Fail(stdio, err)
		}
	}
}

// chatTurn runs one streamed turn through the gateway; Ctrl-C cancels just
// this turn.
func chatTurn(ctx context.Context, gw *gateway.Service, sessionID, line string, confirm tools.Confirmer, out io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	r := &turnRenderer{out: out}
	_, err := gw.Handle(ctx, gateway.Message{
		Conversation: gateway.Conversation{Platform: gateway.PlatformCLI, ChatID: sessionID},
		SessionID:    sessionID,
		Text:         line,
		Confirmer:    confirm,
	}, r.render)
	return err
}

// lineConfirmer asks at the terminal about a call the policy marked
// confirm. Only an explicit "y" or "yes" approves; an empty line, anything
// else or the end of input denies.
type lineConfirmer struct {
	in  *bufio.Scanner
	out io.Writer
}

// Confirm implements tools.Confirmer.
func (c *lineConfirmer) Confirm(ctx context.Context, call tools.ToolCallRequest, def tools.ToolDefinition, reasons []string) (bool, error) {
	fmt.Fprintf(c.out, "\n[confirm] %s %s\n", call.Name, clipArgs(call.Arguments))
	if len(reasons) > 0 {
		fmt.Fprintf(c.out, "          policy: %s\n", strings.Join(reasons, "; "))
	}
	fmt.Fprint(c.out, "Allow this call? [y/N] ")
	if !c.in.Scan() {
		return false, nil
	}
	switch strings.ToLower(strings.TrimSpace(c.in.Text())) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}

// turnRenderer prints loop events as terminal text.
type turnRenderer struct {
	out     io.Writer
	midLine bool // the cursor is after streamed text
}

func (r *turnRenderer) newline() {
	if r.midLine {
		fmt.Fprintln(r.out)
		r.midLine = false
	}
}

func (r *turnRenderer) render(e agent.Event) {
	switch e.Type {
	case agent.EventDelta:
		if e.Content != "" {
			fmt.Fprint(r.out, e.Content)
			r.midLine = !strings.HasSuffix(e.Content, "\n")
		}
	case agent.EventToolStarted:
		r.newline()
		fmt.Fprintf(r.out, "[tool] %s %s\n", e.Tool.Name, clipArgs(e.Tool.Arguments))
	case agent.EventToolFinished:
		fmt.Fprintf(r.out, "[tool] %s -> %s (%d ms)\n", e.Tool.Name, e.Tool.Status, e.Tool.DurationMS)
	case agent.EventWarning:
		r.newline()
		fmt.Fprintf(r.out, "[warning] %s\n", e.Message)
	case agent.EventRunFinished:
		r.newline()
		switch e.Result.Status {
		case memory.StatusFailed:
			fmt.Fprintf(r.out, "[failed] %s\n", e.Result.Error)
		case memory.StatusCancelled:
			fmt.Fprintln(r.out, "[cancelled]")
		}
	}
}

func clipArgs(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
