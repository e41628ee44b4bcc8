package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // zone names must resolve in minimal containers too
)

// CurrentTimeToolName is the name of the built-in clock tool.
const CurrentTimeToolName = "get_current_time"

// currentTimeLayout is RFC 3339 with up to microseconds and a numeric offset,
// +00:00 rather than Z: 2026-06-27T15:52:06.344631+00:00.
const currentTimeLayout = "2006-01-02T15:04:05.999999-07:00"

var currentTimeParameters = json.RawMessage(`{
	"type": "object",
	"properties": {
		"timezone": {
			"type": "string",
			"description": "IANA time zone name, such as \"Asia/Shanghai\" or \"UTC\". Defaults to UTC."
		}
	},
	"additionalProperties": false
}`)

// CurrentTimeTool returns the get_current_time builtin: it answers
// {"now":"2026-06-27T15:52:06.344631+00:00"} in the requested IANA zone
// (default UTC). A nil now means time.Now.
func CurrentTimeTool(now func() time.Time) (ToolDefinition, Executor) {
	if now == nil {
		now = time.Now
	}
	def := ToolDefinition{
		Name:        CurrentTimeToolName,
		Description: "Get the current date and time, in UTC or in a given IANA time zone.",
		Parameters:  currentTimeParameters,
		RiskLevel:   RiskSafe,
		SourceType:  SourceBuiltin,
	}
	var zones sync.Map // name → *time.Location; LoadLocation reads tzdata each time
	exec := ExecutorFunc(func(_ context.Context, call ToolCallRequest, _ ExecutionContext) (string, error) {
		var args struct {
			Timezone string `json:"timezone"`
		}
		if strings.TrimSpace(call.Arguments) != "" {
			if err := json.Unmarshal([]byte(call.Arguments), &args); err != nil {
				return "", fmt.Errorf("invalid arguments: %v", err)
			}
		}
		loc := time.UTC
		if args.Timezone != "" {
			if l, ok := zones.Load(args.Timezone); ok {
				loc = l.(*time.Location)
			} else {
				l, err := time.LoadLocation(args.Timezone)
				if err != nil {
					return "", fmt.Errorf("unknown timezone %q; use an IANA name such as \"Asia/Shanghai\" or \"UTC\"", args.Timezone)
				}
				zones.Store(args.Timezone, l)
				loc = l
			}
		}
		out, err := json.Marshal(struct {
			Now string `json:"now"`
		}{now().In(loc).Format(currentTimeLayout)})
		return string(out), err
	})
	return def, exec
}
