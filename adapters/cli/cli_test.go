package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/nagent/nagent/adapters/cli"
	"github.com/nagent/nagent/runtime/llm/scripted"
)

// parseTests: flags may come before, between or after the positional
// arguments; "--" ends the flags; a lone "-" is a positional (stdin).
var parseTests = []struct {
	name     string
	args     []string
	wantArgs []string
	wantJSON bool
	wantSess string
	wantCode int
	wantOK   bool
}{
	{"FlagsFirst", []string{"--json", "x"}, []string{"x"}, true, "", cli.ExitOK, true},
	{"FlagAfterPositional", []string{"x", "--json"}, []string{"x"}, true, "", cli.ExitOK, true},
	{"FlagBetweenPositionals", []string{"a", "--session", "s1", "b"}, []string{"a", "b"}, false, "s1", cli.ExitOK, true},
	{"EqualsForm", []string{"a", "--session=s1", "--json", "b"}, []string{"a", "b"}, true, "s1", cli.ExitOK, true},
	{"DoubleDashEndsFlags", []string{"a", "--", "--json", "-x"}, []string{"a", "--json", "-x"}, false, "", cli.ExitOK, true},
	{"DoubleDashFirst", []string{"--", "-"}, []string{"-"}, false, "", cli.ExitOK, true},
	{"SecondDoubleDashIsPositional", []string{"a", "--", "b", "--", "c"}, []string{"a", "b", "--", "c"}, false, "", cli.ExitOK, true},
	{"DoubleDashAsFlagValue", []string{"a", "--session", "--", "b", "--json"}, []string{"a", "b"}, true, "--", cli.ExitOK, true},
	{"DoubleDashAfterBoolFlag", []string{"a", "--json", "--", "--session"}, []string{"a", "--session"}, true, "", cli.ExitOK, true},
	{"LoneDashIsStdin", []string{"-", "--json"}, []string{"-"}, true, "", cli.ExitOK, true},
	{"NoArgs", nil, []string{}, false, "", cli.ExitOK, true},
	{"UnknownFlagAfterPositional", []string{"x", "--bogus"}, nil, false, "", cli.ExitUsage, false},
	{"HelpAfterPositional", []string{"x", "--help"}, nil, false, "", cli.ExitOK, false},
}

func TestParseInterspersedFlags(t *testing.T) {
	for _, tt := range parseTests {
		t.Run(tt.name, func(t *testing.T) {
			stdio := cli.IO{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}
			fs := cli.NewFlagSet(stdio, "test", "test [flags] ARGS", "A test command.")
			asJSON := fs.Bool("json", false, "json")
			session := fs.String("session", "", "session")
			code, ok := cli.Parse(fs, tt.args, stdio)
			if code != tt.wantCode || ok != tt.wantOK {
				t.Fatalf("Parse(%q) = %d, %v; want %d, %v", tt.args, code, ok, tt.wantCode, tt.wantOK)
			}
			if !ok {
				return
			}
			if got := fs.Args(); !slices.Equal(got, tt.wantArgs) {
				t.Errorf("Args = %q, want %q", got, tt.wantArgs)
			}
			if *asJSON != tt.wantJSON || *session != tt.wantSess {
				t.Errorf("json = %v, session = %q; want %v, %q", *asJSON, *session, tt.wantJSON, tt.wantSess)
			}
		})
	}
}

// runCLI runs one command in-process against the NAGENT_HOME of the test.
func runCLI(tb testing.TB, cmd func(context.Context, []string, cli.IO) int, args ...string) (code int, stdout, stderr string) {
	tb.Helper()
	var out, errOut bytes.Buffer
	code = cmd(context.Background(), args, cli.IO{In: strings.NewReader(""), Out: &out, Err: &errOut})
	return code, out.String(), errOut.String()
}

// withModel points the CLI at a scripted model in a fresh NAGENT_HOME.
func withModel(tb testing.TB, replies ...scripted.Reply) *scripted.Server {
	tb.Helper()
	home(tb)
	model := scripted.Start(replies...)
	tb.Cleanup(model.Close)
	tb.Setenv("NAGENT_LLM_BASE_URL", model.URL())
	tb.Setenv("NAGENT_LLM_MODEL", "scripted-model")
	tb.Setenv("NAGENT_LLM_API_KEY", "sk-test")
	tb.Setenv("OPENAI_BASE_URL", "")
	tb.Setenv("OPENAI_API_KEY", "")
	return model
}

var memoryFlagTests = []struct {
	name, list string
	refused    bool
}{
	{"Garbage", "bogus!!", true},
	{"GarbageAfterValid", "builtin,no way", true},
	{"DotDot", "project:..", true},
	{"Builtin", "builtin", false},
	{"RetrievalAndProject", "mem0,project:website,notes", false},
}

