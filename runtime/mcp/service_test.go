package mcp_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nagent/nagent/internal/mcptest"
	"github.com/nagent/nagent/runtime/mcp"
	"github.com/nagent/nagent/runtime/tools"
)

// allowAll lets every tool through, so these tests see the MCP side only.
type allowAll struct{}

func (allowAll) Decide(context.Context, tools.PolicyInput) (tools.Decision, error) {
	return tools.Decision{Allow: true}, nil
}

// MustStart starts a service over sites that publishes into a fresh
// ToolService, and closes it when the test ends.
func MustStart(tb testing.TB, sites ...mcp.Site) (*mcp.Service, *tools.ToolService) {
	tb.Helper()
	var svc *mcp.Service
	ts := tools.NewToolService(allowAll{}, tools.Options{Fallback: tools.ExecutorFunc(
		func(ctx context.Context, call tools.ToolCallRequest, ec tools.ExecutionContext) (string, error) {
			return svc.Executor().Execute(ctx, call, ec)
		})})
	svc = mcp.NewService(mcp.Options{
		Sites: sites, Slot: ts, HealthInterval: 200 * time.Millisecond,
		MinBackoff: 100 * time.Millisecond, MaxBackoff: 500 * time.Millisecond,
	})
	if err := svc.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { svc.Close() })
	return svc, ts
}

func stdioSite(tb testing.TB, name string) mcp.Site {
	return mcp.Site{ID: name, Name: name, Transport: mcp.TransportStdio, Command: mcptest.Everything(tb), Args: []string{"stdio"}, Enabled: true}
}

func call(ts *tools.ToolService, name, args string) tools.ToolResult {
	return ts.Execute(context.Background(), tools.ToolCallRequest{ID: "c1", Name: name, Arguments: args},
		tools.ExecutionContext{SessionID: "s", AgentContext: tools.AgentPrimary})
}

// callTests run against the reference server; each maps one kind of result.
var callTests = []struct {
	name, tool, args string
	status           tools.Status
	want             string // a substring of the content
}{
	{"Text", "mcp_everything_echo", `{"message":"hi there"}`, tools.StatusSuccess, "Echo: hi there"},
	{"Sum", "mcp_everything_get-sum", `{"a":2,"b":40}`, tools.StatusSuccess, "42"},
	{"Image", "mcp_everything_get-tiny-image", `{}`, tools.StatusSuccess, "[image image/png, "},
	{"EmbeddedResource", "mcp_everything_get-resource-reference", `{"resourceId":2}`, tools.StatusSuccess, "[resource demo://resource/dynamic/text/2 (text/plain)]\nResource 2: "},
	{"IsError", "mcp_everything_get-resource-reference", `{"resourceId":-1}`, tools.StatusError, "Invalid resourceId: -1"},
}

func TestStdioSite(t *testing.T) {
	svc, ts := MustStart(t, stdioSite(t, "everything"))
	st, _ := svc.SiteStatus("everything")
	if st.Health != mcp.HealthHealthy || st.ProtocolVersion != "2025-11-25" {
		t.Fatalf("status = %+v", st)
	}
	def, ok := ts.Lookup("mcp_everything_echo")
	if !ok {
		t.Fatalf("mcp_everything_echo not registered; tools %v", st.Tools)
	}
	if def.SourceType != tools.SourceMCP || def.RiskLevel != tools.RiskLow || !strings.Contains(def.Description, "Echo") ||
		!strings.Contains(string(def.Parameters), `"message"`) {
		t.Errorf("definition = %+v", def)
	}
	for _, tc := range callTests {
		t.Run(tc.name, func(t *testing.T) {
			res := call(ts, tc.tool, tc.args)
			if res.Status != tc.status || !strings.Contains(res.Content, tc.want) {
				t.Errorf("result = %s %q, want %s containing %q", res.Status, res.Content, tc.status, tc.want)
			}
		})
	}
}

