package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/app"
	"github.com/nagent/nagent/runtime/config"
	"github.com/nagent/nagent/runtime/knowledge"
	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/llm/scripted"
	"github.com/nagent/nagent/store"
)

// addKB registers a knowledge base in cfg's store, as `nagent kb add` does.
func addKB(tb testing.TB, cfg *config.Config, kb *store.KnowledgeBase, secret string) {
	tb.Helper()
	ctx := context.Background()
	db, err := app.OpenStore(ctx, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	kb.Enabled = true
	if err := db.CreateKnowledgeBase(ctx, kb, secret); err != nil {
		tb.Fatal(err)
	}
	if kb.Type == knowledge.TypeLocal {
		if _, err := knowledge.Ingest(ctx, db, kb, ""); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestSearchKnowledgeThroughTheLoop: the model searches a local knowledge
// base ingested from testdata and gets the relevant chunk first; then it
// searches a Dify knowledge base whose API key is refused, gets a clear
// error result, and the turn goes on to its answer.
func TestSearchKnowledgeThroughTheLoop(t *testing.T) {
	const answer = "You get 25 days of annual leave (policies/leave.md)."
	dify := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte(`{"error_code":1002,"error_msg":"Authorization failed"}`))
	}))
	defer dify.Close()
	srv := scripted.Start(
		scripted.Reply{ToolCalls: []llm.ToolCall{{ID: "k1", Name: "search_knowledge", Arguments: `{"query":"how many days of annual leave","kb_id":"handbook"}`}}},
		scripted.Reply{ToolCalls: []llm.ToolCall{{ID: "k2", Name: "search_knowledge", Arguments: `{"query":"annual leave","kb_id":"wiki"}`}}},
		scripted.Reply{Content: answer},
	)
	defer srv.Close()
	cfg := testConfig(t, srv)
	addKB(t, cfg, &store.KnowledgeBase{Name: "handbook", Type: knowledge.TypeLocal, Description: "HR policies and onboarding",
		Config: json.RawMessage(`{"dir":"../knowledge/testdata/handbook","chunk_size":400,"chunk_overlap":80}`)}, "")
	addKB(t, cfg, &store.KnowledgeBase{Name: "wiki", Type: knowledge.TypeDify, Description: "the company wiki",
		Config: json.RawMessage(`{"endpoint":"` + dify.URL + `","knowledge_id":"wiki-1"}`)}, "sk-bad-secret")
	a := MustNewApp(t, cfg)

	res, err := a.Chat.Complete(context.Background(), userTurn("kb", "How much annual leave do I get?"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "completed" || res.Content != answer {
		t.Fatalf("result = %+v", res)
	}
	reqs := srv.Requests()
	var desc string
	for _, tool := range reqs[0].Tools {
		if tool.Name == "search_knowledge" {
			desc = tool.Description
		}
	}
	if !strings.Contains(desc, `handbook (kb_id "handbook"): HR policies and onboarding`) || !strings.Contains(desc, "wiki") {
		t.Errorf("search_knowledge description = %q", desc)
	}

	last := func(req int) llm.Message {
		msgs := reqs[req].Messages
		return msgs[len(msgs)-1]
	}
	var out struct {
		Results []knowledge.Result `json:"results"`
	}
	if err := json.Unmarshal([]byte(last(1).Content), &out); err != nil {
		t.Fatalf("search result %q: %v", last(1).Content, err)
	}
	if len(out.Results) == 0 {
		t.Fatal("no results")
	}
	if top := out.Results[0]; top.Source != "policies/leave.md" || !strings.Contains(top.Content, "25 days of paid annual leave") ||
		top.Title != "Leave policy › Annual leave" {
		t.Errorf("top result = %+v, want the annual leave chunk first", top)
	}

	failed := last(2).Content
	if !strings.Contains(failed, "search_knowledge failed") || !strings.Contains(failed, "wiki") ||
		!strings.Contains(failed, "refused the API key") || strings.Contains(failed, "sk-bad-secret") {
		t.Errorf("bad-secret result = %q", failed)
	}
	calls, _ := a.DB.ListToolCalls(context.Background(), "kb")
	if len(calls) != 2 || calls[0].Status != "success" || calls[1].Status != "error" {
		t.Errorf("tool call records = %+v", calls)
	}
}

// TestSourcesRefreshOnALiveServer: with the server's watch on, a knowledge
// base added by another process and a new skill reach the tool slots
// without a restart.
func TestSourcesRefreshOnALiveServer(t *testing.T) {
	srv := scripted.Start()
	defer srv.Close()
	cfg := testConfig(t, srv)
	a, err := app.New(context.Background(), cfg, app.Options{WatchPlugins: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, ok := a.Tools.Lookup(knowledge.ToolName); ok {
		t.Fatal("search_knowledge exposed before any knowledge base exists")
	}
	addKB(t, cfg, &store.KnowledgeBase{Name: "late", Type: knowledge.TypeLocal, Description: "added later",
		Config: json.RawMessage(`{"dir":"../knowledge/testdata/handbook"}`)}, "")
	writeSkill(t, cfg.SkillsDir(), "late-skill", "---\nname: late-skill\ndescription: Added while running.\n---\nbody\n", map[string]string{})
	deadline := time.Now().Add(10 * time.Second)
	for {
		kb, okKB := a.Tools.Lookup(knowledge.ToolName)
		sk, _ := a.Tools.Lookup("skills_list")
		if okKB && strings.Contains(kb.Description, "late") && strings.Contains(sk.Description, "late-skill") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("slots not refreshed: search_knowledge %v %q; skills_list %q", okKB, kb.Description, sk.Description)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
