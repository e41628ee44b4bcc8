package knowledge_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/runtime/knowledge"
	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/store"
)

// MustOpenDB opens a fresh store in a temporary directory.
func MustOpenDB(tb testing.TB) *store.DB {
	tb.Helper()
	db, err := store.Open(context.Background(), filepath.Join(tb.TempDir(), "nagent.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// MustCreateKB stores a knowledge base.
func MustCreateKB(tb testing.TB, db *store.DB, name, typ, config, secret string) *store.KnowledgeBase {
	tb.Helper()
	kb := &store.KnowledgeBase{Name: name, Type: typ, Config: json.RawMessage(config), Enabled: true, Description: name + " docs"}
	if err := db.CreateKnowledgeBase(context.Background(), kb, secret); err != nil {
		tb.Fatal(err)
	}
	return kb
}

// copyDir copies src into a fresh temporary directory.
func copyDir(tb testing.TB, src string) string {
	tb.Helper()
	dst := tb.TempDir()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		tb.Fatal(err)
	}
	return dst
}

func TestSplitDocument(t *testing.T) {
	t.Run("SectionsAndTitle", func(t *testing.T) {
		title, chunks := knowledge.SplitDocument("policies/leave.md", "# Leave\n\nintro\n\n## Sick\n\nbody\n\n## Empty\n", 1000, 100)
		if title != "Leave" || len(chunks) != 2 {
			t.Fatalf("title %q, chunks %+v", title, chunks)
		}
		if chunks[1].Title != "Leave › Sick" || !strings.Contains(chunks[1].Content, "body") || chunks[1].Seq != 1 {
			t.Errorf("chunk = %+v", chunks[1])
		}
	})
	t.Run("Overlap", func(t *testing.T) {
		var words []string
		for i := range 400 {
			words = append(words, "w"+strings.Repeat("x", i%5))
		}
		text := strings.Join(words, " ")
		_, chunks := knowledge.SplitDocument("a.txt", text, 300, 60)
		if len(chunks) < 5 {
			t.Fatalf("chunks = %d", len(chunks))
		}
		for i, c := range chunks {
			if n := len([]rune(c.Content)); n > 300 {
				t.Errorf("chunk %d has %d runes", i, n)
			}
			if i > 0 {
				prev := chunks[i-1].Content
				tail := prev[len(prev)-30:]
				if !strings.Contains(c.Content, strings.TrimSpace(tail[strings.Index(tail, " "):])) {
					t.Errorf("chunk %d does not overlap the previous one", i)
				}
			}
		}
	})
	t.Run("FencedHashIsNotAHeading", func(t *testing.T) {
		_, chunks := knowledge.SplitDocument("a.md", "# T\n\n```\n# comment\n```\ntext\n", 1000, 100)
		if len(chunks) != 1 {
			t.Errorf("chunks = %+v", chunks)
		}
	})
}

func TestIngestAndSearch(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	dir := copyDir(t, "testdata/handbook")
	kb := MustCreateKB(t, db, "handbook", knowledge.TypeLocal, `{"dir":`+quote(dir)+`}`, "")

	rep, err := knowledge.Ingest(ctx, db, kb, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Added) != 4 || rep.Chunks == 0 || len(rep.Skipped) != 0 {
		t.Fatalf("first ingest = %+v", rep)
	}

	svc := knowledge.NewService(db, db, nil)
	res, err := svc.Search(ctx, "handbook", "How many days of annual leave do I get?", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) == 0 || res[0].Source != "policies/leave.md" || !strings.Contains(res[0].Content, "25 days") {
		t.Fatalf("results = %+v", res)
	}
	if res[0].Title != "Leave policy › Annual leave" || res[0].Score <= 0 || res[0].Score > 1 || res[0].KBName != "handbook" {
		t.Errorf("top result = %+v", res[0])
	}

	t.Run("IncrementalReingest", func(t *testing.T) {
		rep, err := knowledge.Ingest(ctx, db, kb, "")
		if err != nil || rep.Unchanged != 4 || len(rep.Added)+len(rep.Updated)+len(rep.Removed) != 0 || rep.Chunks != 0 {
			t.Fatalf("unchanged ingest = %+v, %v", rep, err)
		}
		os.WriteFile(filepath.Join(dir, "onboarding.md"), []byte("# Onboarding\n\nThe welcome lunch is on Fridays.\n"), 0o644)
		os.Remove(filepath.Join(dir, "security.txt"))
		os.WriteFile(filepath.Join(dir, "canteen.md"), []byte("# Canteen\n\nThe canteen serves lunch from noon.\n"), 0o644)
		rep, err = knowledge.Ingest(ctx, db, kb, "")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(rep.Added, ",") != "canteen.md" || strings.Join(rep.Updated, ",") != "onboarding.md" ||
			strings.Join(rep.Removed, ",") != "security.txt" || rep.Unchanged != 2 {
			t.Fatalf("changed ingest = %+v", rep)
		}
		if res, _ := svc.Search(ctx, kb.ID, "security key laptop", 5); len(res) != 0 {
			for _, r := range res {
				if r.Source == "security.txt" || strings.Contains(r.Content, "IT hands over") {
					t.Errorf("stale chunk found: %+v", r)
				}
			}
		}
		if res, _ := svc.Search(ctx, kb.ID, "welcome lunch", 1); len(res) != 1 || res[0].Source != "onboarding.md" {
			t.Errorf("updated document not found: %+v", res)
		}
	})
	t.Run("ErrEmptyQuery", func(t *testing.T) {
		if _, err := svc.Search(ctx, kb.ID, "  ", 3); errs.Code(err) != errs.EINVALID {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("ErrUnknownKB", func(t *testing.T) {
		if _, err := svc.Search(ctx, "nope", "x", 3); errs.Code(err) != errs.ENOTFOUND {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("RemoveDeletesChunks", func(t *testing.T) {
		other := MustCreateKB(t, db, "other", knowledge.TypeLocal, `{}`, "")
		if _, err := knowledge.Ingest(ctx, db, other, dir); err != nil {
			t.Fatal(err)
		}
		if err := db.DeleteKnowledgeBase(ctx, other.ID); err != nil {
			t.Fatal(err)
		}
		if hits, _ := db.SearchKnowledgeChunks(ctx, other.ID, []string{"canteen"}, 5); len(hits) != 0 {
			t.Errorf("chunks outlived their knowledge base: %+v", hits)
		}
		if docs, _ := db.ListKnowledgeDocuments(ctx, other.ID); len(docs) != 0 {
			t.Errorf("documents outlived their knowledge base: %+v", docs)
		}
	})
}

func TestTerms(t *testing.T) {
	if got := strings.Join(knowledge.Terms("How many days of Annual-leave do I get?"), " "); got != "many days annual leave get" {
		t.Errorf("Terms = %q", got)
	}
	if got := strings.Join(knowledge.Terms("what is it"), " "); got != "what is it" {
		t.Errorf("Terms(stop words only) = %q", got)
	}
}

func TestToolDefinitionListsEnabledKBs(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	ts := tools.NewToolService(nil, tools.Options{})
	svc := knowledge.NewService(db, db, nil)
	if err := svc.Publish(ctx, ts); err != nil {
		t.Fatal(err)
	}
	if _, ok := ts.Lookup(knowledge.ToolName); ok {
		t.Error("search_knowledge exposed with no knowledge base")
	}
	MustCreateKB(t, db, "handbook", knowledge.TypeLocal, `{}`, "")
	off := MustCreateKB(t, db, "archive", knowledge.TypeLocal, `{}`, "")
	db.SetKnowledgeBaseEnabled(ctx, off.ID, false)
	if err := svc.Publish(ctx, ts); err != nil {
		t.Fatal(err)
	}
	def, ok := ts.Lookup(knowledge.ToolName)
	if !ok || !strings.Contains(def.Description, `- handbook (kb_id "handbook"): handbook docs`) || strings.Contains(def.Description, "archive") {
		t.Errorf("description = %q", def.Description)
	}
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestSearchCJK: Chinese text has no spaces between words; a Chinese
// query still finds the right chunk first.
func TestSearchCJK(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "假期.md"), []byte("# 假期制度\n\n## 年假\n\n员工每年享有二十五天带薪年假。\n\n## 病假\n\n病假需要提供医生证明。\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "报销.md"), []byte("# 报销制度\n\n差旅餐费每天最多报销六十欧元。\n"), 0o644)
	kb := MustCreateKB(t, db, "zh", knowledge.TypeLocal, `{"dir":`+quote(dir)+`}`, "")
	if _, err := knowledge.Ingest(ctx, db, kb, ""); err != nil {
		t.Fatal(err)
	}
	svc := knowledge.NewService(db, db, nil)
	res, err := svc.Search(ctx, kb.ID, "我有几天年假？", 3)
	if err != nil || len(res) == 0 || !strings.Contains(res[0].Content, "二十五天带薪年假") || res[0].Title != "假期制度 › 年假" {
		t.Fatalf("results = %+v, %v", res, err)
	}
	if got := strings.Join(knowledge.Terms("年假几天 API密钥"), " "); got != "年假 假几 几天 api 密钥" {
		t.Errorf("Terms = %q", got)
	}
}
