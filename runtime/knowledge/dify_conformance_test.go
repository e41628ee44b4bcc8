package knowledge_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/runtime/knowledge"
)

// difyCase is one file of testdata/dify: the request N-Agent must send,
// the server's answer, and the chunks or error that must come out.
type difyCase struct {
	Config   map[string]any `yaml:"config"`
	Secret   string         `yaml:"secret"`
	Query    string         `yaml:"query"`
	TopK     int            `yaml:"top_k"`
	Request  map[string]any `yaml:"request"`
	Response struct {
		Status int    `yaml:"status"`
		Body   any    `yaml:"body"`
		Raw    string `yaml:"raw"`
	} `yaml:"response"`
	Want struct {
		Chunks []map[string]any `yaml:"chunks"`
		Code   string           `yaml:"code"`
		Error  string           `yaml:"error"`
	} `yaml:"want"`
}

func TestDifyConformance(t *testing.T) {
	files, _ := filepath.Glob("testdata/dify/*.yaml")
	if len(files) == 0 {
		t.Fatal("no cases")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var tc difyCase
			if err := yaml.Unmarshal(data, &tc); err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || r.URL.Path != "/v1/retrieval" {
					t.Errorf("request %s %s, want POST /v1/retrieval", r.Method, r.URL.Path)
				}
				if got := r.Header.Get("Authorization"); got != "Bearer "+tc.Secret {
					t.Errorf("Authorization = %q", got)
				}
				if got := r.Header.Get("Content-Type"); got != "application/json" {
					t.Errorf("Content-Type = %q", got)
				}
				body, _ := io.ReadAll(r.Body)
				if got, want := normalise(t, body), normalise(t, mustJSON(t, tc.Request)); !reflect.DeepEqual(got, want) {
					t.Errorf("request body = %s, want %s", body, mustJSON(t, tc.Request))
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.Response.Status)
				if tc.Response.Raw != "" {
					io.WriteString(w, tc.Response.Raw)
				} else {
					w.Write(mustJSON(t, tc.Response.Body))
				}
			}))
			defer srv.Close()

			tc.Config["endpoint"] = srv.URL + "/v1/"
			r, err := knowledge.DifyFactory{}.Create(context.Background(),
				knowledge.Instance{ID: "kb", Name: "kb", Config: mustJSON(t, tc.Config)}, tc.Secret)
			if err != nil {
				t.Fatal(err)
			}
			chunks, err := r.Search(context.Background(), tc.Query, tc.TopK)
			if tc.Want.Error != "" {
				if errs.Code(err) != tc.Want.Code || !strings.Contains(errs.MessageOrError(err), tc.Want.Error) {
					t.Fatalf("err = %v (%s), want %s containing %q", err, errs.Code(err), tc.Want.Code, tc.Want.Error)
				}
				if strings.Contains(err.Error(), tc.Secret) {
					t.Errorf("the error shows the secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := make([]map[string]any, 0, len(chunks))
			for _, c := range chunks {
				m := map[string]any{"content": c.Content, "score": c.Score, "title": c.Title}
				if c.Source != "" {
					m["source"] = c.Source
				}
				got = append(got, m)
			}
			if !reflect.DeepEqual(normalise(t, mustJSON(t, got)), normalise(t, mustJSON(t, tc.Want.Chunks))) {
				t.Errorf("chunks = %s, want %s", mustJSON(t, got), mustJSON(t, tc.Want.Chunks))
			}
		})
	}
}

func mustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func normalise(tb testing.TB, b []byte) any {
	tb.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		tb.Fatalf("%s: %v", b, err)
	}
	if v == nil {
		return []any{}
	}
	return v
}
