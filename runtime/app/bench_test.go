package app_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/nagent/nagent/runtime/app"
	"github.com/nagent/nagent/runtime/config"
	"github.com/nagent/nagent/runtime/llm"
)

// toolTurnProvider answers in process: a get_current_time call, then text,
// so a benchmark measures the runtime's own overhead, not HTTP.
type toolTurnProvider struct{ n atomic.Int64 }

func (p *toolTurnProvider) Chat(_ context.Context, req *llm.Request, _ llm.DeltaFunc) (*llm.Response, error) {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == llm.RoleUser {
		id := fmt.Sprintf("call_%d", p.n.Add(1))
		return &llm.Response{ToolCalls: []llm.ToolCall{{ID: id, Name: "get_current_time", Arguments: `{}`}}, FinishReason: "tool_calls"}, nil
	}
	return &llm.Response{Content: "It is 15:52 UTC.", FinishReason: "stop"}, nil
}

// BenchmarkToolTurn measures one tool-using turn (2 inferences, one tool
// call, every record written to SQLite on disk) with an in-process provider.
// Each iteration uses a new session, so history does not grow.
func BenchmarkToolTurn(b *testing.B) {
	cfg := config.Defaults()
	cfg.Home = b.TempDir()
	cfg.LLM.Model = "bench"
	a, err := app.New(context.Background(), &cfg, app.Options{Provider: &toolTurnProvider{}})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := a.Chat.Complete(ctx, userTurn(fmt.Sprintf("bench-%d", i), "what time is it?"))
		if err != nil || res.Status != "completed" || res.Iterations != 2 {
			b.Fatalf("turn = %+v, %v", res, err)
		}
	}
}
