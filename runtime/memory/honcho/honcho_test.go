package honcho_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/nagent/nagent/runtime/memory"
	"github.com/nagent/nagent/runtime/memory/honcho"
)

// fakeHoncho implements the Honcho v3 endpoints the provider uses, as
// documented at docs.honcho.dev/v3/api-reference: get-or-create workspace,
// peer and session, create messages for a session, and peer chat.
type fakeHoncho struct {
	mu         sync.Mutex
	workspaces map[string]bool
	peers      map[string]bool
	sessions   map[string]map[string]any
	messages   []map[string]any
	calls      []string
}

func newFake() *fakeHoncho {
	return &fakeHoncho{workspaces: map[string]bool{}, peers: map[string]bool{}, sessions: map[string]map[string]any{}}
}

func (f *fakeHoncho) handler() http.Handler {
	mux := http.NewServeMux()
	wrap := func(h func(w http.ResponseWriter, r *http.Request, body map[string]any)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer hc-key" {
				http.Error(w, `{"detail":"unauthorized"}`, http.StatusUnauthorized)
				return
			}
			var body map[string]any
			if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
				http.Error(w, `{"detail":"invalid json"}`, http.StatusUnprocessableEntity)
				return
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			f.calls = append(f.calls, r.Method+" "+r.URL.Path)
			h(w, r, body)
		}
	}
	mux.HandleFunc("POST /v3/workspaces", wrap(func(w http.ResponseWriter, r *http.Request, body map[string]any) {
		f.workspaces[body["id"].(string)] = true
		json.NewEncoder(w).Encode(map[string]any{"id": body["id"], "metadata": map[string]any{}})
	}))
	mux.HandleFunc("POST /v3/workspaces/{ws}/peers", wrap(func(w http.ResponseWriter, r *http.Request, body map[string]any) {
		if !f.workspaces[r.PathValue("ws")] {
			http.Error(w, `{"detail":"workspace not found"}`, http.StatusNotFound)
			return
		}
		f.peers[body["id"].(string)] = true
		json.NewEncoder(w).Encode(map[string]any{"id": body["id"], "workspace_id": r.PathValue("ws")})
	}))
	mux.HandleFunc("POST /v3/workspaces/{ws}/sessions", wrap(func(w http.ResponseWriter, r *http.Request, body map[string]any) {
		id, _ := body["id"].(string)
		if id == "" || strings.ContainsAny(id, ":/ ") {
			http.Error(w, `{"detail":"id must match ^[a-zA-Z0-9_-]+$"}`, http.StatusUnprocessableEntity)
			return
		}
		f.sessions[id], _ = body["peers"].(map[string]any)
		json.NewEncoder(w).Encode(map[string]any{"id": id, "is_active": true, "workspace_id": r.PathValue("ws")})
	}))
	mux.HandleFunc("POST /v3/workspaces/{ws}/sessions/{sid}/messages", wrap(func(w http.ResponseWriter, r *http.Request, body map[string]any) {
		if _, ok := f.sessions[r.PathValue("sid")]; !ok {
			http.Error(w, `{"detail":"session not found"}`, http.StatusNotFound)
			return
		}
		msgs, _ := body["messages"].([]any)
		var out []map[string]any
		for _, m := range msgs {
			mm := m.(map[string]any)
			if !f.peers[mm["peer_id"].(string)] {
				http.Error(w, `{"detail":"peer not found"}`, http.StatusNotFound)
				return
			}
			mm["session_id"] = r.PathValue("sid")
			f.messages = append(f.messages, mm)
			out = append(out, mm)
		}
		json.NewEncoder(w).Encode(out)
	}))
	mux.HandleFunc("POST /v3/workspaces/{ws}/peers/{peer}/chat", wrap(func(w http.ResponseWriter, r *http.Request, body map[string]any) {
		q, _ := body["query"].(string)
		if q == "" || body["reasoning_level"] != "minimal" {
			http.Error(w, `{"detail":"bad chat request"}`, http.StatusUnprocessableEntity)
			return
		}
		var facts []string
		for _, m := range f.messages {
			if m["peer_id"] == r.PathValue("peer") {
				facts = append(facts, "The user said: "+m["content"].(string))
			}
		}
		if len(facts) == 0 {
			json.NewEncoder(w).Encode(map[string]any{"content": nil})
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"content": strings.Join(facts, " ")})
	}))
	return mux
}

func TestHonchoAgainstFakeServer(t *testing.T) {
	fake := newFake()
	srv := httptest.NewServer(fake.handler())
	defer srv.Close()
	p := honcho.New(honcho.Options{BaseURL: srv.URL, APIKey: "hc-key", WorkspaceID: "ws1", PeerID: "alice",
		ReasoningLevel: "minimal", SyncTurns: true})
	ctx := context.Background()

	if out, err := p.Prefetch(ctx, memory.PrefetchQuery{Query: "what does the user like?"}); err != nil || out != "" {
		t.Fatalf("prefetch before any message = %q, %v", out, err)
	}
	for _, sid := range []string{"sess:1", "sess:1"} {
		if err := p.SyncTurn(ctx, memory.SyncTurn{SessionID: sid, User: "I love hiking in the Alps.", Assistant: "Sounds great!"}); err != nil {
			t.Fatal(err)
		}
	}
	if len(fake.messages) != 4 || fake.messages[0]["peer_id"] != "alice" || fake.messages[1]["peer_id"] != "nagent" ||
		fake.messages[0]["session_id"] != "sess-1" {
		t.Errorf("messages = %v", fake.messages)
	}
	if peers := fake.sessions["sess-1"]; len(peers) != 2 {
		t.Errorf("session peers = %v", peers)
	}
	// Workspace, peers and session are created once, not per turn.
	want := "POST /v3/workspaces/ws1/peers/alice/chat,POST /v3/workspaces,POST /v3/workspaces/ws1/peers,POST /v3/workspaces/ws1/peers," +
		"POST /v3/workspaces/ws1/sessions,POST /v3/workspaces/ws1/sessions/sess-1/messages,POST /v3/workspaces/ws1/sessions/sess-1/messages"
	if got := strings.Join(fake.calls, ","); got != want {
		t.Errorf("calls =\n%s\nwant\n%s", got, want)
	}
	out, err := p.Prefetch(ctx, memory.PrefetchQuery{Query: "what does the user like?"})
	if err != nil || !strings.Contains(out, "hiking in the Alps") {
		t.Errorf("prefetch = %q, %v", out, err)
	}

	bad := honcho.New(honcho.Options{BaseURL: srv.URL, APIKey: "nope", WorkspaceID: "ws1", ReasoningLevel: "minimal"})
	if _, err := bad.Prefetch(ctx, memory.PrefetchQuery{Query: "x"}); err == nil || !strings.Contains(err.Error(), "HTTP 401") {
		t.Errorf("bad key err = %v", err)
	}
}
