package web_test

import (
	"net/http"
	"strings"
	"testing"
)

func TestAuth(t *testing.T) {
	e := newEnv(t, envOptions{keys: []string{"key-one", "key-two"}})

	t.Run("AuthStatusBeforeLogin", func(t *testing.T) {
		r := e.do("GET", "/api/auth", nil)
		if r.status != 200 || r.body["auth_required"] != true || r.body["authenticated"] != false || r.body["csrf_token"] != "" {
			t.Fatalf("GET /api/auth = %d %s", r.status, r.raw)
		}
		if len(r.header.Values("Set-Cookie")) != 0 {
			t.Fatal("an unauthenticated /api/auth set a cookie")
		}
	})
	t.Run("NoCookie", func(t *testing.T) {
		for _, p := range []string{"/api/sessions", "/api/status", "/api/policies"} {
			if r := e.do("GET", p, nil); r.status != 401 || r.errCode() != "unauthorized" {
				t.Errorf("GET %s without login = %d %s", p, r.status, r.raw)
			}
		}
		if r := e.do("POST", "/api/runs", map[string]string{"message": "hi"}); r.status != 401 {
			t.Errorf("POST /api/runs without login = %d %s", r.status, r.raw)
		}
	})
	t.Run("WrongKey", func(t *testing.T) {
		r := e.do("POST", "/api/login", map[string]string{"key": "nope"})
		if r.status != 401 || r.errCode() != "unauthorized" || r.errField() != "key" {
			t.Fatalf("login with a wrong key = %d %s", r.status, r.raw)
		}
		if len(r.header.Values("Set-Cookie")) != 0 {
			t.Fatal("a failed login set a cookie")
		}
		if r := e.do("POST", "/api/login", map[string]string{}); r.status != 401 {
			t.Fatalf("login without a key = %d %s", r.status, r.raw)
		}
		if r := e.do("GET", "/api/sessions", nil, "Authorization", "Bearer nope"); r.status != 401 {
			t.Fatalf("a wrong bearer key = %d %s", r.status, r.raw)
		}
	})
	t.Run("WebsocketWithoutLogin", func(t *testing.T) {
		_, resp, err := e.dialWS(nil)
		if err == nil || resp == nil || resp.StatusCode != 401 {
			t.Fatalf("dial /ws without login: err=%v resp=%v", err, resp)
		}
	})
	t.Run("Login", func(t *testing.T) {
		r := e.do("POST", "/api/login", map[string]string{"key": "key-two"})
		if r.status != 200 {
			t.Fatalf("login = %d %s", r.status, r.raw)
		}
		ck := strings.Join(r.header.Values("Set-Cookie"), "; ")
		for _, want := range []string{"nagent_session=", "HttpOnly", "SameSite=Strict", "Path=/"} {
			if !strings.Contains(ck, want) {
				t.Errorf("Set-Cookie %q lacks %s", ck, want)
			}
		}
		e.csrf = r.body["csrf_token"].(string)
		if r := e.do("GET", "/api/sessions", nil); r.status != 200 {
			t.Fatalf("GET /api/sessions after login = %d %s", r.status, r.raw)
		}
		if r := e.do("GET", "/api/auth", nil); r.body["authenticated"] != true || r.body["csrf_token"] != e.csrf {
			t.Fatalf("GET /api/auth after login = %s", r.raw)
		}
	})
	t.Run("BadCSRFToken", func(t *testing.T) {
		body := map[string]any{"kind": "tools", "input": map[string]any{}}
		if r := e.do("POST", "/api/policies/eval", body, "X-CSRF-Token", ""); r.status != 403 || r.errCode() != "forbidden" {
			t.Fatalf("no CSRF token = %d %s", r.status, r.raw)
		}
		if r := e.do("POST", "/api/policies/eval", body, "X-CSRF-Token", "forged"); r.status != 403 || r.errCode() != "forbidden" {
			t.Fatalf("wrong CSRF token = %d %s", r.status, r.raw)
		}
		if r := e.do("DELETE", "/api/sessions/abc", nil, "X-CSRF-Token", "forged"); r.status != 403 {
			t.Fatalf("wrong CSRF token on DELETE = %d %s", r.status, r.raw)
		}
		if r := e.do("POST", "/api/policies/eval", body); r.status != 200 {
			t.Fatalf("right CSRF token = %d %s", r.status, r.raw)
		}
	})
	t.Run("CrossOrigin", func(t *testing.T) {
		if r := e.do("GET", "/api/sessions", nil, "Origin", "http://evil.example"); r.status != 403 {
			t.Fatalf("cross-origin GET = %d %s", r.status, r.raw)
		}
		_, resp, err := e.dialWS(http.Header{"Origin": {"http://evil.example"}})
		if err == nil || resp == nil || resp.StatusCode != 403 {
			t.Fatalf("cross-origin websocket: err=%v resp=%v", err, resp)
		}
	})
	t.Run("BearerNeedsNoCSRF", func(t *testing.T) {
		b := &env{tb: t, srv: e.srv, client: &http.Client{}}
		r := b.do("POST", "/api/policies/eval", map[string]any{"input": map[string]any{}}, "Authorization", "Bearer key-one")
		if r.status != 200 {
			t.Fatalf("bearer POST = %d %s", r.status, r.raw)
		}
		if r := b.do("GET", "/api/sessions", nil, "Authorization", "Bearer key-one"); r.status != 200 {
			t.Fatalf("bearer GET = %d %s", r.status, r.raw)
		}
		if r := b.do("GET", "/api/auth", nil, "Authorization", "Bearer key-one"); r.body["authenticated"] != true {
			t.Fatalf("bearer /api/auth = %s", r.raw)
		}
	})
	t.Run("WebsocketAfterLogin", func(t *testing.T) {
		c := e.mustWS()
		c.send(map[string]string{"type": "ping"})
		if m := c.next(10e9); m["type"] != "pong" {
			t.Fatalf("ping answered %v", m)
		}
	})
	t.Run("Logout", func(t *testing.T) {
		if r := e.do("POST", "/api/logout", nil); r.status != 204 {
			t.Fatalf("logout = %d %s", r.status, r.raw)
		}
		if r := e.do("GET", "/api/sessions", nil); r.status != 401 {
			t.Fatalf("GET after logout = %d %s", r.status, r.raw)
		}
	})
	t.Run("OpenAIRoutesStillServed", func(t *testing.T) {
		if r := e.do("GET", "/healthz", nil); r.status != 200 {
			t.Fatalf("/healthz = %d", r.status)
		}
		if r := e.do("GET", "/v1/models", nil); r.status != 401 {
			t.Fatalf("/v1/models without a key = %d", r.status)
		}
	})
}

