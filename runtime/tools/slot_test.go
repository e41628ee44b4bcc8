package tools_test

import (
	"context"
	"sync"
	"testing"

	"github.com/nagent/nagent/runtime/tools"
)

// TestSetSlotKeepsStayingToolsRouted: a tool that stays in a slot across
// SetSlot is never without an executor, even for a call running meanwhile.
func TestSetSlotKeepsStayingToolsRouted(t *testing.T) {
	ts := tools.NewToolService(nil, tools.Options{})
	def := tools.ToolDefinition{Name: "stays", Description: "d", RiskLevel: tools.RiskSafe}
	ok := tools.ExecutorFunc(func(context.Context, tools.ToolCallRequest, tools.ExecutionContext) (string, error) { return "ok", nil })
	if err := ts.SetSlot(tools.SourcePlugin, []tools.ToolDefinition{def}, ok); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	defer func() { close(stop); wg.Wait() }()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := ts.SetSlot(tools.SourcePlugin, []tools.ToolDefinition{def}, ok); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 2000 {
		res := ts.Execute(context.Background(), tools.ToolCallRequest{ID: "c", Name: "stays"}, tools.ExecutionContext{})
		if res.Status != tools.StatusSuccess {
			t.Fatalf("call during SetSlot: %+v", res)
		}
	}
}
