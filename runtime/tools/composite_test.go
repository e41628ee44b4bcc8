package tools_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/nagent/nagent/runtime/tools"
)

// reply returns an executor answering every call with content.
func reply(content string) tools.Executor {
	return tools.ExecutorFunc(func(context.Context, tools.ToolCallRequest, tools.ExecutionContext) (string, error) {
		return content, nil
	})
}

var compositeTests = []struct {
	name     string
	routes   map[string]string // tool → reply of its executor
	unroute  []string
	fallback string // reply of the fallback; "" means no fallback
	call     string
	want     string
	wantErr  string
}{
	{name: "Routed", routes: map[string]string{"a": "from a", "b": "from b"}, call: "b", want: "from b"},
	{name: "RoutedWinsOverFallback", routes: map[string]string{"a": "from a"}, fallback: "from mcp", call: "a", want: "from a"},
	{name: "UnroutedGoesToFallback", routes: map[string]string{"a": "from a"}, fallback: "from mcp", call: "z", want: "from mcp"},
	{name: "UnroutedNoFallback", routes: map[string]string{"a": "from a"}, call: "z", wantErr: "no executor for tool z"},
	{name: "UnrouteFallsBack", routes: map[string]string{"a": "from a"}, unroute: []string{"a"}, fallback: "from mcp", call: "a", want: "from mcp"},
	{name: "UnrouteNoFallback", routes: map[string]string{"a": "from a"}, unroute: []string{"a"}, call: "a", wantErr: "no executor for tool a"},
	{name: "UnrouteUnknownIsNoop", routes: map[string]string{"a": "from a"}, unroute: []string{"zz"}, call: "a", want: "from a"},
	{name: "Empty", call: "a", wantErr: "no executor for tool a"},
}

func TestCompositeToolExecutor(t *testing.T) {
	for _, tt := range compositeTests {
		t.Run(tt.name, func(t *testing.T) {
			var fallback tools.Executor
			if tt.fallback != "" {
				fallback = reply(tt.fallback)
			}
			c := tools.NewCompositeToolExecutor(fallback)
			for name, content := range tt.routes {
				c.Route(name, reply(content))
			}
			for _, name := range tt.unroute {
				c.Unroute(name)
			}
			got, err := c.Execute(context.Background(), tools.ToolCallRequest{ID: "call_1", Name: tt.call}, tools.ExecutionContext{})
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if !errors.Is(err, tools.ErrNoExecutor) {
					t.Errorf("errors.Is(err, ErrNoExecutor) = false for %v", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Execute = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestCompositeToolExecutor_ZeroValue(t *testing.T) {
	var c tools.CompositeToolExecutor
	c.Route("a", reply("A"))
	if got, err := c.Execute(context.Background(), tools.ToolCallRequest{Name: "a"}, tools.ExecutionContext{}); err != nil || got != "A" {
		t.Fatalf("Execute = %q, %v", got, err)
	}
}

func TestCompositeToolExecutor_RouteReplacesAndNilUnroutes(t *testing.T) {
	c := tools.NewCompositeToolExecutor(reply("fallback"))
	ctx := context.Background()
	call := tools.ToolCallRequest{Name: "a"}
	c.Route("a", reply("one"))
	c.Route("a", reply("two"))
	if got, _ := c.Execute(ctx, call, tools.ExecutionContext{}); got != "two" {
		t.Errorf("after replace: got %q, want %q", got, "two")
	}
	c.Route("a", nil)
	if got, _ := c.Execute(ctx, call, tools.ExecutionContext{}); got != "fallback" {
		t.Errorf("after Route(nil): got %q, want %q", got, "fallback")
	}
}

func TestCompositeToolExecutor_PassesCallAndContext(t *testing.T) {
	type key struct{}
	var c tools.CompositeToolExecutor
	c.Route("a", tools.ExecutorFunc(func(ctx context.Context, call tools.ToolCallRequest, ec tools.ExecutionContext) (string, error) {
		return fmt.Sprintf("%v %s %s %s", ctx.Value(key{}), call.ID, call.Arguments, ec.SessionID), nil
	}))
	ctx := context.WithValue(context.Background(), key{}, "v")
	got, err := c.Execute(ctx, tools.ToolCallRequest{ID: "call_1", Name: "a", Arguments: `{"x":1}`}, tools.ExecutionContext{SessionID: "s1"})
	if want := `v call_1 {"x":1} s1`; err != nil || got != want {
		t.Fatalf("Execute = %q, %v; want %q", got, err, want)
	}
}

func TestCompositeToolExecutor_Concurrent(t *testing.T) {
	c := tools.NewCompositeToolExecutor(reply("fallback"))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			name := fmt.Sprintf("t%d", i%2)
			for range 200 {
				c.Route(name, reply(name))
				got, err := c.Execute(context.Background(), tools.ToolCallRequest{Name: name}, tools.ExecutionContext{})
				if err != nil || (got != name && got != "fallback") {
					t.Errorf("Execute(%s) = %q, %v", name, got, err)
					return
				}
				c.Unroute(name)
			}
		})
	}
	wg.Wait()
}
