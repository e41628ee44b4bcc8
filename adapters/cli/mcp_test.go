package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nagent/nagent/adapters/cli"
	"github.com/nagent/nagent/internal/mcptest"
)

func runMCP(tb testing.TB, args ...string) (code int, stdout, stderr string) {
	tb.Helper()
	var out, errOut bytes.Buffer
	code = cli.MCP(context.Background(), args, cli.IO{In: strings.NewReader(""), Out: &out, Err: &errOut})
	return code, out.String(), errOut.String()
}

// TestMCPCommand: add (with a probe of the reference server), list without
// secrets, probe, remove.
func TestMCPCommand(t *testing.T) {
	home(t)
	bin := mcptest.Everything(t)
	if code, out, errOut := runMCP(t, "add", "everything", "--env", "TOKEN=s3cret", "--", bin, "stdio"); code != 0 || !strings.Contains(out, "offers 13 tools") {
		t.Fatalf("add = %d %q %q", code, out, errOut)
	}
	if code, _, errOut := runMCP(t, "add", "down", "--url", "http://127.0.0.1:1/mcp"); code != 1 || !strings.Contains(errOut, "did not answer") {
		t.Errorf("add of a dead server = %d %q, want a clear error", code, errOut)
	}
	if code, _, errOut := runMCP(t, "add", "Bad_Name", "--url", "http://x/mcp"); code != 1 || !strings.Contains(errOut, "must match") {
		t.Errorf("add with a bad name = %d %q", code, errOut)
	}
	code, out, _ := runMCP(t, "list", "--json")
	if code != 0 || strings.Contains(out, "s3cret") {
		t.Fatalf("list = %d %s (must not show the env value)", code, out)
	}
	var list struct {
		Sites []struct {
			Name    string   `json:"name"`
			EnvKeys []string `json:"env_keys"`
		} `json:"sites"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list.Sites) != 1 || list.Sites[0].EnvKeys[0] != "TOKEN" {
		t.Errorf("list = %s, %v", out, err)
	}
	if code, out, errOut := runMCP(t, "probe", "everything"); code != 0 || !strings.Contains(out, "mcp_everything_echo") {
		t.Errorf("probe = %d %q %q", code, out, errOut)
	}
	if code, _, _ := runMCP(t, "remove", "everything"); code != 0 {
		t.Errorf("remove = %d", code)
	}
	if code, _, errOut := runMCP(t, "probe", "everything"); code != 1 || !strings.Contains(errOut, "no MCP site everything") {
		t.Errorf("probe after remove = %d %q", code, errOut)
	}
}
