package tools_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/tools"
)

var currentTimeTests = []struct {
	name string
	now  time.Time
	args string
	want tools.ToolResult
}{
	{name: "DefaultUTC", now: fixedNow, args: `{}`,
		want: tools.ToolResult{Status: tools.StatusSuccess, Content: `{"now":"2026-06-27T15:52:06.344631+00:00"}`}},
	{name: "NoArguments", now: fixedNow, args: ``,
		want: tools.ToolResult{Status: tools.StatusSuccess, Content: `{"now":"2026-06-27T15:52:06.344631+00:00"}`}},
	{name: "ExplicitUTC", now: fixedNow, args: `{"timezone":"UTC"}`,
		want: tools.ToolResult{Status: tools.StatusSuccess, Content: `{"now":"2026-06-27T15:52:06.344631+00:00"}`}},
	{name: "ClockZoneIgnored", now: fixedNow.In(time.FixedZone("X", -5*3600)), args: `{}`,
		want: tools.ToolResult{Status: tools.StatusSuccess, Content: `{"now":"2026-06-27T15:52:06.344631+00:00"}`}},
	{name: "AsiaShanghai", now: fixedNow, args: `{"timezone":"Asia/Shanghai"}`,
		want: tools.ToolResult{Status: tools.StatusSuccess, Content: `{"now":"2026-06-27T23:52:06.344631+08:00"}`}},
	{name: "NegativeOffset", now: fixedNow, args: `{"timezone":"America/New_York"}`,
		want: tools.ToolResult{Status: tools.StatusSuccess, Content: `{"now":"2026-06-27T11:52:06.344631-04:00"}`}},
	{name: "HalfHourOffset", now: fixedNow, args: `{"timezone":"Asia/Kolkata"}`,
		want: tools.ToolResult{Status: tools.StatusSuccess, Content: `{"now":"2026-06-27T21:22:06.344631+05:30"}`}},
	{name: "WholeSecondDropsFraction", now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), args: `{}`,
		want: tools.ToolResult{Status: tools.StatusSuccess, Content: `{"now":"2026-01-01T00:00:00+00:00"}`}},
	{name: "NanosecondsCutToMicroseconds", now: time.Date(2026, 1, 1, 0, 0, 0, 123456789, time.UTC), args: `{}`,
		want: tools.ToolResult{Status: tools.StatusSuccess, Content: `{"now":"2026-01-01T00:00:00.123456+00:00"}`}},
	{name: "BadZone", now: fixedNow, args: `{"timezone":"Mars/Base"}`,
		want: tools.ToolResult{Status: tools.StatusError,
			Error:   `unknown timezone "Mars/Base"; use an IANA name such as "Asia/Shanghai" or "UTC"`,
			Content: `get_current_time failed: unknown timezone "Mars/Base"; use an IANA name such as "Asia/Shanghai" or "UTC"`}},
	{name: "PathIsNotAZone", now: fixedNow, args: `{"timezone":"../../etc/passwd"}`,
		want: tools.ToolResult{Status: tools.StatusError,
			Error:   `unknown timezone "../../etc/passwd"; use an IANA name such as "Asia/Shanghai" or "UTC"`,
			Content: `get_current_time failed: unknown timezone "../../etc/passwd"; use an IANA name such as "Asia/Shanghai" or "UTC"`}},
	{name: "BadType", now: fixedNow, args: `{"timezone":["UTC"]}`,
		want: tools.ToolResult{Status: tools.StatusError, Error: "invalid arguments: schema violations",
			Content: "invalid arguments for get_current_time: 1 schema violation:\n- at /timezone: got array, want string\n" + hint}},
}

func TestCurrentTimeTool(t *testing.T) {
	for _, tt := range currentTimeTests {
		t.Run(tt.name, func(t *testing.T) {
			clock := func() time.Time { return tt.now }
			s := tools.NewToolService(tools.RiskPolicy{}, tools.Options{Now: clock})
			def, exec := tools.CurrentTimeTool(clock)
			MustRegister(t, s, def, exec)
			call := tools.ToolCallRequest{ID: "call_u8usl364ddpffrw3q5758dk3", Name: "get_current_time", Arguments: tt.args}
			// Twice, so the second call of a zone goes through the cache.
			for range 2 {
				got := s.Execute(context.Background(), call, tools.ExecutionContext{AgentContext: tools.AgentPrimary})
				want := tt.want
				want.ToolCallID, want.ToolName = call.ID, call.Name
				if got != want {
					t.Fatalf("Execute =\n%#v\nwant\n%#v", got, want)
				}
			}
		})
	}
}

func TestCurrentTimeTool_Definition(t *testing.T) {
	def, _ := tools.CurrentTimeTool(nil)
	if def.Name != "get_current_time" || def.RiskLevel != tools.RiskSafe || def.SourceType != tools.SourceBuiltin || def.Managed || def.Description == "" {
		t.Errorf("definition = %+v", def)
	}
	var params struct {
		Type       string `json:"type"`
		Properties map[string]struct {
			Type        string `json:"type"`
			Description string `json:"description"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(def.Parameters, &params); err != nil {
		t.Fatalf("parameters: %v", err)
	}
	tz, ok := params.Properties["timezone"]
	if params.Type != "object" || !ok || tz.Type != "string" || tz.Description == "" || len(params.Required) != 0 {
		t.Errorf("parameters = %s", def.Parameters)
	}
}

func TestCurrentTimeTool_NilClockUsesNow(t *testing.T) {
	_, exec := tools.CurrentTimeTool(nil)
	before := time.Now().Add(-time.Second)
	out, err := exec.Execute(context.Background(), tools.ToolCallRequest{Name: "get_current_time"}, tools.ExecutionContext{})
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Now string }
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	now, err := time.Parse(time.RFC3339Nano, got.Now)
	if err != nil || now.Before(before) || now.After(time.Now().Add(time.Second)) {
		t.Errorf("now = %s (%v)", got.Now, err)
	}
}
