package acp

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"

	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/runtime/mcp"
)

// sitePool attaches the editor's MCP servers through the MCP domain. Two
// sessions that pass the same server share one connection; it is detached
// when the last of them closes. The tools of an attached server are in the
// runtime's mcp slot, so every session of this process sees them (one
// `nagent acp` process serves one editor).
type sitePool struct {
	mcp MCP
	log *slog.Logger

	mu   sync.Mutex
	refs map[string]*pooledSite // by site name
}

type pooledSite struct {
	site mcp.Site
	n    int
}

// maxSuffix bounds the names tried when an editor's server name is taken.
const maxSuffix = 9

// attach connects servers and returns the names of their sites. A server
// that cannot be attached fails the whole call, releasing the others.
func (p *sitePool) attach(ctx context.Context, servers []mcpServer) ([]string, error) {
	if len(servers) == 0 {
		return nil, nil
	}
	if p.mcp == nil {
		return nil, &Error{Code: CodeInvalidParams, Message: "this N-Agent has no MCP service; start the session without mcpServers"}
	}
	var names []string
	for _, srv := range servers {
		name, err := p.attachOne(ctx, srv)
		if err != nil {
			p.release(context.WithoutCancel(ctx), names)
			return nil, err
		}
		names = append(names, name)
	}
	return names, nil
}

func (p *sitePool) attachOne(ctx context.Context, srv mcpServer) (string, error) {
	site, err := siteOf(srv)
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	defer p.mu.Unlock() // attaching is rare; holding the lock keeps refcounts simple
	base := site.Name
	for i := 1; i <= maxSuffix; i++ {
		if i > 1 {
			site.Name = fmt.Sprintf("%s-%d", base[:min(len(base), 22)], i)
		}
		if ref := p.refs[site.Name]; ref != nil {
			if sameServer(ref.site, site) {
				ref.n++
				return site.Name, nil
			}
			continue
		}
		st, err := p.mcp.Attach(ctx, site)
		if errs.Code(err) == errs.ECONFLICT {
			continue // a configured or stored site has the name
		}
		if err != nil {
			return "", &Error{Code: CodeInvalidParams, Message: fmt.Sprintf("MCP server %q: %s", srv.Name, errs.MessageOrError(err))}
		}
		if st.Health != mcp.HealthHealthy {
			p.log.Warn("acp: MCP server not connected yet; retrying in the background", "mcp_site", site.Name, "health", st.Health, "err", st.Error)
		}
		p.refs[site.Name] = &pooledSite{site: site, n: 1}
		return site.Name, nil
	}
	return "", &Error{Code: CodeInvalidParams, Message: fmt.Sprintf("MCP server %q: every name from %s to %s-%d is taken; rename the server", srv.Name, base, base, maxSuffix)}
}

// release drops one reference to each site, detaching those no session uses.
func (p *sitePool) release(ctx context.Context, names []string) {
	if len(names) == 0 || p.mcp == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, name := range names {
		ref := p.refs[name]
		if ref == nil {
			continue
		}
		if ref.n--; ref.n > 0 {
			continue
		}
		delete(p.refs, name)
		if err := p.mcp.Detach(ctx, name); err != nil {
			p.log.Warn("acp: MCP server not detached", "mcp_site", name, "err", err)
		}
	}
}

func sameServer(a, b mcp.Site) bool {
	a.Name, b.Name, a.ID, b.ID = "", "", "", ""
	return reflect.DeepEqual(a, b)
}

// siteOf turns an editor's MCP server into a site. Its name becomes a valid
// site name (lower case, [a-z0-9-], at most 24 characters), so its tools
// are exposed as mcp_<name>_<tool>.
func siteOf(srv mcpServer) (mcp.Site, error) {
	site := mcp.Site{Name: siteName(srv.Name)}
	switch srv.Type {
	case "", "stdio":
		site.Transport, site.Command, site.Args = mcp.TransportStdio, srv.Command, srv.Args
		if len(srv.Env) > 0 {
			site.Env = make(map[string]string, len(srv.Env))
			for _, e := range srv.Env {
				site.Env[e.Name] = e.Value
			}
		}
	case "http", "sse":
		site.Transport, site.URL = mcp.TransportStreamableHTTP, srv.URL
		if srv.Type == "sse" {
			site.Transport = mcp.TransportSSE
		}
		if len(srv.Headers) > 0 {
			site.Headers = make(map[string]string, len(srv.Headers))
			for _, h := range srv.Headers {
				site.Headers[h.Name] = h.Value
			}
		}
	default:
		return site, &Error{Code: CodeInvalidParams, Message: fmt.Sprintf("MCP server %q: transport %q is not supported; use stdio, http or sse", srv.Name, srv.Type)}
	}
	if err := mcp.ValidateSite(site); err != nil {
		return site, &Error{Code: CodeInvalidParams, Message: fmt.Sprintf("MCP server %q: %s", srv.Name, errs.MessageOrError(err))}
	}
	return site, nil
}

// siteName maps an editor's server name onto a site name.
func siteName(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
		switch {
		case ok:
			b.WriteRune(r)
			dash = false
		case b.Len() > 0 && !dash:
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 24 {
			break
		}
	}
	s := strings.TrimRight(b.String(), "-")
	if len(s) > 24 {
		s = strings.TrimRight(s[:24], "-")
	}
	if s == "" {
		s = "editor"
	}
	return s
}