func TestRunChecksMemoryProviders(t *testing.T) {
	for _, tt := range memoryFlagTests {
		t.Run(tt.name, func(t *testing.T) {
			model := withModel(t, scripted.Reply{Content: "ok"})
			code, _, stderr := runCLI(t, cli.Run, "--memory", tt.list, "hi")
			if tt.refused {
				if code != cli.ExitUsage || !strings.Contains(stderr, "builtin") || !strings.Contains(stderr, "holographic, mem0, honcho") {
					t.Errorf("--memory %q: exit %d, stderr %q; want exit 2 listing the providers", tt.list, code, stderr)
				}
				if n := len(model.Requests()); n != 0 {
					t.Errorf("--memory %q: %d model requests, want none", tt.list, n)
				}
				return
			}
			if code == cli.ExitUsage || strings.Contains(stderr, "not a memory provider") {
				t.Errorf("--memory %q refused: exit %d, %q", tt.list, code, stderr)
			}
		})
	}
}

func TestRunAndSessionListTrial(t *testing.T) {
	withModel(t, scripted.Reply{Content: "Hello there."}, scripted.Reply{Content: "Again."})

	// The flag after the prompt is a flag, not part of the prompt; an
	// unknown --session id is used, with a notice.
	code, out, stderr := runCLI(t, cli.Run, "hello", "--json", "--session", "my-id")
	if code != cli.ExitOK {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	var res struct {
		SessionID string `json:"session_id"`
		Content   string `json:"content"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.SessionID != "my-id" || res.Content != "Hello there." {
		t.Fatalf("run output %q (%v)", out, err)
	}
	if want := "session my-id not found; starting a new session with that id"; !strings.Contains(stderr, want) ||
		strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("run stderr = %q, want the one line %q", stderr, want)
	}

	// The session now exists: no notice when continuing it.
	if code, _, stderr := runCLI(t, cli.Run, "--session", "my-id", "again"); code != cli.ExitOK || strings.Contains(stderr, "not found") {
		t.Errorf("second run: exit %d, stderr %q", code, stderr)
	}

	var listTests = []struct {
		name string
		args []string
		want []string
	}{
		{"StatusColumn", []string{"list"}, []string{"STATUS", "my-id", "completed"}},
		{"FilterMatchesNothing", []string{"list", "--source", "bogus"}, []string{`no sessions with source "bogus"`}},
		{"JSONAfterID", []string{"show", "my-id", "--json"}, []string{`"status": "completed"`}},
		{"ListJSONHasStatus", []string{"list", "--json"}, []string{`"task_status": "completed"`}},
	}
	for _, tt := range listTests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := runCLI(t, cli.Session, tt.args...)
			if code != cli.ExitOK {
				t.Fatalf("session %q: exit %d: %s", tt.args, code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("session %q output lacks %q:\n%s", tt.args, w, out)
				}
			}
			if strings.Contains(out, "no sessions yet") {
				t.Errorf("session %q says there are no sessions:\n%s", tt.args, out)
			}
		})
	}
}

func TestScheduleInbox(t *testing.T) {
	withModel(t, scripted.Reply{Content: "Three tickets are open."})
	if code, _, errOut := runCLI(t, cli.Schedule, "inbox"); code != cli.ExitOK {
		t.Fatalf("empty inbox: exit %d: %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, cli.Schedule, "add", "tickets", "--every", "24h", "--prompt", "Open tickets?", "--deliver", "inbox"); code != cli.ExitOK {
		t.Fatalf("add: exit %d: %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, cli.Schedule, "run", "tickets"); code != cli.ExitOK {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	count := func(args ...string) int {
		t.Helper()
		code, out, errOut := runCLI(t, cli.Schedule, append([]string{"inbox", "--json"}, args...)...)
		if code != cli.ExitOK {
			t.Fatalf("inbox %v: exit %d: %s", args, code, errOut)
		}
		var got struct {
			Messages []struct {
				ScheduleName string `json:"schedule_name"`
				Content      string `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("inbox --json printed %q: %v", out, err)
		}
		for _, m := range got.Messages {
			if m.ScheduleName != "tickets" || m.Content != "Three tickets are open." {
				t.Errorf("message = %+v", m)
			}
		}
		return len(got.Messages)
	}
	if n := count("--unread"); n != 1 {
		t.Fatalf("unread before: %d messages, want 1", n)
	}
	if code, out, _ := runCLI(t, cli.Schedule, "inbox", "--mark-read"); code != cli.ExitOK || !strings.Contains(out, "Three tickets are open.") {
		t.Errorf("inbox --mark-read: exit %d, %q", code, out)
	}
	if n := count("--unread"); n != 0 {
		t.Errorf("unread after --mark-read: %d messages", n)
	}
	if n := count(); n != 1 {
		t.Errorf("all: %d messages, want 1", n)
	}
	if code, _, _ := runCLI(t, cli.Schedule, "inbox", "--limit", "0"); code == cli.ExitOK {
		t.Error("--limit 0 was accepted")
	}
}
