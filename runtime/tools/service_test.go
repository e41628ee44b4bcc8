package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/tools"
)

// policyFunc adapts a function to tools.Policy.
type policyFunc func(ctx context.Context, in tools.PolicyInput) (tools.Decision, error)

func (f policyFunc) Decide(ctx context.Context, in tools.PolicyInput) (tools.Decision, error) {
	return f(ctx, in)
}

// allowAll allows every tool at every phase.
var allowAll = policyFunc(func(context.Context, tools.PolicyInput) (tools.Decision, error) {
	return tools.Decision{Allow: true}, nil
})

// tool returns a valid definition named name of the given source.
func tool(name string, source tools.SourceType) tools.ToolDefinition {
	return tools.ToolDefinition{Name: name, Description: "the " + name + " tool", SourceType: source}
}

// MustRegister registers def with exec, failing tb on error.
func MustRegister(tb testing.TB, s *tools.ToolService, def tools.ToolDefinition, exec tools.Executor) {
	tb.Helper()
	if err := s.Register(def, exec); err != nil {
		tb.Fatalf("Register(%s): %v", def.Name, err)
	}
}

// MustSetSlot sets a slot, failing tb on error.
func MustSetSlot(tb testing.TB, s *tools.ToolService, source tools.SourceType, exec tools.Executor, names ...string) {
	tb.Helper()
	defs := make([]tools.ToolDefinition, len(names))
	for i, name := range names {
		defs[i] = tool(name, source)
	}
	if err := s.SetSlot(source, defs, exec); err != nil {
		tb.Fatalf("SetSlot(%s): %v", source, err)
	}
}

// names lists the names of defs.
func names(defs []tools.ToolDefinition) []string {
	out := make([]string, len(defs))
	for i, d := range defs {
		out[i] = d.Name
	}
	return out
}

// exposed lists the names Definitions returns for ec.
func exposed(s *tools.ToolService, ec tools.ExecutionContext) []string {
	return names(s.Definitions(context.Background(), ec))
}

var registerTests = []struct {
	name    string
	def     tools.ToolDefinition
	wantErr string // substring; "" means success
}{
	{name: "OK", def: tools.ToolDefinition{Name: "get_weather-2", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}},
	{name: "NameMax64", def: tools.ToolDefinition{Name: strings.Repeat("a", 64)}},
	{name: "ErrNameEmpty", def: tools.ToolDefinition{}, wantErr: `invalid tool definition: name "" must match ^[a-zA-Z0-9_-]{1,64}$`},
	{name: "ErrNameTooLong", def: tools.ToolDefinition{Name: strings.Repeat("a", 65)}, wantErr: "must match"},
	{name: "ErrNameSpace", def: tools.ToolDefinition{Name: "get time"}, wantErr: `name "get time" must match`},
	{name: "ErrNameDot", def: tools.ToolDefinition{Name: "mcp.search"}, wantErr: "must match"},
	{name: "ErrNameUnicode", def: tools.ToolDefinition{Name: "время"}, wantErr: "must match"},
	{name: "ErrParamsNotJSON", def: tools.ToolDefinition{Name: "t", Parameters: json.RawMessage(`{`)}, wantErr: "tool t: parameters: not valid JSON"},
	{name: "ErrParamsArray", def: tools.ToolDefinition{Name: "t", Parameters: json.RawMessage(`[]`)}, wantErr: "parameters: got array, want a JSON Schema object"},
	{name: "ErrParamsNotObjectType", def: tools.ToolDefinition{Name: "t", Parameters: json.RawMessage(`{"type":"string"}`)}, wantErr: `parameters: top-level "type" must be "object"`},
	{name: "ErrParamsNoType", def: tools.ToolDefinition{Name: "t", Parameters: json.RawMessage(`{"properties":{}}`)}, wantErr: `top-level "type" must be "object"`},
	{name: "ErrParamsBadSchema", def: tools.ToolDefinition{Name: "t", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"strin"}}}`)},
		wantErr: "parameters: not a valid JSON Schema: at /properties/a/type: got string, want array; at /properties/a/type: value must be one of 'array'"},
	{name: "ErrParamsExternalRef", def: tools.ToolDefinition{Name: "t", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"file:///etc/passwd"}}}`)},
		wantErr: `external $ref "file:///etc/passwd" is not allowed`},
}

