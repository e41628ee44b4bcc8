package app_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nagent/nagent/runtime/app"
	"github.com/nagent/nagent/runtime/config"
	"github.com/nagent/nagent/runtime/memory/holographic"
	"github.com/nagent/nagent/store"
)

// BenchmarkExternalMemoryTurn measures what external memory adds to one
// turn before the first model call: the static snapshot plus prefetch_all,
// with 1,000 entries in builtin memory.md and 10,000 holographic facts.
//
//	frozen:      a later turn of a session (snapshot frozen: a cache hit)
//	new_session: a session's first turn (snapshot built from the files; it
//	             is frozen in the turn's final transaction, not measured here)
//	prefetch_*:  one provider's prefetch alone
func BenchmarkExternalMemoryTurn(b *testing.B) {
	ctx := context.Background()
	cfg := config.Defaults()
	cfg.Home = b.TempDir()
	cfg.LLM.Model = "bench"
	cfg.ExternalMemory.Retrieval.Provider = "holographic"
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := make([]string, 3000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%dx%c", i, 'a'+rune(i%26))
	}
	words := func(n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = vocab[rng.IntN(len(vocab))]
		}
		return strings.Join(w, " ")
	}
	var md strings.Builder
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&md, "Entry %d: the %s service uses %s.\n\n", i, words(3), words(6))
	}
	os.MkdirAll(filepath.Join(cfg.Home, "memory"), 0o700)
	os.WriteFile(filepath.Join(cfg.Home, "memory", "memory.md"), []byte(md.String()), 0o600)

	a, err := app.New(ctx, &cfg, app.Options{Provider: &toolTurnProvider{}})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	h := holographic.New(a.DB, holographic.Options{})
	for batch := 0; batch < 10; batch++ {
		facts := make([]*store.Fact, 1000)
		for i := range facts {
			facts[i] = h.Fact(fmt.Sprintf("Fact %d: %s", batch*1000+i, words(10)), "", "")
		}
		if err := h.Add(ctx, facts...); err != nil {
			b.Fatal(err)
		}
	}
	if n, _ := a.DB.CountFacts(ctx); n != 10000 {
		b.Fatalf("facts = %d", n)
	}
	queries := make([]string, 64)
	for i := range queries {
		queries[i] = "How does the " + words(2) + " service handle " + words(2) + "?"
	}
	enabled := []string{"builtin", "holographic"}
	newSession := func(id string) {
		if err := a.DB.Update(ctx, func(tx *store.Tx) error {
			_, err := tx.CreateSession(ctx, store.Session{ID: id, Source: "cli"})
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
	newSession("frozen")
	if _, _, fails := a.External.Snapshot(ctx, "frozen", enabled); fails != nil {
		b.Fatal(fails)
	}
	hits := 0
	turn := func(b *testing.B, session string, i int) {
		snap, _, fails := a.External.Snapshot(ctx, session, enabled)
		if fails != nil || !strings.Contains(snap, "builtin/memory.md") {
			b.Fatalf("snapshot = %.80q, %v", snap, fails)
		}
		got, fails := a.External.PrefetchAll(ctx, session, enabled, queries[i%len(queries)])
		if fails != nil {
			b.Fatal(fails)
		}
		if got != "" {
			hits++
		}
	}
	b.Run("frozen", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			turn(b, "frozen", i)
		}
	})
	b.Run("new_session", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			b.StopTimer()
			id := fmt.Sprintf("new-%d-%d", b.N, i)
			newSession(id)
			b.StartTimer()
			turn(b, id, i)
		}
	})
	b.Run("prefetch_builtin", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			a.External.PrefetchAll(ctx, "frozen", []string{"builtin"}, queries[i%len(queries)])
		}
	})
	b.Run("prefetch_holographic", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			a.External.PrefetchAll(ctx, "frozen", []string{"holographic"}, queries[i%len(queries)])
		}
	})
	if hits == 0 {
		b.Fatal("no prefetch retrieved anything; the benchmark measures nothing")
	}
}
