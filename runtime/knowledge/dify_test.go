package knowledge_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/runtime/knowledge"
	"github.com/nagent/nagent/runtime/tools"
)

// fakeDify implements the Dify External Knowledge API over a fixed set of
// records, scoring a record by the share of query words it contains.
type fakeDify struct {
	key, knowledgeID string
	records          []map[string]any

	mu   sync.Mutex
	last map[string]any
}

func (f *fakeDify) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fail := func(status, code int, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]any{"error_code": code, "error_msg": msg})
	}
	if r.Method != http.MethodPost || r.URL.Path != "/api/dify/retrieval" {
		fail(http.StatusNotFound, 404, "not found")
		return
	}
	auth := r.Header.Get("Authorization")
	if !strings.HasPrefix(auth, "Bearer ") {
		fail(http.StatusForbidden, 1001, "Invalid Authorization header format. Expected 'Bearer <api-key>' format.")
		return
	}
	if strings.TrimPrefix(auth, "Bearer ") != f.key {
		fail(http.StatusForbidden, 1002, "Authorization failed")
		return
	}
	var req struct {
		KnowledgeID      string `json:"knowledge_id"`
		Query            string `json:"query"`
		RetrievalSetting struct {
			TopK           int     `json:"top_k"`
			ScoreThreshold float64 `json:"score_threshold"`
		} `json:"retrieval_setting"`
	}
	body := map[string]any{}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		fail(http.StatusBadRequest, 400, err.Error())
		return
	}
	f.mu.Lock()
	f.last = body
	f.mu.Unlock()
	b, _ := json.Marshal(body)
	json.Unmarshal(b, &req)
	if req.KnowledgeID != f.knowledgeID {
		fail(http.StatusNotFound, 2001, "The knowledge does not exist")
		return
	}
	words := strings.Fields(strings.ToLower(req.Query))
	records := []map[string]any{}
	for _, rec := range f.records {
		content := strings.ToLower(rec["content"].(string))
		n := 0
		for _, w := range words {
			if strings.Contains(content, w) {
				n++
			}
		}
		score := float64(n) / float64(len(words))
		if n == 0 || score < req.RetrievalSetting.ScoreThreshold {
			continue
		}
		out := map[string]any{"score": score}
		for k, v := range rec {
			out[k] = v
		}
		records = append(records, out)
	}
	if len(records) > req.RetrievalSetting.TopK {
		records = records[:req.RetrievalSetting.TopK]
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"records": records})
}

func newFakeDify(tb testing.TB) (*fakeDify, *httptest.Server) {
	f := &fakeDify{key: "dify-secret-key", knowledgeID: "AAA-BBB-CCC", records: []map[string]any{
		{"content": "The office opens at 8:00 and closes at 19:00.", "title": "hours.md", "metadata": map[string]any{"path": "s3://kb/hours.md"}},
		{"content": "Visitors must sign in at the reception desk.", "title": "visitors.md", "metadata": map[string]any{"path": "s3://kb/visitors.md"}},
	}}
	srv := httptest.NewServer(f)
	tb.Cleanup(srv.Close)
	return f, srv
}

