package core_test

import (
	"testing"

	"github.com/nagent/nagent/runtime/core"
	"github.com/nagent/nagent/runtime/llm"
)

// TestModelOverride: a turn's Params.Model (the terminal UI's model picker)
// replaces the configured model for that request only.
func TestModelOverride(t *testing.T) {
	ac := &core.AgentCore{Model: "configured"}
	if got := ac.BuildRequest(&core.Frame{}).Model; got != "configured" {
		t.Errorf("model = %q, want the configured one", got)
	}
	if got := ac.BuildRequest(&core.Frame{Params: llm.GenerationParams{Model: "picked"}}).Model; got != "picked" {
		t.Errorf("model = %q, want the picked one", got)
	}
}
