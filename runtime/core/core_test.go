package core_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/nagent/nagent/runtime/core"
	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/tools"
)

// frameCase is one file of testdata/frames: a session state and the
// provider request it must produce.
type frameCase struct {
	Source      string    `yaml:"source"`
	History     []yamlMsg `yaml:"history"`
	Retrieved   string    `yaml:"retrieved"`
	Tools       []string  `yaml:"tools"`
	ClientTools []string  `yaml:"client_tools"`
	Params      struct {
		Temperature *float64 `yaml:"temperature"`
	} `yaml:"params"`
	ToolChoice string `yaml:"tool_choice"`
	Want       struct {
		Roles            []string `yaml:"roles"`
		Tools            []string `yaml:"tools"`
		LastContent      string   `yaml:"last_content"`
		HistoryUnchanged bool     `yaml:"history_unchanged"`
		Temperature      *float64 `yaml:"temperature"`
		MaxTokens        *int     `yaml:"max_tokens"`
		ToolChoice       string   `yaml:"tool_choice"`
	} `yaml:"want"`
}

type yamlMsg struct {
	Role       string `yaml:"role"`
	Content    string `yaml:"content"`
	ToolCallID string `yaml:"tool_call_id"`
	Name       string `yaml:"name"`
	ToolCalls  []struct {
		ID       string `yaml:"id"`
		Function struct {
			Name      string `yaml:"name"`
			Arguments string `yaml:"arguments"`
		} `yaml:"function"`
	} `yaml:"tool_calls"`
}

func TestFrames(t *testing.T) {
	files, _ := filepath.Glob("testdata/frames/*.yaml")
	if len(files) == 0 {
		t.Fatal("no frame cases")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var c frameCase
			if err := yaml.Unmarshal(data, &c); err != nil {
				t.Fatal(err)
			}
			f := &core.Frame{System: core.SystemPrompt(c.Source, ""), Retrieved: c.Retrieved, ToolChoice: c.ToolChoice}
			f.Params.Temperature = c.Params.Temperature
			for _, m := range c.History {
				msg := llm.Message{Role: llm.Role(m.Role), Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name}
				for _, tc := range m.ToolCalls {
					msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
				}
				f.History = append(f.History, msg)
			}
			before := append([]llm.Message(nil), f.History...)
			for _, name := range c.Tools {
				f.Tools = append(f.Tools, tools.ToolDefinition{Name: name})
			}
			for _, name := range c.ClientTools {
				f.ExtraTools = append(f.ExtraTools, llm.ToolSpec{Name: name})
			}
			maxTokens := 256
			ac := &core.AgentCore{Model: "m", Params: llm.GenerationParams{MaxTokens: &maxTokens, Temperature: ptr(0.7)}}
			req := ac.BuildRequest(f)

			var roles, names []string
			for _, m := range req.Messages {
				roles = append(roles, string(m.Role))
			}
			for _, s := range req.Tools {
				names = append(names, s.Name)
				if len(s.Parameters) == 0 {
					t.Errorf("tool %s has no parameters schema", s.Name)
				}
			}
			if !reflect.DeepEqual(roles, c.Want.Roles) {
				t.Errorf("roles = %v, want %v", roles, c.Want.Roles)
			}
			if c.Want.Tools != nil && !reflect.DeepEqual(names, c.Want.Tools) {
				t.Errorf("tools = %v, want %v", names, c.Want.Tools)
			}
			if c.Want.LastContent != "" && req.Messages[len(req.Messages)-1].Content != c.Want.LastContent {
				t.Errorf("last content = %q, want %q", req.Messages[len(req.Messages)-1].Content, c.Want.LastContent)
			}
			if c.Want.HistoryUnchanged && !reflect.DeepEqual(before, f.History) {
				t.Error("building the request changed the stored history")
			}
			if c.Want.Temperature != nil && *req.Params.Temperature != *c.Want.Temperature {
				t.Errorf("temperature = %v", *req.Params.Temperature)
			}
			if c.Want.MaxTokens != nil && *req.Params.MaxTokens != *c.Want.MaxTokens {
				t.Errorf("max_tokens = %v", *req.Params.MaxTokens)
			}
			if req.ToolChoice != c.Want.ToolChoice {
				t.Errorf("tool_choice = %q", req.ToolChoice)
			}
			if req.Messages[0].Content != core.SystemPrompt(c.Source, "") {
				t.Error("system message is not the stable system prompt")
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

var scrubTests = []struct{ in, want string }{
	{"plain answer", "plain answer"},
	{"<memory-context>\nsecret recall\n</memory-context>\n\nThe answer.", "The answer."},
	{"Before <memory-context>x</memory-context> after", "Before after"},
	{"<memory-context>a</memory-context>one<memory-context>b</memory-context>two", "one two"},
}

func TestScrubMemoryContext(t *testing.T) {
	for _, tt := range scrubTests {
		if got := core.ScrubMemoryContext(tt.in); got != tt.want {
			t.Errorf("ScrubMemoryContext(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestNormaliseScrubsAndDerivesFinishReason(t *testing.T) {
	out := core.Normalise(&llm.Response{Content: "<memory-context>m</memory-context> hi", FinishReason: ""})
	if out.Message.Content != "hi" || out.FinishReason != "stop" {
		t.Errorf("normalised = %+v", out)
	}
	out = core.Normalise(&llm.Response{ToolCalls: []llm.ToolCall{{ID: "1", Name: "t"}}, FinishReason: "stop"})
	if out.FinishReason != "tool_calls" || len(out.Message.ToolCalls) != 1 {
		t.Errorf("normalised = %+v", out)
	}
}

func TestSystemPromptIsStable(t *testing.T) {
	a, b := core.SystemPrompt("cli", "snapshot"), core.SystemPrompt("cli", "snapshot")
	if a != b || !strings.Contains(a, "snapshot") || !strings.Contains(a, core.SafetyGuidance) {
		t.Error("system prompt is not deterministic or lacks its parts")
	}
}
