package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/store"
)

func TestMCPSites(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	site := store.MCPSite{
		ID: "mcps_1", Name: "everything", Transport: store.MCPStdio, Command: "npx",
		Args: []string{"mcp-server-everything", "stdio"}, Env: map[string]string{"TOKEN": "secret"},
		Enabled: true, ConnectTimeout: 5 * time.Second, CallTimeout: 90 * time.Second,
	}
	if err := db.PutMCPSite(ctx, site); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"mcps_1", "everything"} {
		got, err := db.GetMCPSite(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if got.Command != "npx" || len(got.Args) != 2 || got.Env["TOKEN"] != "secret" || !got.Enabled ||
			got.ConnectTimeout != 5*time.Second || got.CallTimeout != 90*time.Second || got.Source != "store" {
			t.Errorf("GetMCPSite(%s) = %+v", key, got)
		}
	}
	t.Run("ErrNameTaken", func(t *testing.T) {
		dup := site
		dup.ID = "mcps_2"
		if err := db.PutMCPSite(ctx, dup); errs.Code(err) != errs.ECONFLICT {
			t.Errorf("PutMCPSite(same name) = %v, want ECONFLICT", err)
		}
	})
	site.Enabled = false
	if err := db.PutMCPSite(ctx, site); err != nil {
		t.Fatal(err)
	}
	list, err := db.ListMCPSites(ctx)
	if err != nil || len(list) != 1 || list[0].Enabled {
		t.Fatalf("ListMCPSites = %+v, %v", list, err)
	}
	if err := db.DeleteMCPSite(ctx, "everything"); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteMCPSite(ctx, "everything"); errs.Code(err) != errs.ENOTFOUND {
		t.Errorf("second DeleteMCPSite = %v, want ENOTFOUND", err)
	}
}
