package mcp

import (
	"context"
	"errors"
	"sync"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// siteConn is one site's supervisor and its current connection.
type siteConn struct {
	svc       *Service
	site      Site
	kick      chan struct{} // ping now
	resync    chan struct{} // tools/list now
	firstDone chan struct{} // closed after the first connection attempt
	cancel    context.CancelFunc
	stopped   chan struct{} // closed when run returns; at once for a disabled site

	mu     sync.Mutex
	sess   *Session
	tools  []remoteTool
	status SiteStatus
}

func newSiteConn(svc *Service, site Site) *siteConn {
	health := HealthConnecting
	if !site.Enabled {
		health = HealthDisabled
	}
	c := &siteConn{
		svc: svc, site: site, cancel: func() {},
		kick: make(chan struct{}, 1), resync: make(chan struct{}, 1), firstDone: make(chan struct{}), stopped: make(chan struct{}),
		status: SiteStatus{
			ID: site.ID, Name: site.Name, Transport: site.Transport, Source: site.Source,
			Health: health, Tools: []string{}, Since: time.Now(),
		},
	}
	if !site.Enabled {
		close(c.stopped)
	}
	return c
}

func (c *siteConn) signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (c *siteConn) snapshot() SiteStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.status
	st.Tools = append([]string{}, st.Tools...)
	return st
}

func (c *siteConn) session() *Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.status.Health != HealthHealthy {
		return nil
	}
	return c.sess
}

// exposed returns the site's tools while it is healthy.
func (c *siteConn) exposed() []remoteTool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.status.Health != HealthHealthy {
		return nil
	}
	return c.tools
}

// run connects, monitors, and reconnects with backoff until ctx ends.
func (c *siteConn) run(ctx context.Context) {
	log := c.svc.opts.Log.With("mcp_site", c.site.Name)
	backoff := c.svc.opts.MinBackoff
	first := true
	for {
		err := c.connect(ctx)
		if err == nil {
			if first {
				close(c.firstDone)
				first = false
			}
			log.Info("MCP site connected", "tools", len(c.snapshot().Tools))
			backoff = c.svc.opts.MinBackoff
			err = c.monitor(ctx)
		}
		if ctx.Err() != nil {
			c.down(nil)
			if first {
				close(c.firstDone)
			}
			return
		}
		log.Warn("MCP site unhealthy; reconnecting", "err", err, "retry_in", backoff)
		c.down(err)
		if first {
			close(c.firstDone)
			first = false
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, c.svc.opts.MaxBackoff)
	}
}

// connect dials the site, lists its tools and publishes them.
func (c *siteConn) connect(ctx context.Context) error {
	sess, err := Dial(ctx, c.site, c.svc.opts.Log, func(n mcpgo.JSONRPCNotification) {
		if n.Method == mcpgo.MethodNotificationToolsListChanged {
			c.signal(c.resync)
		}
	})
	if err != nil {
		return err
	}
	list, err := sess.ListTools(ctx)
	if err == nil {
		var ts []remoteTool
		if ts, err = definitions(c.site.Name, list); err == nil {
			c.mu.Lock()
			c.sess, c.tools = sess, ts
			c.status.Health, c.status.Error, c.status.Since = HealthHealthy, "", time.Now()
			c.status.Tools = localNames(ts)
			c.status.ProtocolVersion = sess.Server.ProtocolVersion
			c.status.ServerName, c.status.ServerVersion = sess.Server.ServerInfo.Name, sess.Server.ServerInfo.Version
			c.mu.Unlock()
			c.svc.publish()
			return nil
		}
	}
	sess.Close()
	return err
}

// monitor pings the site every health interval, or at once when kicked,
// and re-lists its tools on list_changed. It returns the error that ended
// the connection.
func (c *siteConn) monitor(ctx context.Context) error {
	interval := c.svc.opts.HealthInterval
	tick := time.NewTicker(interval)
	defer tick.Stop()
	sess := c.session()
	if sess == nil {
		return errors.New("connection lost")
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		case <-c.kick:
		case <-c.resync:
			list, err := sess.ListTools(ctx)
			if err != nil {
				return err
			}
			ts, err := definitions(c.site.Name, list)
			if err != nil {
				return err
			}
			c.mu.Lock()
			c.tools, c.status.Tools = ts, localNames(ts)
			c.mu.Unlock()
			c.svc.publish()
			c.svc.opts.Log.Info("MCP site tools re-synced", "mcp_site", c.site.Name, "tools", len(ts))
			continue
		}
		if err := sess.Ping(ctx, min(connectTimeout(c.site), max(interval, 5*time.Second))); err != nil {
			return err
		}
	}
}

// down closes the connection, marks the site unhealthy (or connecting, at
// shutdown) and withdraws its tools.
func (c *siteConn) down(err error) {
	c.mu.Lock()
	sess := c.sess
	c.sess, c.tools = nil, nil
	if err != nil {
		c.status.Health, c.status.Error = HealthUnhealthy, err.Error()
	} else {
		c.status.Health, c.status.Error = HealthConnecting, ""
	}
	c.status.Tools, c.status.Since = []string{}, time.Now()
	c.mu.Unlock()
	c.svc.publish()
	if sess != nil {
		go sess.Close() // a stdio server may take a moment to exit
	}
}

func localNames(ts []remoteTool) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.def.Name
	}
	return out
}
