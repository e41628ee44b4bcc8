package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/runtime/tools"
)

// Slot receives the synced tools; *tools.ToolService implements it.
type Slot interface {
	SetSlot(source tools.SourceType, defs []tools.ToolDefinition, exec tools.Executor) error
}

// Registry lists the stored sites; *store.DB implements it.
type Registry interface {
	ListMCPSites(ctx context.Context) ([]Site, error)
}

// Site health.
const (
	HealthConnecting = "connecting"
	HealthHealthy    = "healthy"
	HealthUnhealthy  = "unhealthy"
	HealthDisabled   = "disabled"
)

// Defaults for Options.
const (
	DefaultHealthInterval = 15 * time.Second
	DefaultMinBackoff     = 250 * time.Millisecond
	DefaultMaxBackoff     = 30 * time.Second
)

// Options configure a Service. Zero fields take their defaults.
type Options struct {
	// Registry holds the sites added with `nagent mcp add`; nil means none.
	Registry Registry
	// Sites come from config.yaml and shadow stored sites of the same name.
	Sites []Site
	// Slot receives the tools of the healthy sites; nil means nowhere.
	Slot Slot
	// HealthInterval is how often a connected site is pinged.
	HealthInterval time.Duration
	// ReloadInterval, when positive, makes Start re-read the sites that
	// often (see Reload), so `nagent mcp add` reaches a running server.
	ReloadInterval time.Duration
	// MinBackoff and MaxBackoff bound the delay between reconnects.
	MinBackoff, MaxBackoff time.Duration
	Log                    *slog.Logger
}

// SiteStatus is what the service knows about one site now.
type SiteStatus struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Transport string `json:"transport"`
	Source    string `json:"source"`
	Health    string `json:"health"`
	Error     string `json:"error,omitempty"`
	// Tools are the exposed names of the site's tools while it is healthy.
	Tools           []string  `json:"tools"`
	ProtocolVersion string    `json:"protocol_version,omitempty"`
	ServerName      string    `json:"server_name,omitempty"`
	ServerVersion   string    `json:"server_version,omitempty"`
	Since           time.Time `json:"since"`
}

// Service is the design's McpService: it keeps every enabled site
// connected, publishes the tools of the healthy ones into the mcp slot, and
// runs calls to them. Its methods are safe for concurrent use.
type Service struct {
	opts Options
	exec *ToolExecutor

	mu     sync.Mutex
	sites  map[string]*siteConn // by name
	routes map[string]remoteTool
	base   context.Context // the supervisors' parent, set by Start
	stop   context.CancelFunc
	done   sync.WaitGroup

	// attached are the sites added with Attach, by name (under mu).
	attached map[string]Site
}