// waitHealth polls until site reaches health.
func waitHealth(tb testing.TB, svc *mcp.Service, site, health string, within time.Duration) mcp.SiteStatus {
	tb.Helper()
	deadline := time.Now().Add(within)
	for {
		st, _ := svc.SiteStatus(site)
		if st.Health == health {
			return st
		}
		if time.Now().After(deadline) {
			tb.Fatalf("site %s is %s (%s), want %s", site, st.Health, st.Error, health)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestHTTPSiteDiesAndComesBack: over streamable HTTP, killing the server
// withdraws its tools and marks it unhealthy; a call then is an error
// result; after a restart on the same port the tools come back.
func TestHTTPSiteDiesAndComesBack(t *testing.T) {
	srv := mcptest.StartHTTP(t, 0)
	svc, ts := MustStart(t, mcp.Site{ID: "web", Name: "web", Transport: mcp.TransportStreamableHTTP, URL: srv.URL(), Enabled: true})
	waitHealth(t, svc, "web", mcp.HealthHealthy, time.Second)
	if res := call(ts, "mcp_web_echo", `{"message":"one"}`); res.Content != "Echo: one" {
		t.Fatalf("echo = %+v", res)
	}

	srv.Kill()
	st := waitHealth(t, svc, "web", mcp.HealthUnhealthy, 10*time.Second)
	if len(st.Tools) != 0 || st.Error == "" {
		t.Errorf("unhealthy status = %+v", st)
	}
	if _, ok := ts.Lookup("mcp_web_echo"); ok {
		t.Error("mcp_web_echo still registered while the site is down")
	}
	if res := call(ts, "mcp_web_echo", `{"message":"two"}`); res.Status != tools.StatusError {
		t.Errorf("call to a down site = %+v, want an error result", res)
	}

	srv.Start(t)
	waitHealth(t, svc, "web", mcp.HealthHealthy, 15*time.Second)
	if res := call(ts, "mcp_web_echo", `{"message":"three"}`); res.Content != "Echo: three" {
		t.Fatalf("echo after restart = %+v", res)
	}
}

func TestLocalName(t *testing.T) {
	for _, tc := range []struct{ site, remote, want string }{
		{"everything", "echo", "mcp_everything_echo"},
		{"everything", "get-sum", "mcp_everything_get-sum"},
		{"fs", "read file/v2", "mcp_fs_read_file_v2"},
		{"fs", strings.Repeat("x", 80), "mcp_fs_" + strings.Repeat("x", 48) + "_"},
	} {
		got := mcp.LocalName(tc.site, tc.remote)
		if !strings.HasPrefix(got, tc.want) || len(got) > 64 {
			t.Errorf("LocalName(%q, %q) = %q, want prefix %q and at most 64 bytes", tc.site, tc.remote, got, tc.want)
		}
	}
}

func TestValidateSite(t *testing.T) {
	bad := []mcp.Site{
		{Name: "has_underscore", Transport: mcp.TransportStdio, Command: "x"},
		{Name: "ok", Transport: "carrier-pigeon"},
		{Name: "ok", Transport: mcp.TransportStdio},
		{Name: "ok", Transport: mcp.TransportStreamableHTTP},
	}
	for _, s := range bad {
		if err := mcp.ValidateSite(s); err == nil {
			t.Errorf("ValidateSite(%+v) = nil, want an error", s)
		}
	}
}

// TestUnreachableSiteNeverFails: a site that cannot start is unhealthy and
// offers no tools; Start still succeeds.
func TestUnreachableSiteNeverFails(t *testing.T) {
	svc, ts := MustStart(t, mcp.Site{ID: "gone", Name: "gone", Transport: mcp.TransportStreamableHTTP,
		URL: "http://127.0.0.1:1/mcp", Enabled: true, ConnectTimeout: 2 * time.Second})
	st, _ := svc.SiteStatus("gone")
	if st.Health != mcp.HealthUnhealthy {
		t.Errorf("status = %+v", st)
	}
	if slices.ContainsFunc(ts.Definitions(context.Background(), tools.ExecutionContext{}), func(d tools.ToolDefinition) bool {
		return d.SourceType == tools.SourceMCP
	}) {
		t.Error("an unreachable site exposes tools")
	}
}

// TestStdioServerDiesAndIsRestarted: when a stdio server's process dies, the
// site turns unhealthy, its tools leave the slot, and the supervisor starts
// a new process whose tools come back.
func TestStdioServerDiesAndIsRestarted(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	site := mcp.Site{ID: "local", Name: "local", Transport: mcp.TransportStdio, Enabled: true,
		Command: "/bin/sh", Args: []string{"-c", `echo $$ > "$PID_FILE"; exec "$SERVER" stdio`},
		Env: map[string]string{"PID_FILE": pidFile, "SERVER": mcptest.Everything(t)}}
	svc, ts := MustStart(t, site)
	waitHealth(t, svc, "local", mcp.HealthHealthy, time.Second)
	pid := func() int {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return n
	}
	first := pid()
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Between the death and the new process (which takes a while to start),
	// the site must be seen unhealthy, without tools.
	sawDown := false
	deadline := time.Now().Add(15 * time.Second)
	for {
		st, _ := svc.SiteStatus("local")
		if st.Health == mcp.HealthUnhealthy {
			_, registered := ts.Lookup("mcp_local_echo")
			sawDown = sawDown || (!registered && len(st.Tools) == 0)
		}
		if st.Health == mcp.HealthHealthy && pid() != first {
			if !sawDown {
				t.Error("the site came back without being seen unhealthy and without tools")
			}
			break
		}
		if time.Now().After(deadline) {
			st, _ := svc.SiteStatus("local")
			t.Fatalf("site did not come back with a new process: %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if res := call(ts, "mcp_local_echo", `{"message":"again"}`); res.Content != "Echo: again" {
		t.Errorf("echo after the restart = %+v", res)
	}
}
