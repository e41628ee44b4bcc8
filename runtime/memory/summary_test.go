package memory_test

import (
	"context"
	"strings"
	"testing"

	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/memory"
)

var summaryTests = []struct {
	name    string
	history []llm.Message
	want    string
}{
	{"Empty", nil, "previous"},
	{"UserOnly", []llm.Message{{Role: llm.RoleUser, Content: "hi"}}, "用户: hi | 助手: "},
	{"ToolRound", []llm.Message{
		{Role: llm.RoleUser, Content: "time?"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{Name: "get_current_time"}, {Name: "other"}}},
		{Role: llm.RoleTool, Content: "{}"},
	}, "用户: time? | 助手: 调用工具 get_current_time, other"},
	{"Final", []llm.Message{
		{Role: llm.RoleUser, Content: "old"}, {Role: llm.RoleAssistant, Content: "old answer"},
		{Role: llm.RoleUser, Content: "new\nquestion"}, {Role: llm.RoleAssistant, Content: "new answer"},
	}, "用户: new question | 助手: new answer"},
	{"Clipped", []llm.Message{{Role: llm.RoleUser, Content: strings.Repeat("长", 12)}}, "用户: " + strings.Repeat("长", 10) + "... | 助手: "},
}

func TestHeuristicSummarizer(t *testing.T) {
	for _, tt := range summaryTests {
		t.Run(tt.name, func(t *testing.T) {
			s := memory.HeuristicSummarizer{}
			if tt.name == "Clipped" {
				s.MaxRunes = 10
			}
			got, err := s.Summarize(context.Background(), "previous", tt.history)
			if err != nil || got != tt.want {
				t.Errorf("Summarize = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestHeuristicTitler(t *testing.T) {
	got, _ := memory.HeuristicTitler{}.Title(context.Background(), "  Plan a trip to Kyoto\nwith details")
	if got != "Plan a trip to Kyoto" {
		t.Errorf("Title = %q", got)
	}
}
