//go:build sdkcheck

package openai_test

import (
	"os"
	"os/exec"
	"testing"

	"github.com/nagent/nagent/runtime/config"
)

func TestSDKCheck(t *testing.T) {
	ts := MustServe(t, func(c *config.Config) { c.Agent.MaxIterations = 1 })
	cmd := exec.Command("node", "/tmp/sdkcheck/check.mjs")
	cmd.Env = append(os.Environ(), "BASE="+ts.URL, "SCRIPTED="+ts.model.RootURL())
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatal(err)
	}
}
