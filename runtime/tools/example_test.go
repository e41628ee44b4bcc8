package tools_test

import (
	"context"
	"fmt"
	"time"

	"github.com/nagent/nagent/runtime/tools"
)

// A model's call to get_current_time, the tool of the design's example
// conversation, taken through the common path.
func ExampleToolService_Execute() {
	now := func() time.Time { return time.Date(2026, 6, 27, 15, 52, 6, 344631000, time.UTC) }
	s := tools.NewToolService(tools.RiskPolicy{}, tools.Options{Now: now})
	if err := s.Register(tools.CurrentTimeTool(now)); err != nil {
		panic(err)
	}
	ec := tools.ExecutionContext{SessionID: "s1", AgentContext: tools.AgentPrimary}

	res := s.Execute(context.Background(), tools.ToolCallRequest{ID: "call_u8us", Name: "get_current_time", Arguments: `{}`}, ec)
	fmt.Println(res.Status, res.Content)

	res = s.Execute(context.Background(), tools.ToolCallRequest{ID: "call_2", Name: "get_current_time", Arguments: `{"timezone": 8}`}, ec)
	fmt.Println(res.Status, res.Content)
	// Output:
	// success {"now":"2026-06-27T15:52:06.344631+00:00"}
	// error invalid arguments for get_current_time: 1 schema violation:
	// - at /timezone: got number, want string
	// send a JSON object that matches the tool's parameters schema
}