func TestToolService_Register(t *testing.T) {
	for _, tt := range registerTests {
		t.Run(tt.name, func(t *testing.T) {
			s := tools.NewToolService(allowAll, tools.Options{})
			err := s.Register(tt.def, reply("ok"))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Register: %v", err)
				}
				if _, ok := s.Lookup(tt.def.Name); !ok {
					t.Fatalf("Lookup(%s) after Register: not found", tt.def.Name)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
			if !strings.HasPrefix(err.Error(), "tools.Register: ") {
				t.Errorf("err = %q, want the operation first", err)
			}
			if !errors.Is(err, tools.ErrInvalidDefinition) {
				t.Errorf("errors.Is(err, ErrInvalidDefinition) = false for %v", err)
			}
			if _, ok := s.Lookup(tt.def.Name); ok {
				t.Errorf("Lookup(%s) found a rejected definition", tt.def.Name)
			}
		})
	}
}

func TestToolService_RegisterDefaults(t *testing.T) {
	s := tools.NewToolService(allowAll, tools.Options{})
	MustRegister(t, s, tools.ToolDefinition{Name: "ping", Description: "Ping."}, reply("pong"))
	def, ok := s.Lookup("ping")
	if !ok {
		t.Fatal("Lookup(ping): not found")
	}
	if got, want := string(def.Parameters), `{"type":"object","properties":{}}`; got != want {
		t.Errorf("Parameters = %s, want %s", got, want)
	}
	if def.SourceType != tools.SourceBuiltin {
		t.Errorf("SourceType = %q, want %q", def.SourceType, tools.SourceBuiltin)
	}
	if _, ok := s.Lookup("pong"); ok {
		t.Error("Lookup(pong) found a tool never registered")
	}
}

func TestToolService_RegisterDuplicate(t *testing.T) {
	s := tools.NewToolService(allowAll, tools.Options{})
	MustRegister(t, s, tool("ping", ""), reply("one"))
	err := s.Register(tool("ping", ""), reply("two"))
	want := "tools.Register: tool name already taken: ping is already registered as a static builtin tool"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
	if !errors.Is(err, tools.ErrToolExists) {
		t.Errorf("errors.Is(err, ErrToolExists) = false")
	}
	res := s.Execute(context.Background(), tools.ToolCallRequest{ID: "c", Name: "ping"}, tools.ExecutionContext{})
	if res.Content != "one" {
		t.Errorf("the first registration must stay: content = %q", res.Content)
	}
}

