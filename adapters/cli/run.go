package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/nagent/nagent/runtime/agent"
	"github.com/nagent/nagent/runtime/chat"
	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/memory"
)

// runOutput is the --json shape of `nagent run`.
type runOutput struct {
	SessionID  string    `json:"session_id"`
	Content    string    `json:"content"`
	Status     string    `json:"status"`
	Iterations int       `json:"iterations"`
	Usage      llm.Usage `json:"usage"`
	Error      string    `json:"error,omitempty"`
}

// Run is `nagent run [--session ID] [--json] PROMPT`.
func Run(ctx context.Context, args []string, stdio IO) int {
	fs := NewFlagSet(stdio, "run", "run [--session ID] [--memory LIST] [--json] PROMPT", `
Runs one conversation turn and prints the final answer. The model may call
tools on the way; the turn is stored in session memory, so --session ID
continues a conversation (see "nagent session list").

Examples:
  nagent run "What time is it in UTC?"
  nagent run --session sess_1234 --json "And in Tokyo?"
  nagent run --memory builtin,external_memory_1 "现在几点了？"`)
	session := fs.String("session", "", "continue this session instead of starting a new one")
	memoryList := fs.String("memory", "", "external memory of a new session: comma-separated providers and\nprojects (default: external_memory.enabled)")
	asJSON := fs.Bool("json", false, "print a JSON object: session_id, content, status, iterations, usage")
	if err := parse(fs, args); err != nil {
		return Fail(stdio, err)
	}
	prompt := strings.TrimSpace(strings.Join(fs.Args(), " "))
	if prompt == "" {
		fs.Usage()
		return ExitUsage
	}
	memories := splitList(*memoryList)
	if err := checkMemoryList(memories); err != nil {
		fmt.Fprintln(stdio.Err, "nagent run:", err)
		return ExitUsage
	}
	// Ctrl-C or SIGTERM cancels the turn; the runtime records it as
	// cancelled and the command exits 130.
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
	noticeUnknownSession(ctx, a.DB, *session, stdio)

	res, err := a.Chat.Complete(ctx, chat.Request{
		SessionID: *session, Source: "cli",
		Messages:       []llm.Message{{Role: llm.RoleUser, Content: prompt}},
		ExternalMemory: memories,
	})
	if err != nil {
		if cancelled(ctx, stdio, err) {
			return ExitCancelled
		}
		return Fail(stdio, err)
	}
	if *asJSON {
		writeJSON(stdio.Out, runOutput{
			SessionID: res.SessionID, Content: res.Content, Status: res.Status,
			Iterations: res.Iterations, Usage: res.Usage, Error: res.Error,
		})
	} else if res.Status == memory.StatusCompleted {
		fmt.Fprintln(stdio.Out, res.Content)
	} else {
		fmt.Fprintf(stdio.Err, "nagent: turn %s: %s (session %s)\n", res.Status, res.Error, res.SessionID)
	}
	return resultCode(res)
}

// splitList splits a comma-separated flag value; "" means nil (the default).
func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// checkMemoryList refuses --memory entries that can name no provider: each
// must be builtin, a retrieval provider or a project name.
func checkMemoryList(entries []string) error {
	for _, e := range entries {
		if e == memory.BuiltinProvider || slices.Contains(memory.RetrievalProviders, e) {
			continue
		}
		if _, ok := memory.ProjectName(e); !ok {
			return fmt.Errorf("--memory: %q is not a memory provider or project; use %s, %s, or a project name "+
				"(letters, digits, _ . -; optionally %sNAME), comma-separated",
				e, memory.BuiltinProvider, strings.Join(memory.RetrievalProviders, ", "), memory.ProjectPrefix)
		}
	}
	return nil
}

func resultCode(res *agent.Result) int {
	switch res.Status {
	case memory.StatusCompleted:
		return ExitOK
	case memory.StatusCancelled:
		return ExitCancelled
	}
	return ExitFailed
}
