package memory_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/memory"
	"github.com/nagent/nagent/store"
)

// slowTitler stands in for a model-written title.
type slowTitler struct{ release chan struct{} }

func (s slowTitler) Title(ctx context.Context, first string) (string, error) {
	<-s.release
	return "Titled: " + first, nil
}

func TestCustomTitlerNeverBlocksTheTurn(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "nagent.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	titler := slowTitler{release: make(chan struct{})}
	m := memory.NewMemoryStore(db, nil, titler, nil)

	done := make(chan error)
	go func() {
		_, err := m.BeginTurn(ctx, memory.TurnStart{SessionID: "s", Source: "cli",
			Input: []llm.Message{{Role: llm.RoleUser, Content: "hello"}}})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("BeginTurn waited for the titler")
	}
	close(titler.release)
	m.Wait()
	s, _ := db.GetSession(ctx, "s")
	if s.Title != "Titled: hello" {
		t.Errorf("title = %q", s.Title)
	}
}

func TestDefaultTitleIsWrittenWithTheFirstTurn(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "nagent.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	m := memory.NewMemoryStore(db, nil, nil, nil)
	for _, text := range []string{"first question", "second question"} {
		if _, err := m.BeginTurn(ctx, memory.TurnStart{SessionID: "s", Source: "cli",
			Input: []llm.Message{{Role: llm.RoleUser, Content: text}}}); err != nil {
			t.Fatal(err)
		}
	}
	if s, _ := db.GetSession(ctx, "s"); s.Title != "first question" {
		t.Errorf("title = %q, want the first message", s.Title)
	}
}
