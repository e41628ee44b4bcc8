package tui_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nagent/nagent/internal/testbin"
	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/llm/scripted"
)

// tmuxPane drives one detached tmux session of 80×24 on a private server.
type tmuxPane struct {
	tb        testing.TB
	tmux      string
	sock      string
	artifacts string
	// history makes captures include the lines scrolled off the screen.
	history bool
}

// requireTmux returns the tmux binary, or skips the test without it unless
// CI is set, where the test must run (.ci/run installs tmux).
func requireTmux(tb testing.TB) string {
	tb.Helper()
	path, err := exec.LookPath("tmux")
	if err != nil {
		msg := "tmux is not installed (apt-get install -y tmux)"
		if os.Getenv("CI") != "" {
			tb.Fatal(msg + " (CI is set, so this test may not be skipped)")
		}
		tb.Skip(msg)
	}
	return path
}

func (p *tmuxPane) run(args ...string) string {
	p.tb.Helper()
	out, err := exec.Command(p.tmux, append([]string{"-S", p.sock}, args...)...).CombinedOutput()
	if err != nil {
		p.tb.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (p *tmuxPane) capture() string {
	args := []string{"capture-pane", "-p", "-t", "nagent"}
	if p.history {
		args = append(args, "-S", "-")
	}
	return p.run(args...)
}

// keys sends tmux key names (Enter, C-c, Down) or, with literal, text.
func (p *tmuxPane) keys(literal bool, keys ...string) {
	p.tb.Helper()
	args := []string{"send-keys", "-t", "nagent"}
	if literal {
		args = append(args, "-l")
	}
	p.run(append(args, keys...)...)
}

// waitFor polls the screen until it shows every string in want.
func (p *tmuxPane) waitFor(want ...string) string {
	p.tb.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		screen := p.capture()
		missing := ""
		for _, w := range want {
			if !strings.Contains(screen, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return screen
		}
		if time.Now().After(deadline) {
			p.tb.Fatalf("the screen never showed %q; it shows:\n%s", missing, screen)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// save writes a captured screen to the artifacts directory and the log.
func (p *tmuxPane) save(name, screen string) {
	p.tb.Helper()
	path := filepath.Join(p.artifacts, name+".txt")
	if err := os.WriteFile(path, []byte(screen), 0o644); err != nil {
		p.tb.Fatal(err)
	}
	p.tb.Logf("screen %s (%s):\n%s", name, path, screen)
}

// artifactsDir is where the captured screens go: $NAGENT_ARTIFACTS when set
// (CI keeps it), else a directory that outlives the test under the temp dir.
func artifactsDir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("NAGENT_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "nagent-artifacts")
	}
	dir = filepath.Join(dir, "tui")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	return dir
}

const confirmPolicy = `package nagent.tools

confirm contains "reading the clock needs your approval (test policy)" if input.tool.name == "get_current_time"
`

// TestTUIUnderTmux runs the real binary in an 80×24 tmux pane: a tool turn
// that asks for confirmation (approved), a second one denied with Enter, the
// session picker, a resume, the model picker, and Ctrl-C to quit.
func TestTUIUnderTmux(t *testing.T) {
	tmux := requireTmux(t)
	bin := testbin.Nagent(t)
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "policies"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "policies", "confirm_time.rego"), []byte(confirmPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	// A second model for the model picker.
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte("llm:\n  models: [other-model]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := scripted.Start()
	defer srv.Close()
	env := append(os.Environ(),
		"NAGENT_HOME="+home,
		"NAGENT_LLM_BASE_URL="+srv.URL(),
		"NAGENT_LLM_MODEL=scripted-model",
		"NAGENT_LLM_API_KEY=sk-test",
		"TERM=xterm-256color",
	)

	// An earlier session for the picker, made by the line-based CLI.
	srv.Enqueue(scripted.Reply{Content: "Hello from an earlier session."})
	run := exec.Command(bin, "run", "Say hello from before")
	run.Env = env
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("nagent run: %v\n%s", err, out)
	}

	dir := t.TempDir()
	conf := filepath.Join(dir, "tmux.conf")
	if err := os.WriteFile(conf, []byte("set -g status off\nset -g remain-on-exit on\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &tmuxPane{tb: t, tmux: tmux, sock: filepath.Join(dir, "s"), artifacts: artifactsDir(t)}
	start := exec.Command(tmux, "-S", p.sock, "-f", conf, "new-session", "-d", "-s", "nagent", "-x", "80", "-y", "24", bin+" tui")
	start.Env = env
	t0 := time.Now()
	if out, err := start.CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command(tmux, "-S", p.sock, "kill-server").Run() })

	p.waitFor("N-Agent · session", "› Message, or /help")
	t.Logf("first frame %v after starting tmux (binary built, 80x24)", time.Since(t0).Round(time.Millisecond))

	// A tool turn that the policy makes ask first: approve it with y.
	srv.Enqueue(
		scripted.Reply{ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "get_current_time", Arguments: `{}`}}},
		scripted.Reply{Content: "It is **noon** UTC.\n\n- read with `get_current_time`"},
	)
	p.keys(true, "What time is it?")
	p.keys(false, "Enter")
	p.save("confirm", p.waitFor("Allow tool call get_current_time?", "[y] allow once", "deny", "reading the clock needs your approval"))
	p.keys(true, "y")
	screen := p.waitFor("✓ tool get_current_time · ok", "It is noon UTC.", "idle")
	p.save("tool-turn", screen)
	if strings.Contains(screen, "**noon**") {
		t.Error("the final answer was not rendered as Markdown")
	}

	// A resize redraws the whole screen at the new size, and back.
	for _, size := range [][2]string{{"100", "30"}, {"80", "24"}} {
		p.run("resize-window", "-t", "nagent", "-x", size[0], "-y", size[1])
		deadline := time.Now().Add(30 * time.Second)
		for {
			lines := strings.Split(strings.TrimRight(p.capture(), "\n"), "\n")
			if len(lines) >= 2 && strings.HasPrefix(strings.TrimSpace(lines[0]), "N-Agent · session") &&
				strings.Contains(lines[len(lines)-2], "› Message, or /help") && strings.Contains(strings.Join(lines, "\n"), "It is noon UTC.") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after resizing to %sx%s the screen shows:\n%s", size[0], size[1], strings.Join(lines, "\n"))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// The same again, denied with Enter alone.
	srv.Enqueue(
		scripted.Reply{ToolCalls: []llm.ToolCall{{ID: "call_2", Name: "get_current_time", Arguments: `{}`}}},
		scripted.Reply{Content: "I could not read the clock."},
	)
	p.keys(true, "And now?")
	p.keys(false, "Enter")
	p.waitFor("Allow tool call get_current_time?")
	p.keys(false, "Enter")
	p.save("denied", p.waitFor("DENIED", "the user rejected this call", "I could not read the clock.", "idle"))
	if reqs := srv.Requests(); !strings.Contains(reqs[len(reqs)-1].Messages[len(reqs[len(reqs)-1].Messages)-1].Content, "denied") {
		t.Errorf("the model did not see the denial: %+v", reqs[len(reqs)-1].Messages)
	}

	// The session picker lists both sessions; resume the earlier one.
	p.keys(true, "/sessions")
	p.keys(false, "Enter")
	picker := p.waitFor("Sessions · Enter resume", "> * What time is it?", "Say hello from before")
	p.save("session-picker", picker)
	p.keys(false, "Down", "Enter")
	p.waitFor("Hello from an earlier session.", "resumed")

	// The model picker: the next turn asks the provider for other-model.
	p.keys(true, "/model")
	p.keys(false, "Enter")
	p.waitFor("Models · Enter pick", "scripted-model (configured) *", "other-model")
	p.keys(false, "Down", "Enter")
	p.waitFor("model other-model")
	srv.Enqueue(scripted.Reply{Content: "Answered by the other model."})
	p.keys(true, "Which model?")
	p.keys(false, "Enter")
	p.waitFor("Answered by the other model.", "idle")
	if reqs := srv.Requests(); reqs[len(reqs)-1].Model != "other-model" {
		t.Errorf("the provider was asked for model %q, want other-model", reqs[len(reqs)-1].Model)
	}

	// Ctrl-C during a turn cancels it; the UI stays.
	srv.Enqueue(scripted.Reply{Content: "too late", Delay: time.Minute})
	p.keys(true, "Take your time")
	p.keys(false, "Enter")
	p.waitFor("· running", "Ctrl-C cancels the turn")
	p.keys(false, "C-c")
	p.waitFor("the turn was cancelled", "idle")

	// Ctrl-C when idle quits; the line may scroll off the screen as the
	// alternate screen closes.
	p.keys(false, "C-c")
	p.history = true
	p.waitFor("resume with: nagent tui --session")
}

// TestTUINeedsATerminal: in a pipe, `nagent tui` points to `nagent chat`.
func TestTUINeedsATerminal(t *testing.T) {
	cmd := exec.Command(testbin.Nagent(t), "tui")
	cmd.Env = append(os.Environ(), "NAGENT_HOME="+t.TempDir(), "NAGENT_LLM_BASE_URL=http://127.0.0.1:9/v1", "NAGENT_LLM_MODEL=m")
	cmd.Stdin = strings.NewReader("hello\n")
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); err == nil || code != 1 || !strings.Contains(string(out), `use "nagent chat"`) {
		t.Errorf("nagent tui in a pipe (exit %d): %s", code, out)
	}
}
