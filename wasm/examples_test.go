package wasm_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/nagent/nagent/internal/plugintest"
	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/wasm"
)

// TestTextstats: the Go example, built from source.
func TestTextstats(t *testing.T) {
	e := newEnv(t, wasm.Options{})
	e.install(t, plugintest.Textstats(t))
	for _, tt := range []struct{ text, want string }{
		{"", `{"words":0,"lines":0,"chars":0}`},
		{"hello world", `{"words":2,"lines":1,"chars":11}`},
		{"one two\nthree\n", `{"words":3,"lines":2,"chars":14}`},
		{"héllo wörld ✓\nsecond line", `{"words":5,"lines":2,"chars":25}`},
	} {
		args, _ := json.Marshal(map[string]string{"text": tt.text})
		wantSuccess(t, e.call(t, "word_count", string(args)), tt.want)
	}
	wantError(t, e.call(t, "word_count", `{}`), "invalid arguments", "text")
}

// TestHashing: the AssemblyScript example, built from source.
func TestHashing(t *testing.T) {
	e := newEnv(t, wasm.Options{})
	e.install(t, plugintest.Hashing(t))
	for _, text := range []string{"", "abc", "hello world\nbye", "héllo ✓ 😀 \"quoted\" \\ \t", strings.Repeat("0123456789", 1000)} {
		args, _ := json.Marshal(map[string]string{"text": text})
		sum := sha256.Sum256([]byte(text))
		wantSuccess(t, e.call(t, "sha256", string(args)), `{"hex":"`+hex.EncodeToString(sum[:])+`"}`)
	}
}

// TestFetch: the C example calls nagent.http_request against a local
// server on an allowed host, and is refused a host outside allowed_hosts;
// both are audited, and the policy can refuse an allowed host too.
func TestFetch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Test", "yes")
		w.Write([]byte("hello from " + r.URL.Path))
	}))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	e := newEnv(t, wasm.Options{Policy: denyPath("/forbidden")})
	e.install(t, plugintest.Fetch(t))

	t.Run("AllowedHost", func(t *testing.T) {
		res := e.call(t, "fetch", `{"url":"`+srv.URL+`/page"}`)
		var got struct {
			Status  int               `json:"status"`
			Headers map[string]string `json:"headers"`
			Body    string            `json:"body"`
		}
		if res.Status != tools.StatusSuccess || json.Unmarshal([]byte(res.Content), &got) != nil {
			t.Fatalf("result = %+v", res)
		}
		if got.Status != 200 || got.Body != "hello from /page" || got.Headers["x-test"] != "yes" {
			t.Errorf("response = %+v", got)
		}
	})
	t.Run("HostNotAllowed", func(t *testing.T) {
		res := e.call(t, "fetch", `{"url":"http://localhost:`+port+`/page"}`)
		wantError(t, res, "http_request to http://localhost:"+port+"/page refused: host localhost:"+port+" is not in permissions.allowed_hosts of plugin fetch")
	})
	t.Run("DeniedByPolicy", func(t *testing.T) {
		wantError(t, e.call(t, "fetch", `{"url":"`+srv.URL+`/forbidden"}`), "refused by policy: no /forbidden")
	})

	e.host.SyncAudit(t.Context())
	calls, err := e.db.ListPluginHostCalls(t.Context(), "fetch", 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range calls {
		if c.Function == "http_request" {
			got = append(got, c.Outcome)
		}
	}
	if strings.Join(got, ",") != "ok,denied,denied" {
		t.Errorf("audited http_request outcomes = %v, want ok,denied,denied", got)
	}
}

// denyPath is a policy that refuses http_request host calls whose URL
// contains path, and allows everything else.
type denyPath string

func (d denyPath) Decide(_ context.Context, in tools.PolicyInput) (tools.Decision, error) {
	var args struct {
		HostCall string `json:"host_call"`
		URL      string `json:"url"`
	}
	json.Unmarshal(in.Args, &args)
	if args.HostCall == "http_request" && strings.Contains(args.URL, string(d)) {
		return tools.Decision{Reasons: []string{"no " + string(d)}}, nil
	}
	return tools.Decision{Allow: true}, nil
}