func TestDify(t *testing.T) {
	ctx := context.Background()
	f, srv := newFakeDify(t)
	db := MustOpenDB(t)
	cfg := `{"endpoint":` + quote(srv.URL+"/api/dify") + `,"knowledge_id":"AAA-BBB-CCC","score_threshold":0.5}`
	good := MustCreateKB(t, db, "office", knowledge.TypeDify, cfg, f.key)
	svc := knowledge.NewService(db, db, nil)

	t.Run("Search", func(t *testing.T) {
		res, err := svc.Search(ctx, good.ID, "office opens", 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 1 || res[0].Title != "hours.md" || res[0].Score != 1 || res[0].Source != "s3://kb/hours.md" {
			t.Fatalf("results = %+v", res)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		want := `{"knowledge_id":"AAA-BBB-CCC","query":"office opens","retrieval_setting":{"score_threshold":0.5,"top_k":3}}`
		if b, _ := json.Marshal(f.last); string(b) != want {
			t.Errorf("request body = %s, want %s", b, want)
		}
	})
	t.Run("ErrBadSecret", func(t *testing.T) {
		bad := MustCreateKB(t, db, "office-bad", knowledge.TypeDify, cfg, "wrong-key-123")
		_, err := svc.Search(ctx, bad.ID, "office", 3)
		if errs.Code(err) != errs.EUNAUTHORIZED || !strings.Contains(err.Error(), "office-bad") ||
			!strings.Contains(err.Error(), "Authorization failed") || strings.Contains(err.Error(), "wrong-key-123") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("ErrNoSecret", func(t *testing.T) {
		none := MustCreateKB(t, db, "office-none", knowledge.TypeDify, cfg, "")
		if _, err := svc.Search(ctx, none.ID, "office", 3); errs.Code(err) != errs.EUNAUTHORIZED {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("ErrUnknownKnowledgeID", func(t *testing.T) {
		kb := MustCreateKB(t, db, "office-404", knowledge.TypeDify, `{"endpoint":`+quote(srv.URL+"/api/dify")+`,"knowledge_id":"nope"}`, f.key)
		_, err := svc.Search(ctx, kb.ID, "office", 3)
		if errs.Code(err) != errs.ENOTFOUND || !strings.Contains(err.Error(), "2001") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("ErrServerDown", func(t *testing.T) {
		kb := MustCreateKB(t, db, "office-down", knowledge.TypeDify, `{"endpoint":"http://127.0.0.1:1","knowledge_id":"x"}`, f.key)
		if _, err := svc.Search(ctx, kb.ID, "office", 3); errs.Code(err) != errs.EUNAVAILABLE {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("ToolReportsFailuresNextToResults", func(t *testing.T) {
		out, err := svc.Execute(ctx, tools.ToolCallRequest{Name: knowledge.ToolName, Arguments: `{"query":"office opens"}`}, tools.ExecutionContext{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, `"kb_name":"office"`) || !strings.Contains(out, `"kb_name":"office-bad"`) || strings.Contains(out, "wrong-key-123") {
			t.Errorf("output = %s", out)
		}
	})
}

var difyConfigTests = []struct {
	name, config, want string
}{
	{"ErrEndpointRequired", `{"knowledge_id":"x"}`, "endpoint is required"},
	{"ErrEndpointScheme", `{"endpoint":"ftp://x","knowledge_id":"x"}`, "not an http(s) URL"},
	{"ErrKnowledgeIDRequired", `{"endpoint":"http://x"}`, "knowledge_id is required"},
	{"ErrThreshold", `{"endpoint":"http://x","knowledge_id":"x","score_threshold":2}`, "score_threshold"},
	{"ErrEndpointType", `{"endpoint":1}`, "config"},
}

func TestDifyValidate(t *testing.T) {
	for _, tt := range difyConfigTests {
		t.Run(tt.name, func(t *testing.T) {
			err := knowledge.DifyFactory{}.Validate(json.RawMessage(tt.config))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestSecretNeverReturned: no read of the registry but GetKnowledgeSecret
// carries the secret.
func TestSecretNeverReturned(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	kb := MustCreateKB(t, db, "s", knowledge.TypeDify, `{"endpoint":"http://x","knowledge_id":"k"}`, "sk-top-secret")
	list, _ := db.ListKnowledgeBases(ctx)
	one, _ := db.GetKnowledgeBase(ctx, kb.ID)
	for _, v := range []any{list, one} {
		b, _ := json.Marshal(v)
		if strings.Contains(string(b), "sk-top-secret") || !strings.Contains(string(b), `"has_secret":true`) {
			t.Errorf("registry read = %s", b)
		}
	}
	if s, err := db.GetKnowledgeSecret(ctx, kb.ID); err != nil || s != "sk-top-secret" {
		t.Errorf("GetKnowledgeSecret = %q, %v", s, err)
	}
}