func TestNoKeysOnLoopback(t *testing.T) {
	e := newEnv(t, envOptions{})
	if r := e.do("GET", "/api/sessions", nil); r.status != 200 {
		t.Fatalf("GET without keys = %d %s", r.status, r.raw)
	}
	// Writes still need the CSRF token that /api/auth issues with a cookie.
	if r := e.do("POST", "/api/policies/eval", map[string]any{"input": map[string]any{}}); r.status != 403 {
		t.Fatalf("POST without a CSRF token = %d %s", r.status, r.raw)
	}
	r := e.do("GET", "/api/auth", nil)
	if r.body["auth_required"] != false || r.body["authenticated"] != true || r.body["csrf_token"] == "" {
		t.Fatalf("GET /api/auth = %s", r.raw)
	}
	e.csrf = r.body["csrf_token"].(string)
	if r := e.do("POST", "/api/policies/eval", map[string]any{"input": map[string]any{}}); r.status != 200 {
		t.Fatalf("POST with the CSRF token = %d %s", r.status, r.raw)
	}
}

func TestUIServed(t *testing.T) {
	e := newEnv(t, envOptions{keys: []string{"k"}})
	for _, p := range []string{"/", "/sessions/abc"} {
		r := e.do("GET", p, nil)
		if r.status != 200 || !strings.Contains(strings.ToLower(r.raw), "<html") {
			t.Errorf("GET %s = %d, want index.html", p, r.status)
		}
		if r.header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("GET %s lacks X-Frame-Options", p)
		}
	}
	if r := e.do("GET", "/assets/no-such-file.js", nil); r.status != 404 {
		t.Errorf("missing asset = %d", r.status)
	}
	if r := e.do("GET", "/assets/../web.go", nil); r.status == 200 {
		t.Errorf("path escape served a file")
	}
}
