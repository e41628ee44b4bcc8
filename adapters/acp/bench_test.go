package acp_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nagent/nagent/adapters/acp"
	"github.com/nagent/nagent/internal/testbin"
	"github.com/nagent/nagent/runtime/llm/scripted"
)

// firstChunkClient counts agent_message_chunk updates.
type firstChunkClient struct {
	mu    sync.Mutex
	chunk chan struct{} // signalled on the first chunk of a prompt
	armed bool
}

func (c *firstChunkClient) HandleRequest(context.Context, string, json.RawMessage) (any, error) {
	return nil, &acp.Error{Code: acp.CodeMethodNotFound, Message: "not supported"}
}

func (c *firstChunkClient) HandleNotification(_ context.Context, method string, params json.RawMessage) {
	if method != "session/update" {
		return
	}
	var n struct {
		Update struct {
			SessionUpdate string `json:"sessionUpdate"`
		} `json:"update"`
	}
	json.Unmarshal(params, &n)
	c.mu.Lock()
	defer c.mu.Unlock()
	if n.Update.SessionUpdate == "agent_message_chunk" && c.armed {
		c.armed = false
		c.chunk <- struct{}{}
	}
}

// BenchmarkACPFirstChunk measures, through the real `nagent acp` binary and
// a scripted model, the time from writing session/prompt to reading the
// first agent_message_chunk. It reports the median and p90 over b.N
// prompts in one session:
//
//	go test ./adapters/acp -run '^$' -bench ACPFirstChunk -benchtime 50x
func BenchmarkACPFirstChunk(b *testing.B) {
	bin := testbin.Nagent(b)
	model := scripted.Start()
	defer model.Close()
	model.SetResponder(func(scripted.RecordedRequest) scripted.Reply {
		return scripted.Reply{Content: "pong, a short streamed answer", ChunkSize: 4}
	})
	home := b.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(e2eConfig), 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "acp")
	cmd.Env = append(os.Environ(), "NAGENT_HOME="+home, "NAGENT_LLM_BASE_URL="+model.URL(),
		"NAGENT_LLM_MODEL=nagent-test", "NAGENT_LLM_API_KEY=x")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()

	client := &firstChunkClient{chunk: make(chan struct{}, 1)}
	conn := acp.NewConn(stdin, client, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go conn.Serve(ctx, stdout)
	call := func(method string, params any) json.RawMessage {
		raw, err := conn.Call(ctx, method, params)
		if err != nil {
			b.Fatalf("%s: %v", method, err)
		}
		return raw
	}
	call("initialize", map[string]any{"protocolVersion": 1})
	var sess struct {
		SessionID string `json:"sessionId"`
	}
	json.Unmarshal(call("session/new", map[string]any{"cwd": "/", "mcpServers": []any{}}), &sess)
	prompt := map[string]any{"sessionId": sess.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "ping"}}}

	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		client.mu.Lock()
		client.armed = true
		client.mu.Unlock()
		start := time.Now()
		done := make(chan struct{})
		go func() {
			defer close(done)
			call("session/prompt", prompt)
		}()
		select {
		case <-client.chunk:
			times = append(times, time.Since(start))
		case <-time.After(time.Minute):
			b.Fatal("no agent_message_chunk within a minute")
		}
		<-done
	}
	b.StopTimer()
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "ms-median-first-chunk")
	b.ReportMetric(float64(times[len(times)*9/10].Microseconds())/1000, "ms-p90-first-chunk")
}