var slotErrorTests = []struct {
	name    string
	setup   func(tb testing.TB, s *tools.ToolService)
	source  tools.SourceType
	defs    []tools.ToolDefinition
	wantErr string
	wantIs  error
}{
	{
		name:    "ClashWithStatic",
		setup:   func(tb testing.TB, s *tools.ToolService) { MustRegister(tb, s, tool("search", ""), reply("builtin")) },
		source:  tools.SourceKnowledge,
		defs:    []tools.ToolDefinition{tool("kb_a", ""), tool("search", "")},
		wantErr: "tools.SetSlot knowledge: tool name already taken: search from slot knowledge is already registered as a static builtin tool",
		wantIs:  tools.ErrToolExists,
	},
	{
		name:    "ClashWithOtherSlot",
		setup:   func(tb testing.TB, s *tools.ToolService) { MustSetSlot(tb, s, tools.SourceMCP, reply("mcp"), "search") },
		source:  tools.SourcePlugin,
		defs:    []tools.ToolDefinition{tool("search", "")},
		wantErr: "tools.SetSlot plugin: tool name already taken: search from slot plugin is already registered as a tool of slot mcp",
		wantIs:  tools.ErrToolExists,
	},
	{
		name:    "DuplicateInSlot",
		source:  tools.SourceMCP,
		defs:    []tools.ToolDefinition{tool("a", ""), tool("a", "")},
		wantErr: "tools.SetSlot mcp: tool name already taken: a appears twice in the slot",
		wantIs:  tools.ErrToolExists,
	},
	{
		name:    "BuiltinIsNotASlot",
		source:  tools.SourceBuiltin,
		defs:    []tools.ToolDefinition{tool("a", "")},
		wantErr: `tools.SetSlot builtin: invalid tool definition: "builtin" is not a dynamic source`,
		wantIs:  tools.ErrInvalidDefinition,
	},
	{
		name:    "UnknownSource",
		source:  "cloud",
		wantErr: `tools.SetSlot cloud: invalid tool definition: "cloud" is not a dynamic source`,
		wantIs:  tools.ErrInvalidDefinition,
	},
	{
		name:    "SourceMismatch",
		source:  tools.SourceMCP,
		defs:    []tools.ToolDefinition{tool("a", tools.SourcePlugin)},
		wantErr: "tools.SetSlot mcp: invalid tool definition: tool a has source_type plugin",
		wantIs:  tools.ErrInvalidDefinition,
	},
	{
		name:    "InvalidDefinition",
		source:  tools.SourceMCP,
		defs:    []tools.ToolDefinition{tool("ok", ""), tool("bad name", "")},
		wantErr: `tools.SetSlot mcp: invalid tool definition: name "bad name" must match`,
		wantIs:  tools.ErrInvalidDefinition,
	},
}

func TestToolService_SetSlotErrors(t *testing.T) {
	for _, tt := range slotErrorTests {
		t.Run(tt.name, func(t *testing.T) {
			s := tools.NewToolService(allowAll, tools.Options{})
			if tt.setup != nil {
				tt.setup(t, s)
			}
			// What the target slot held before must survive the failed SetSlot.
			if tt.source == tools.SourceKnowledge || tt.source == tools.SourcePlugin || tt.source == tools.SourceMCP {
				MustSetSlot(t, s, tt.source, reply("old"), "old_tool")
			}
			before := exposed(s, tools.ExecutionContext{})

			err := s.SetSlot(tt.source, tt.defs, reply("new"))
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want prefix %q", err, tt.wantErr)
			}
			if !errors.Is(err, tt.wantIs) {
				t.Errorf("errors.Is(err, %v) = false for %v", tt.wantIs, err)
			}
			if after := exposed(s, tools.ExecutionContext{}); !slices.Equal(after, before) {
				t.Errorf("a failed SetSlot changed the tools: %v, was %v", after, before)
			}
		})
	}
}

