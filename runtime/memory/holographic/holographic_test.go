package holographic_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nagent/nagent/runtime/memory"
	"github.com/nagent/nagent/runtime/memory/holographic"
	"github.com/nagent/nagent/store"
)

func MustOpenDB(tb testing.TB) *store.DB {
	tb.Helper()
	db, err := store.Open(context.Background(), filepath.Join(tb.TempDir(), "nagent.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

func enc(e *holographic.Encoder, text string) []float32 { return e.Encode(memory.Terms(text)) }

func TestEncoderIsDeterministic(t *testing.T) {
	a, b := holographic.NewEncoder(0), holographic.NewEncoder(0)
	va, vb := enc(a, "the deploy server runs on port 2222"), enc(b, "the deploy server runs on port 2222")
	for i := range va {
		if va[i] != vb[i] {
			t.Fatalf("component %d differs between encoders: %v vs %v", i, va[i], vb[i])
		}
	}
	// A fixed atom value pins the generator across releases and machines.
	if atom := a.Atom("utc"); math.Abs(atom[0]-0.028282049) > 1e-9 || math.Abs(atom[255]-(-0.015574652)) > 1e-9 {
		t.Errorf("atom(utc) = [%.9f … %.9f]; the atoms changed, and every stored vector with them", atom[0], atom[255])
	}
	if c := holographic.Cosine(va, va); math.Abs(c-1) > 1e-5 {
		t.Errorf("self cosine = %v", c)
	}
}

func TestEncoderSimilarity(t *testing.T) {
	e := holographic.NewEncoder(0)
	base := enc(e, "deploy server port 2222 ssh")
	shared := holographic.Cosine(base, enc(e, "ssh to the deploy server"))
	unrelated := holographic.Cosine(base, enc(e, "favourite colour is teal"))
	if shared < 0.3 || math.Abs(unrelated) > 0.25 || shared <= unrelated {
		t.Errorf("shared = %.3f, unrelated = %.3f", shared, unrelated)
	}
	// Word order counts through the bound neighbour pairs.
	same := holographic.Cosine(enc(e, "dog bites man"), enc(e, "dog bites man"))
	swapped := holographic.Cosine(enc(e, "dog bites man"), enc(e, "man bites dog"))
	if !(swapped < same && swapped > 0.4) {
		t.Errorf("same order %.3f, swapped %.3f", same, swapped)
	}
}

func TestSearchBlendAndFeedback(t *testing.T) {
	db := MustOpenDB(t)
	p := holographic.New(db, holographic.Options{})
	ctx := context.Background()
	facts := []string{
		"The deploy server is reached over ssh on port 2222.",
		"The user's favourite colour is teal.",
		"Backups of the deploy database run nightly.",
		"用户喜欢用中文回答问题。",
	}
	for _, f := range facts {
		if err := p.Add(ctx, p.Fact(f, "", "s1")); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Add(ctx, p.Fact(facts[0], "", "s2")); err != nil { // a duplicate is not stored twice
		t.Fatal(err)
	}
	if n, _ := db.CountFacts(ctx); n != 4 {
		t.Errorf("facts = %d, want 4", n)
	}
	hits, err := p.Search(ctx, "which port does the deploy server use for ssh?", 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 || hits[0].Content != facts[0] {
		t.Fatalf("hits = %+v", hits)
	}
	h := hits[0]
	want := (0.5 + 0.5*h.Trust) * (holographic.WeightFTS*h.FTS + holographic.WeightLexical*h.Lexical + holographic.WeightHRR*h.HRR)
	if math.Abs(h.Score-want) > 1e-9 || h.Score <= 0 || h.Score > 1 || h.FTS <= 0 || h.Lexical <= 0 || h.HRR <= 0 {
		t.Errorf("hit = %+v, want score %v", h, want)
	}
	for _, h := range hits {
		if strings.Contains(h.Content, "teal") {
			t.Errorf("an unrelated fact was retrieved: %+v", h)
		}
	}
	if cjk, _ := p.Search(ctx, "请用中文回答", 5); len(cjk) != 1 || cjk[0].Content != facts[3] {
		t.Errorf("CJK search = %+v", cjk)
	}

	// Feedback moves trust, and trust moves the ranking.
	q := "deploy"
	before, _ := p.Search(ctx, q, 5)
	if len(before) != 2 {
		t.Fatalf("deploy hits = %+v", before)
	}
	loser := before[1]
	for i := 0; i < 3; i++ {
		if _, err := p.Feedback(ctx, before[0].ID, false); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Feedback(ctx, loser.ID, true); err != nil {
			t.Fatal(err)
		}
	}
	after, _ := p.Search(ctx, q, 5)
	if len(after) == 0 || after[0].ID != loser.ID || after[0].Trust < 0.79 {
		t.Errorf("after feedback = %+v", after)
	}
	if _, err := p.Feedback(ctx, 999, true); err == nil {
		t.Error("feedback on an unknown fact succeeded")
	}

	out, err := p.Prefetch(ctx, memory.PrefetchQuery{Query: "ssh port of the deploy server"})
	if err != nil || !strings.HasPrefix(out, fmt.Sprintf("- [fact %d] %s", hits[0].ID, facts[0])) {
		t.Errorf("prefetch = %q, %v", out, err)
	}
	if out, _ := p.Prefetch(ctx, memory.PrefetchQuery{Query: "现在几点了"}); out != "" {
		t.Errorf("prefetch of an unrelated query = %q", out)
	}
}

// BenchmarkSearch10k scores a query against 10,000 facts.
func BenchmarkSearch10k(b *testing.B) {
	db := MustOpenDB(b)
	p := holographic.New(db, holographic.Options{})
	ctx := context.Background()
	word := func(i int) string { return fmt.Sprintf("w%dx%c", i, 'a'+rune(i%26)) }
	for batch := 0; batch < 10; batch++ {
		facts := make([]*store.Fact, 1000)
		for i := range facts {
			n := batch*1000 + i
			var w []string
			for k := 0; k < 10; k++ {
				w = append(w, word((n*7+k*131)%3000))
			}
			facts[i] = p.Fact(fmt.Sprintf("Fact %d: %s", n, strings.Join(w, " ")), "", "")
		}
		if err := p.Add(ctx, facts...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		q := "how does " + word(i%3000) + " relate to " + word((i*17)%3000)
		if _, err := p.Search(ctx, q, 5); err != nil {
			b.Fatal(err)
		}
	}
}
