package mcp

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sort"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// ProtocolVersion is the MCP revision N-Agent asks for. Pinning it keeps
// mcp-go on the initialize handshake instead of probing server/discover
// first, which servers of this revision do not answer.
const ProtocolVersion = mcpgo.LATEST_LEGACY_PROTOCOL_VERSION // 2025-11-25

// ClientInfo names N-Agent to MCP servers.
var ClientInfo = mcpgo.Implementation{Name: "nagent", Version: "0.1"}

// Session is one live connection to a site, after initialize.
type Session struct {
	Site   Site
	Client *client.Client
	Server mcpgo.InitializeResult
	stop   context.CancelFunc
}

// Dial connects to s and runs the initialize handshake, bounded by the
// site's connect timeout. The connection lives until Close or until ctx
// ends (a stdio server is killed then). onNotify, if not nil, receives the
// server's notifications.
func Dial(ctx context.Context, s Site, log *slog.Logger, onNotify func(mcpgo.JSONRPCNotification)) (*Session, error) {
	if log == nil {
		log = slog.Default()
	}
	if err := ValidateSite(s); err != nil {
		return nil, err
	}
	connCtx, stop := context.WithCancel(ctx)
	tr, err := newTransport(s, log)
	if err != nil {
		stop()
		return nil, fmt.Errorf("mcp: site %s: %w", s.Name, err)
	}
	cl := client.NewClient(tr, client.WithProtocolVersion(ProtocolVersion))
	if onNotify != nil {
		cl.OnNotification(onNotify)
	}
	sess := &Session{Site: s, Client: cl, stop: stop}
	if err := cl.Start(connCtx); err != nil {
		sess.Close()
		return nil, fmt.Errorf("mcp: site %s: start %s: %w", s.Name, s.Transport, err)
	}
	ictx, cancel := context.WithTimeout(connCtx, connectTimeout(s))
	defer cancel()
	req := mcpgo.InitializeRequest{}
	req.Params.ProtocolVersion = ProtocolVersion
	req.Params.ClientInfo = ClientInfo
	res, err := cl.Initialize(ictx, req)
	if err != nil {
		sess.Close()
		return nil, fmt.Errorf("mcp: site %s: initialize: %w", s.Name, err)
	}
	sess.Server = *res
	return sess, nil
}

// ListTools runs tools/list (every page), bounded by the connect timeout.
func (s *Session) ListTools(ctx context.Context) ([]mcpgo.Tool, error) {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout(s.Site))
	defer cancel()
	res, err := s.Client.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		return nil, fmt.Errorf("mcp: site %s: tools/list: %w", s.Site.Name, err)
	}
	return res.Tools, nil
}

// Ping checks that the server still answers.
func (s *Session) Ping(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	//lint:ignore SA1019 N-Agent pins protocol 2025-11-25, where ping is the liveness check.
	if err := s.Client.Ping(ctx); err != nil {
		return fmt.Errorf("mcp: site %s: ping: %w", s.Site.Name, err)
	}
	return nil
}

// Close ends the connection; a stdio server's process group is killed if
// it does not exit when its stdin closes.
func (s *Session) Close() error {
	err := s.Client.Close()
	s.stop()
	return err
}

func newTransport(s Site, log *slog.Logger) (transport.Interface, error) {
	switch s.Transport {
	case TransportStdio:
		env := make([]string, 0, len(s.Env))
		for k, v := range s.Env {
			env = append(env, k+"="+v)
		}
		sort.Strings(env)
		return transport.NewStdioWithOptions(s.Command, env, s.Args,
			transport.WithCommandLogger(log),
			transport.WithCommandFunc(func(ctx context.Context, command string, env, args []string) (*exec.Cmd, error) {
				cmd := exec.CommandContext(ctx, command, args...)
				cmd.Env = append(os.Environ(), env...)
				ownProcessGroup(cmd)
				return cmd, nil
			})), nil
	case TransportStreamableHTTP:
		return transport.NewStreamableHTTP(s.URL,
			transport.WithHTTPHeaders(s.Headers),
			//lint:ignore SA1019 on 2025-11-25, list_changed arrives on the GET stream.
			transport.WithContinuousListening(),
			transport.WithHTTPLogger(log))
	case TransportSSE:
		return transport.NewSSE(s.URL, transport.WithHeaders(s.Headers), transport.WithSSELogger(log))
	}
	return nil, fmt.Errorf("unknown transport %q", s.Transport)
}
