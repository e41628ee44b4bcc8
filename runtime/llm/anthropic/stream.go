package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/runtime/llm/internal/transport"
)

// errStreamEnded reports a stream cut off before message_stop.
var errStreamEnded = errors.New("stream ended early")

// streamEvent is the data of any Messages stream event.
type streamEvent struct {
	Type         string           `json:"type"`
	Message      *messageResponse `json:"message"`
	Index        int              `json:"index"`
	ContentBlock *respBlk         `json:"content_block"`
	Delta        struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Thinking    string `json:"thinking"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *wireUsage `json:"usage"`
	Error *wireError `json:"error"`
}

// toolBlock reassembles one streamed tool_use block.
type toolBlock struct {
	id, name string
	input    json.RawMessage // from content_block_start
	partial  strings.Builder // input_json_delta pieces
}

// readStream reads a Messages event stream to message_stop, calling
// onDelta for text and thinking, and returns the reassembled response.
func readStream(body io.Reader, onDelta llm.DeltaFunc, attempts int) (*llm.Response, error) {
	var (
		resp              llm.Response
		usage             wireUsage
		content, thinking strings.Builder
		tools             = map[int]*toolBlock{}
		stopReason        string
		done              bool
	)
	events := transport.NewReader(body)
	for !done {
		_, data, err := events.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read stream: %w", err)
		}
		data = bytes.TrimSpace(data)
		if len(data) == 0 {
			continue
		}
		var ev streamEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			return nil, fmt.Errorf("decode stream event: %w", err)
		}
		resp.Raw = append(json.RawMessage(nil), data...)
		switch ev.Type {
		case "message_start":
			if m := ev.Message; m != nil {
				resp.ID, resp.Model = m.ID, m.Model
				usage.merge(&m.Usage)
			}
		case "content_block_start":
			if b := ev.ContentBlock; b != nil {
				switch b.Type {
				case "tool_use":
					tools[ev.Index] = &toolBlock{id: b.ID, name: b.Name, input: b.Input}
				case "text":
					if b.Text != "" {
						content.WriteString(b.Text)
						onDelta(llm.Delta{Content: b.Text})
					}
				case "thinking":
					if b.Thinking != "" {
						thinking.WriteString(b.Thinking)
						onDelta(llm.Delta{ReasoningContent: b.Thinking})
					}
				}
			}
		case "content_block_delta":
			switch d := ev.Delta; d.Type {
			case "text_delta":
				if d.Text != "" {
					content.WriteString(d.Text)
					onDelta(llm.Delta{Content: d.Text})
				}
			case "thinking_delta":
				if d.Thinking != "" {
					thinking.WriteString(d.Thinking)
					onDelta(llm.Delta{ReasoningContent: d.Thinking})
				}
			case "input_json_delta":
				if t := tools[ev.Index]; t != nil {
					t.partial.WriteString(d.PartialJSON)
				}
			}
		case "message_delta":
			if ev.Delta.StopReason != "" {
				stopReason = ev.Delta.StopReason
			}
			usage.merge(ev.Usage)
		case "message_stop":
			done = true
		case "error":
			e := ev.Error
			if e == nil {
				e = &wireError{}
			}
			return nil, e.providerError(attempts)
		}
		// ping, content_block_stop and unknown events carry nothing we keep.
	}
	if !done && stopReason == "" {
		return nil, fmt.Errorf("read stream: %w", errStreamEnded)
	}
	resp.Content, resp.ReasoningContent = content.String(), thinking.String()
	resp.FinishReason = finishReason(stopReason)
	resp.Usage = usage.usage()
	idxs := make([]int, 0, len(tools))
	for i := range tools {
		idxs = append(idxs, i)
	}
	sort.Ints(idxs)
	for _, i := range idxs {
		t := tools[i]
		args := t.partial.String()
		switch {
		case strings.TrimSpace(args) == "":
			args = arguments(t.input)
		case json.Valid([]byte(args)):
			args = arguments(json.RawMessage(args)) // compact, as non-streamed
		}
		resp.ToolCalls = append(resp.ToolCalls, llm.ToolCall{ID: t.id, Name: t.name, Arguments: args})
	}
	return &resp, nil
}
