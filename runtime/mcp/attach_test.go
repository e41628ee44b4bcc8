package mcp_test

import (
	"context"
	"testing"

	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/runtime/mcp"
	"github.com/nagent/nagent/runtime/tools"
)

// TestAttach: a site attached at run time (an editor's MCP server in an ACP
// session) publishes its tools next to the configured sites, cannot take a
// configured site's name, and leaves with Detach.
func TestAttach(t *testing.T) {
	svc, ts := MustStart(t, stdioSite(t, "everything"))
	ctx := context.Background()

	editor := stdioSite(t, "editor")
	editor.Enabled = false // Attach enables it
	st, err := svc.Attach(ctx, editor)
	if err != nil {
		t.Fatal(err)
	}
	if st.Health != mcp.HealthHealthy || st.Source != mcp.SourceAttached {
		t.Fatalf("attached status = %+v", st)
	}
	if res := call(ts, "mcp_editor_echo", `{"message":"from the editor"}`); res.Status != tools.StatusSuccess || res.Content != "Echo: from the editor" {
		t.Errorf("mcp_editor_echo = %+v", res)
	}
	if _, ok := ts.Lookup("mcp_everything_echo"); !ok {
		t.Error("the configured site's tools left when a site was attached")
	}

	if _, err := svc.Attach(ctx, stdioSite(t, "everything")); errs.Code(err) != errs.ECONFLICT {
		t.Errorf("attaching a configured site's name: err = %v, want ECONFLICT", err)
	}
	if _, err := svc.Attach(ctx, editor); errs.Code(err) != errs.ECONFLICT {
		t.Errorf("attaching a name twice: err = %v, want ECONFLICT", err)
	}
	// A reload (mcp add/remove reaching a live server) keeps attached sites.
	if err := svc.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := ts.Lookup("mcp_editor_echo"); !ok {
		t.Error("Reload dropped the attached site")
	}

	if err := svc.Detach(ctx, "editor"); err != nil {
		t.Fatal(err)
	}
	if _, ok := ts.Lookup("mcp_editor_echo"); ok {
		t.Error("mcp_editor_echo still registered after Detach")
	}
	if _, ok := svc.SiteStatus("editor"); ok {
		t.Error("the detached site still has a status")
	}
	if err := svc.Detach(ctx, "editor"); err != nil {
		t.Errorf("detaching twice: %v", err)
	}
}
