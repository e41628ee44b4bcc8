package mem0_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/nagent/nagent/runtime/memory"
	"github.com/nagent/nagent/runtime/memory/mem0"
	"github.com/nagent/nagent/runtime/tools"
)

// fakeMem0 implements the two Mem0 Platform endpoints the provider uses, as
// documented at docs.mem0.ai/api-reference: add memories and search
// memories (v3: entity ids inside "filters").
type fakeMem0 struct {
	t        *testing.T
	mu       sync.Mutex
	memories []string
	added    []map[string]any
	shape    string // "results" (v3), "memories" (v2) or "array" (v1)
}

func (f *fakeMem0) handler() http.Handler {
	mux := http.NewServeMux()
	auth := func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("Authorization") != "Token m0-key" {
			http.Error(w, `{"detail":"Invalid API key"}`, http.StatusUnauthorized)
			return false
		}
		return true
	}
	mux.HandleFunc("POST /v3/memories/search/", func(w http.ResponseWriter, r *http.Request) {
		if !auth(w, r) {
			return
		}
		var body struct {
			Query   string         `json:"query"`
			Filters map[string]any `json:"filters"`
			TopK    int            `json:"top_k"`
			UserID  string         `json:"user_id"`
		}
		json.NewDecoder(r.Body).Decode(&body)
		if body.UserID != "" || body.Filters["user_id"] != "alice" || body.TopK != 3 || body.Query == "" {
			http.Error(w, `{"error":"entity ids must be inside filters"}`, http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		var hits []map[string]any
		for i, m := range f.memories {
			for _, w := range strings.Fields(strings.ToLower(body.Query)) {
				if strings.Contains(strings.ToLower(m), strings.Trim(w, "?")) && len(w) > 3 {
					hits = append(hits, map[string]any{"id": "m" + string(rune('0'+i)), "memory": m, "user_id": "alice", "score": 0.8})
					break
				}
			}
		}
		f.mu.Unlock()
		if hits == nil {
			hits = []map[string]any{}
		}
		switch f.shape {
		case "array":
			json.NewEncoder(w).Encode(hits)
		case "memories":
			json.NewEncoder(w).Encode(map[string]any{"memories": hits})
		default:
			json.NewEncoder(w).Encode(map[string]any{"results": hits})
		}
	})
	mux.HandleFunc("POST /v1/memories/", func(w http.ResponseWriter, r *http.Request) {
		if !auth(w, r) {
			return
		}
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		msgs, _ := body["messages"].([]any)
		if len(msgs) == 0 || body["user_id"] != "alice" {
			http.Error(w, `{"error":"400 Bad Request"}`, http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.added = append(f.added, body)
		first := msgs[0].(map[string]any)["content"].(string)
		f.memories = append(f.memories, first)
		f.mu.Unlock()
		json.NewEncoder(w).Encode([]map[string]any{{"id": "mem_1", "event": "ADD", "data": map[string]any{"memory": first}}})
	})
	return mux
}

func TestMem0AgainstFakeServer(t *testing.T) {
	for _, shape := range []string{"results", "memories", "array"} {
		t.Run(shape, func(t *testing.T) {
			fake := &fakeMem0{t: t, memories: []string{"Allergic to nuts and prefers vegetarian food"}, shape: shape}
			srv := httptest.NewServer(fake.handler())
			defer srv.Close()
			p := mem0.New(mem0.Options{BaseURL: srv.URL, APIKey: "m0-key", UserID: "alice", TopK: 3, SyncTurns: true})
			ctx := context.Background()

			out, err := p.Prefetch(ctx, memory.PrefetchQuery{SessionID: "s1", Query: "What food should I order?"})
			if err != nil || out != "- Allergic to nuts and prefers vegetarian food" {
				t.Fatalf("prefetch = %q, %v", out, err)
			}
			if out, err := p.Prefetch(ctx, memory.PrefetchQuery{Query: "weather tomorrow"}); err != nil || out != "" {
				t.Errorf("prefetch without hits = %q, %v", out, err)
			}
			err = p.SyncTurn(ctx, memory.SyncTurn{SessionID: "s1", User: "I moved to Austin last month.", Assistant: "Noted!"})
			if err != nil || len(fake.added) != 1 {
				t.Fatalf("sync = %v, added %d", err, len(fake.added))
			}
			add := fake.added[0]
			if md := add["metadata"].(map[string]any); md["session_id"] != "s1" || add["infer"] != true || len(add["messages"].([]any)) != 2 {
				t.Errorf("add body = %v", add)
			}
			res := p.Tools()[0]
			if res.Write == nil || res.Definition.Name != "mem0_add" {
				t.Fatalf("tool = %+v", res)
			}
			got, err := res.Executor.Execute(ctx, tools.ToolCallRequest{Arguments: `{"content":"Works at Acme as a data engineer"}`}, tools.ExecutionContext{SessionID: "s2"})
			if err != nil || !strings.Contains(got, `"event":"ADD"`) {
				t.Errorf("mem0_add = %s, %v", got, err)
			}
			if out, _ := p.Prefetch(ctx, memory.PrefetchQuery{Query: "where does she work as engineer?"}); !strings.Contains(out, "Acme") {
				t.Errorf("prefetch after add = %q", out)
			}
		})
	}
	t.Run("BadKey", func(t *testing.T) {
		srv := httptest.NewServer((&fakeMem0{t: t}).handler())
		defer srv.Close()
		p := mem0.New(mem0.Options{BaseURL: srv.URL, APIKey: "wrong", UserID: "alice", TopK: 3})
		_, err := p.Prefetch(context.Background(), memory.PrefetchQuery{Query: "x"})
		if err == nil || !strings.Contains(err.Error(), "HTTP 401") || !strings.Contains(err.Error(), "/v3/memories/search/") {
			t.Errorf("err = %v", err)
		}
	})
}