func TestToolService_RegisterClashWithSlot(t *testing.T) {
	s := tools.NewToolService(allowAll, tools.Options{})
	MustSetSlot(t, s, tools.SourceMCP, reply("mcp"), "search")
	err := s.Register(tool("search", ""), reply("builtin"))
	want := "tools.Register: tool name already taken: search is already registered as a tool of slot mcp"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

func TestToolService_SetSlotReplaceAndClear(t *testing.T) {
	ctx := context.Background()
	ec := tools.ExecutionContext{}
	s := tools.NewToolService(allowAll, tools.Options{})
	MustRegister(t, s, tool("ping", ""), reply("pong"))
	MustSetSlot(t, s, tools.SourceMCP, reply("v1"), "site_a", "site_b")

	if got := s.Execute(ctx, tools.ToolCallRequest{ID: "1", Name: "site_a"}, ec); got.Content != "v1" {
		t.Fatalf("site_a before replace = %+v", got)
	}
	if def, _ := s.Lookup("site_a"); def.SourceType != tools.SourceMCP {
		t.Errorf("empty SourceType in a slot = %q, want mcp", def.SourceType)
	}

	// Replace: site_a is dropped, site_b is kept and rerouted, site_c is new.
	MustSetSlot(t, s, tools.SourceMCP, reply("v2"), "site_b", "site_c")
	if _, ok := s.Lookup("site_a"); ok {
		t.Error("site_a still registered after the slot was replaced")
	}
	if got := s.Execute(ctx, tools.ToolCallRequest{ID: "2", Name: "site_a"}, ec); got.Status != tools.StatusError {
		t.Errorf("site_a after replace: status %q, want error", got.Status)
	}
	for _, name := range []string{"site_b", "site_c"} {
		if got := s.Execute(ctx, tools.ToolCallRequest{ID: "3", Name: name}, ec); got.Content != "v2" {
			t.Errorf("%s after replace = %+v, want content v2", name, got)
		}
	}
	if got, want := exposed(s, ec), []string{"ping", "site_b", "site_c"}; !slices.Equal(got, want) {
		t.Errorf("Definitions = %v, want %v", got, want)
	}

	// Names freed by a replace can be taken by another slot.
	MustSetSlot(t, s, tools.SourcePlugin, reply("plugin"), "site_a")

	s.ClearSlot(tools.SourceMCP)
	if got, want := exposed(s, ec), []string{"ping", "site_a"}; !slices.Equal(got, want) {
		t.Errorf("Definitions after ClearSlot = %v, want %v", got, want)
	}
	if got := s.Execute(ctx, tools.ToolCallRequest{ID: "4", Name: "site_b"}, ec); got.Status != tools.StatusError || !strings.HasPrefix(got.Content, `tool "site_b" does not exist`) {
		t.Errorf("site_b after ClearSlot = %+v", got)
	}

	// An empty slot is the same as a cleared one.
	MustSetSlot(t, s, tools.SourcePlugin, reply("plugin"))
	if got, want := exposed(s, ec), []string{"ping"}; !slices.Equal(got, want) {
		t.Errorf("Definitions after empty SetSlot = %v, want %v", got, want)
	}
	s.ClearSlot(tools.SourceSkill) // clearing an empty slot is a no-op
}

func TestToolService_SlotWithoutExecutorUsesFallback(t *testing.T) {
	for _, tt := range []struct {
		name     string
		fallback tools.Executor
		want     tools.ToolResult
	}{
		{"Fallback", reply("from mcp"), tools.ToolResult{Status: tools.StatusSuccess, Content: "from mcp"}},
		{"NoFallback", nil, tools.ToolResult{Status: tools.StatusError, Content: "remote failed: no executor for tool remote", Error: "no executor for tool remote"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := tools.NewToolService(allowAll, tools.Options{Fallback: tt.fallback, Now: func() time.Time { return fixedNow }})
			MustSetSlot(t, s, tools.SourceMCP, nil, "remote")
			got := s.Execute(context.Background(), tools.ToolCallRequest{ID: "c1", Name: "remote"}, tools.ExecutionContext{})
			tt.want.ToolCallID, tt.want.ToolName = "c1", "remote"
			if got != tt.want {
				t.Errorf("Execute = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestToolService_DefinitionsOrder(t *testing.T) {
	s := tools.NewToolService(allowAll, tools.Options{})
	// Registered out of the fixed slot order on purpose.
	MustSetSlot(t, s, tools.SourceAgent, reply(""), "delegate")
	MustSetSlot(t, s, tools.SourcePlugin, reply(""), "plug_z", "plug_a")
	MustRegister(t, s, tool("zeta", ""), reply(""))
	MustSetSlot(t, s, tools.SourceMCP, reply(""), "mcp_m", "mcp_b")
	MustRegister(t, s, tool("alpha", ""), reply(""))
	MustSetSlot(t, s, tools.SourceKnowledge, reply(""), "search_knowledge")
	MustSetSlot(t, s, tools.SourceSkill, reply(""), "skills_list", "skill_view")

	want := []string{"zeta", "alpha", "skills_list", "skill_view", "search_knowledge", "mcp_m", "mcp_b", "plug_z", "plug_a", "delegate"}
	first := s.Definitions(context.Background(), tools.ExecutionContext{})
	if got := names(first); !slices.Equal(got, want) {
		t.Fatalf("Definitions = %v, want %v", got, want)
	}
	for i := range 20 {
		again := s.Definitions(context.Background(), tools.ExecutionContext{})
		a, _ := json.Marshal(first)
		b, _ := json.Marshal(again)
		if string(a) != string(b) {
			t.Fatalf("call %d: Definitions changed between calls:\n%s\n%s", i, a, b)
		}
	}

	// Replacing a slot keeps its place.
	MustSetSlot(t, s, tools.SourceMCP, reply(""), "mcp_new")
	want = []string{"zeta", "alpha", "skills_list", "skill_view", "search_knowledge", "mcp_new", "plug_z", "plug_a", "delegate"}
	if got := exposed(s, tools.ExecutionContext{}); !slices.Equal(got, want) {
		t.Fatalf("after replace: Definitions = %v, want %v", got, want)
	}
}

func TestToolService_DefinitionsExposure(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	policy := policyFunc(func(_ context.Context, in tools.PolicyInput) (tools.Decision, error) {
		mu.Lock()
		asked = append(asked, in.Tool.Name)
		mu.Unlock()
		if in.Phase != tools.PhaseExpose {
			return tools.Decision{}, fmt.Errorf("phase %q, want expose", in.Phase)
		}
		if in.Exec.SessionID != "s1" {
			return tools.Decision{}, fmt.Errorf("session %q, want s1", in.Exec.SessionID)
		}
		switch in.Tool.Name {
		case "denied":
			return tools.Decision{Reasons: []string{"no"}}, nil
		case "confirm":
			return tools.Decision{Allow: true, Confirm: true}, nil
		case "confirm_denied":
			return tools.Decision{Confirm: true}, nil
		case "broken":
			return tools.Decision{Allow: true}, errors.New("rego exploded")
		}
		return tools.Decision{Allow: true}, nil
	})
	s := tools.NewToolService(policy, tools.Options{Logger: slog.New(slog.DiscardHandler)})
	for _, name := range []string{"allowed", "denied", "confirm", "confirm_denied", "broken"} {
		MustRegister(t, s, tool(name, ""), reply(""))
	}
	disabled := tool("disabled", "")
	disabled.Disabled = true
	MustRegister(t, s, disabled, reply(""))
	MustSetSlot(t, s, tools.SourceMCP, reply(""), "remote")

	got := exposed(s, tools.ExecutionContext{SessionID: "s1"})
	if want := []string{"allowed", "confirm", "remote"}; !slices.Equal(got, want) {
		t.Errorf("Definitions = %v, want %v", got, want)
	}
	if slices.Contains(asked, "disabled") {
		t.Error("the policy was asked about a disabled tool")
	}
}

func TestToolService_Concurrent(t *testing.T) {
	s := tools.NewToolService(allowAll, tools.Options{})
	def, exec := tools.CurrentTimeTool(nil)
	MustRegister(t, s, def, exec)
	ctx := context.Background()
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 100 {
			MustSetSlot(t, s, tools.SourceMCP, reply("mcp"), fmt.Sprintf("remote_%d", i%3), "remote")
			if i%10 == 0 {
				s.ClearSlot(tools.SourceMCP)
			}
		}
	})
	for range 4 {
		wg.Go(func() {
			for range 100 {
				if res := s.Execute(ctx, tools.ToolCallRequest{ID: "t", Name: "get_current_time"}, tools.ExecutionContext{}); res.Status != tools.StatusSuccess {
					t.Errorf("get_current_time = %+v", res)
					return
				}
				res := s.Execute(ctx, tools.ToolCallRequest{ID: "r", Name: "remote"}, tools.ExecutionContext{})
				if res.Status != tools.StatusSuccess && res.Status != tools.StatusError {
					t.Errorf("remote = %+v", res)
					return
				}
				_ = s.Definitions(ctx, tools.ExecutionContext{})
				_, _ = s.Lookup("remote")
			}
		})
	}
	wg.Wait()
}

// stepClock returns a clock starting at start that moves step forward on
// each reading.
func stepClock(start time.Time, step time.Duration) func() time.Time {
	var mu sync.Mutex
	t := start
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now := t
		t = t.Add(step)
		return now
	}
}
