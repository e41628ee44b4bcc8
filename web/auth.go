package web

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/store"
)

// CookieName is the dashboard login cookie.
const CookieName = "nagent_session"

// CSRFHeader carries the login's CSRF token on state-changing requests.
const CSRFHeader = "X-CSRF-Token"

// caller is who sent a request.
type caller struct {
	// bearer: authenticated with Authorization: Bearer, so no CSRF check.
	bearer bool
	// login is the cookie's login, or nil.
	login *store.WebLogin
}

type callerKey struct{}

// validKey reports whether key is one of the configured keys, comparing
// against every key in constant time.
func (s *Server) validKey(key string) bool {
	got := []byte(key)
	var match int
	for _, k := range s.keys {
		match |= subtle.ConstantTimeCompare(got, k)
	}
	return match == 1
}

// authenticate identifies the caller. ok is false when keys are configured
// and the request carries neither a valid key nor a valid login cookie.
func (s *Server) authenticate(r *http.Request) (c caller, ok bool, err error) {
	auth := r.Header.Get("Authorization")
	if strings.TrimSpace(strings.TrimPrefix(auth, "Bearer")) == "" && !s.authRequired() {
		// A keyless server: an empty bearer ("Bearer ", as clients send
		// with an unset key variable) is no credential, like no header.
		auth = ""
	}
	if auth != "" {
		token, isBearer := strings.CutPrefix(auth, "Bearer ")
		if !isBearer || (s.authRequired() && !s.validKey(strings.TrimSpace(token))) {
			return c, false, nil
		}
		return caller{bearer: true}, true, nil
	}
	if ck, cerr := r.Cookie(CookieName); cerr == nil && ck.Value != "" {
		l, err := s.app.DB.GetWebLogin(r.Context(), hashToken(ck.Value))
		if err != nil {
			return c, false, err
		}
		if l != nil {
			return caller{login: l}, true, nil
		}
	}
	return c, !s.authRequired(), nil
}

func (s *Server) authRequired() bool { return len(s.keys) > 0 }

// sameOrigin rejects a browser request whose Origin is another site.
func sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && strings.EqualFold(u.Host, r.Host)
}

func unsafeMethod(m string) bool {
	return m != http.MethodGet && m != http.MethodHead && m != http.MethodOptions
}

// guard authenticates an /api request and checks its CSRF token.
func (s *Server) guard(h handler) handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		if !sameOrigin(r) {
			return errs.Errorf(errs.EFORBIDDEN, "cross-origin request refused: Origin %q is not this server", r.Header.Get("Origin"))
		}
		c, ok, err := s.authenticate(r)
		if err != nil {
			return err
		}
		if !ok {
			return errs.Errorf(errs.EUNAUTHORIZED, "log in first: POST /api/login with an API key, or send \"Authorization: Bearer <key>\" (keys come from server.api_keys or NAGENT_API_KEYS)")
		}
		if unsafeMethod(r.Method) && !c.bearer {
			if c.login == nil {
				return errs.Errorf(errs.EFORBIDDEN, "missing CSRF token: GET /api/auth first, then send its csrf_token in the %s header", CSRFHeader)
			}
			got := r.Header.Get(CSRFHeader)
			if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(c.login.CSRFToken)) != 1 {
				return errs.Errorf(errs.EFORBIDDEN, "missing or wrong %s header; GET /api/auth returns the token of this login", CSRFHeader)
			}
		}
		return h(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
	}
}

// newLogin stores a fresh login and sets its cookie.
func (s *Server) newLogin(w http.ResponseWriter, r *http.Request) (*store.WebLogin, error) {
	token, csrf := randomToken(), randomToken()
	l := store.WebLogin{TokenHash: hashToken(token), CSRFToken: csrf, ExpiresAt: s.now().Add(s.loginTTL).UTC()}
	if err := s.app.DB.SaveWebLogin(r.Context(), l); err != nil {
		return nil, err
	}
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: token, Path: "/", Expires: l.ExpiresAt,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	return &l, nil
}

type authResponse struct {
	AuthRequired  bool   `json:"auth_required"`
	Authenticated bool   `json:"authenticated"`
	CSRFToken     string `json:"csrf_token"`
}

// handleAuth is GET /api/auth.
func (s *Server) handleAuth(w http.ResponseWriter, r *http.Request) error {
	c, ok, err := s.authenticate(r)
	if err != nil {
		return err
	}
	resp := authResponse{AuthRequired: s.authRequired(), Authenticated: ok}
	switch {
	case c.login != nil:
		resp.CSRFToken = c.login.CSRFToken
	case ok && !c.bearer: // no keys configured: issue a login for CSRF
		l, err := s.newLogin(w, r)
		if err != nil {
			return err
		}
		resp.CSRFToken = l.CSRFToken
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// handleLogin is POST /api/login {"key"}.
func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) error {
	if !sameOrigin(r) {
		return errs.Errorf(errs.EFORBIDDEN, "cross-origin login refused")
	}
	var req struct {
		Key string `json:"key"`
	}
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if s.authRequired() {
		if strings.TrimSpace(req.Key) == "" {
			return &apiError{Status: http.StatusUnauthorized, Code: errs.EUNAUTHORIZED, Field: "key", Message: "key is required: an API key from server.api_keys or NAGENT_API_KEYS"}
		}
		if !s.validKey(strings.TrimSpace(req.Key)) {
			return &apiError{Status: http.StatusUnauthorized, Code: errs.EUNAUTHORIZED, Field: "key", Message: "wrong API key"}
		}
	}
	l, err := s.newLogin(w, r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"csrf_token": l.CSRFToken, "expires_at": l.ExpiresAt})
	return nil
}

// handleLogout is POST /api/logout.
func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request) error {
	if ck, err := r.Cookie(CookieName); err == nil && ck.Value != "" {
		if err := s.app.DB.DeleteWebLogin(r.Context(), hashToken(ck.Value)); err != nil {
			return err
		}
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/", MaxAge: -1, Expires: time.Unix(0, 0),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func randomToken() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func hashToken(t string) string {
	h := sha256.Sum256([]byte(t))
	return hex.EncodeToString(h[:])
}

// newID returns prefix + 24 random hex digits.
func newID(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