// NewService returns a service that has not connected to anything yet.
func NewService(opts Options) *Service {
	if opts.HealthInterval <= 0 {
		opts.HealthInterval = DefaultHealthInterval
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = DefaultMinBackoff
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(DefaultMaxBackoff, opts.MinBackoff)
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	s := &Service{opts: opts, sites: make(map[string]*siteConn), routes: make(map[string]remoteTool), stop: func() {}}
	s.exec = &ToolExecutor{svc: s}
	return s
}

// Executor is the design's McpToolExecutor for this service.
func (s *Service) Executor() *ToolExecutor { return s.exec }

// Sites returns the configured sites and the stored ones they do not
// shadow, by name.
func (s *Service) Sites(ctx context.Context) ([]Site, error) {
	byName := make(map[string]Site)
	if s.opts.Registry != nil {
		stored, err := s.opts.Registry.ListMCPSites(ctx)
		if err != nil {
			return nil, fmt.Errorf("mcp: %w", err)
		}
		for _, site := range stored {
			byName[site.Name] = site
		}
	}
	for _, site := range s.opts.Sites {
		if old, ok := byName[site.Name]; ok && old.Source != "config" {
			s.opts.Log.Warn("MCP site in config.yaml shadows a stored site", "site", site.Name, "stored_id", old.ID)
		}
		byName[site.Name] = site
	}
	s.mu.Lock()
	for name, site := range s.attached {
		if _, taken := byName[name]; !taken { // Attach refuses such names; a later `mcp add` wins
			byName[name] = site
		}
	}
	s.mu.Unlock()
	return slices.SortedFunc(maps.Values(byName), func(a, b Site) int { return strings.Compare(a.Name, b.Name) }), nil
}

// Start connects to every enabled site and keeps them connected until
// Close. It waits for each site's first connection attempt, so the first
// turn already sees the tools of the sites that answered; a site that did
// not is reported unhealthy and retried in the background. Start fails only
// when the sites cannot be listed.
func (s *Service) Start(ctx context.Context) error {
	s.mu.Lock()
	started := s.base != nil
	if !started {
		s.base, s.stop = context.WithCancel(context.WithoutCancel(ctx))
	}
	base := s.base
	s.mu.Unlock()
	if err := s.Reload(ctx); err != nil {
		return err
	}
	if every := s.opts.ReloadInterval; every > 0 && !started {
		s.done.Go(func() {
			t := time.NewTicker(every)
			defer t.Stop()
			for {
				select {
				case <-base.Done():
					return
				case <-t.C:
				}
				if err := s.Reload(base); err != nil && base.Err() == nil {
					s.opts.Log.Warn("reloading MCP sites", "err", err)
				}
			}
		})
	}
	return nil
}

// Reload re-reads the sites (config and registry) after Start: a site that
// is new is connected, one that is gone or disabled is disconnected and its
// tools withdrawn, one whose settings changed is reconnected. Like Start, it
// waits for the first connection attempt of the sites it starts.
func (s *Service) Reload(ctx context.Context) error {
	sites, err := s.Sites(ctx)
	if err != nil {
		return err
	}
	want := make(map[string]Site, len(sites))
	for _, site := range sites {
		want[site.Name] = site
	}
	s.mu.Lock()
	if s.base == nil {
		s.mu.Unlock()
		return errors.New("mcp: Reload before Start")
	}
	var stopped []*siteConn
	for name, c := range s.sites {
		if site, ok := want[name]; !ok || !reflect.DeepEqual(site, c.site) {
			c.cancel()
			stopped = append(stopped, c)
			delete(s.sites, name)
		}
	}
	var first []chan struct{}
	for _, site := range sites {
		if _, ok := s.sites[site.Name]; ok {
			continue
		}
		c := newSiteConn(s, site)
		s.sites[site.Name] = c
		if !site.Enabled {
			continue
		}
		first = append(first, c.firstDone)
		var runCtx context.Context
		runCtx, c.cancel = context.WithCancel(s.base)
		s.done.Add(1)
		go func() {
			defer s.done.Done()
			defer close(c.stopped)
			c.run(runCtx)
		}()
	}
	s.mu.Unlock()
	for _, c := range stopped {
		<-c.stopped
	}
	if len(stopped) > 0 {
		s.publish()
	}
	for _, ch := range first {
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Close disconnects every site and stops the supervisors.
func (s *Service) Close() error {
	s.mu.Lock()
	stop := s.stop
	s.mu.Unlock()
	stop()
	s.done.Wait()
	return nil
}

// Status returns every site's status, by name.
func (s *Service) Status() []SiteStatus {
	s.mu.Lock()
	conns := slices.Collect(maps.Values(s.sites))
	s.mu.Unlock()
	out := make([]SiteStatus, 0, len(conns))
	for _, c := range conns {
		out = append(out, c.snapshot())
	}
	slices.SortFunc(out, func(a, b SiteStatus) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// SiteStatus returns one site's status.
func (s *Service) SiteStatus(name string) (SiteStatus, bool) {
	s.mu.Lock()
	c, ok := s.sites[name]
	s.mu.Unlock()
	if !ok {
		return SiteStatus{}, false
	}
	return c.snapshot(), true
}

// Check asks the supervisor of site to ping it now, as a failed call does.
func (s *Service) Check(site string) {
	s.mu.Lock()
	c := s.sites[site]
	s.mu.Unlock()
	if c != nil {
		c.signal(c.kick)
	}
}

// publish puts the tools of every healthy site into the slot.
func (s *Service) publish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	var defs []tools.ToolDefinition
	routes := make(map[string]remoteTool)
	for _, name := range slices.Sorted(maps.Keys(s.sites)) {
		c := s.sites[name]
		for _, t := range c.exposed() {
			routes[t.def.Name] = t
			defs = append(defs, t.def)
		}
	}
	s.routes = routes
	if s.opts.Slot == nil {
		return
	}
	if err := s.opts.Slot.SetSlot(tools.SourceMCP, defs, s.exec); err == nil {
		return
	}
	// One bad tool (a schema that does not compile, a name another source
	// took) must not hide the others: add them one at a time, leaving out
	// those the slot refuses. This path is rare, so its cost does not matter.
	var kept []tools.ToolDefinition
	for _, d := range defs {
		if err := s.opts.Slot.SetSlot(tools.SourceMCP, append(kept, d), s.exec); err != nil {
			s.opts.Log.Error("MCP tool left out", "tool", d.Name, "mcp_site", routes[d.Name].site, "err", err)
			delete(s.routes, d.Name)
			continue
		}
		kept = append(kept, d)
	}
}

func (s *Service) route(name string) (remoteTool, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.routes[name]
	return t, ok
}

// CallTool runs tools/call on site for remote with args (a JSON object), and
// returns the result as the text of a tool message (see ResultText). A tool
// that reports isError is an error carrying that text. A site that is down
// is an EUNAVAILABLE error.
func (s *Service) CallTool(ctx context.Context, site, remote string, args json.RawMessage) (string, error) {
	s.mu.Lock()
	c := s.sites[site]
	s.mu.Unlock()
	if c == nil {
		return "", errs.Errorf(errs.ENOTFOUND, "no MCP site %s", site)
	}
	sess := c.session()
	if sess == nil {
		return "", errs.Errorf(errs.EUNAVAILABLE, "MCP site %s is unavailable: %s", site, c.snapshot().Error)
	}
	var arguments map[string]any
	if len(args) > 0 {
		if err := json.Unmarshal(args, &arguments); err != nil {
			return "", errs.Errorf(errs.EINVALID, "arguments of %s are not a JSON object: %v", remote, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout(sess.Site))
	defer cancel()
	req := mcpgo.CallToolRequest{}
	req.Params.Name = remote
	req.Params.Arguments = arguments
	res, err := sess.Client.CallTool(ctx, req)
	if err != nil {
		if ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			c.signal(c.kick) // the server may have died: check it now
		}
		return "", fmt.Errorf("MCP site %s: %s: %w", site, remote, err)
	}
	text := ResultText(res)
	if res.IsError {
		if text == "" {
			text = "the tool reported an error"
		}
		return "", errs.Errorf(errs.EINVALID, "MCP tool %s of site %s failed: %s", remote, site, text)
	}
	return text, nil
}

// ToolExecutor is the design's McpToolExecutor: it runs calls for the
// tools of the mcp slot, and serves as the CompositeToolExecutor's fallback.
type ToolExecutor struct{ svc *Service }

var _ tools.Executor = (*ToolExecutor)(nil)

// Execute runs call on the site its name routes to.
func (e *ToolExecutor) Execute(ctx context.Context, call tools.ToolCallRequest, _ tools.ExecutionContext) (string, error) {
	t, ok := e.svc.route(call.Name)
	if !ok {
		return "", errs.Errorf(errs.ENOTFOUND, "tool %s is not available: no executor, and no healthy MCP site offers it", call.Name)
	}
	return e.svc.CallTool(ctx, t.site, t.remote, json.RawMessage(call.Arguments))
}

// SourceAttached is the Source of a site added with Attach.
const SourceAttached = "attached"

// Attach connects site next to the configured and stored ones without
// storing it, until Detach or Close: an editor's MCP server for one ACP
// session, say. Its tools join the mcp slot like any site's. Attach waits
// for the first connection attempt and returns the site's status; a site
// that did not answer is retried in the background. A name that a
// configured, stored or attached site already has is an ECONFLICT error.
// Attach needs Start first.
func (s *Service) Attach(ctx context.Context, site Site) (SiteStatus, error) {
	site.Enabled, site.Source = true, SourceAttached
	if site.ID == "" {
		site.ID = "attached:" + site.Name
	}
	if err := ValidateSite(site); err != nil {
		return SiteStatus{}, err
	}
	sites, err := s.Sites(ctx)
	if err != nil {
		return SiteStatus{}, err
	}
	s.mu.Lock()
	_, attached := s.attached[site.Name]
	taken := attached || slices.ContainsFunc(sites, func(o Site) bool { return o.Name == site.Name })
	if !taken {
		if s.attached == nil {
			s.attached = make(map[string]Site)
		}
		s.attached[site.Name] = site
	}
	s.mu.Unlock()
	if taken {
		return SiteStatus{}, errs.Errorf(errs.ECONFLICT, "MCP site name %s is already taken; attach the server under another name", site.Name)
	}
	if err := s.Reload(ctx); err != nil {
		_ = s.Detach(context.WithoutCancel(ctx), site.Name)
		return SiteStatus{}, err
	}
	st, _ := s.SiteStatus(site.Name)
	return st, nil
}

// Detach disconnects a site added with Attach and withdraws its tools. A
// name that is not attached is ignored.
func (s *Service) Detach(ctx context.Context, name string) error {
	s.mu.Lock()
	_, ok := s.attached[name]
	delete(s.attached, name)
	s.mu.Unlock()
	if !ok {
		return nil
	}
	return s.Reload(ctx)
}
