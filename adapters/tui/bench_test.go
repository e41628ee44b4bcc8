package tui_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/nagent/nagent/adapters/tui"
	"github.com/nagent/nagent/runtime/app"
	"github.com/nagent/nagent/runtime/config"
)

// BenchmarkStartupWithApp is the in-process part of `nagent tui` start-up:
// loading the configuration, wiring the App over a fresh $NAGENT_HOME (SQLite,
// policies, tools), building the model and rendering the first 80×24 frame.
func BenchmarkStartupWithApp(b *testing.B) {
	env := map[string]string{
		"NAGENT_HOME":         b.TempDir(),
		"NAGENT_LLM_BASE_URL": "http://127.0.0.1:9/v1",
		"NAGENT_LLM_MODEL":    "bench-model",
	}
	ctx := context.Background()
	for b.Loop() {
		cfg, err := config.LoadEnv(func(k string) string { return env[k] })
		if err != nil {
			b.Fatal(err)
		}
		a, err := app.New(ctx, cfg, app.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			b.Fatal(err)
		}
		m := tui.New(ctx, tui.NewAppBackend(a), tui.Options{Session: "sess_bench"})
		m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
		if v := m.View(); v.Content == "" {
			b.Fatal("empty first frame")
		}
		a.Close()
	}
}
