package openai

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

// errStreamEnded reports a stream cut off before it said it was complete.
var errStreamEnded = errors.New("stream ended early")

type streamChunk struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content          text            `json:"content"`
			ReasoningContent text            `json:"reasoning_content"`
			Reasoning        text            `json:"reasoning"`
			ToolCalls        []toolCallDelta `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *wireUsage `json:"usage"`
	Error *wireError `json:"error"`
}

type toolCallDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// toolCallBuilder reassembles one tool call from its deltas.
type toolCallBuilder struct {
	id, name string
	args     strings.Builder
}

// streamState accumulates a streamed completion.
type streamState struct {
	resp    llm.Response
	content strings.Builder
	reason  strings.Builder
	calls   map[int]*toolCallBuilder
	last    int // index of the tool call that received the latest delta
}

// readStream reads a chat-completions event stream to its end, calling
// onDelta for content and reasoning, and returns the reassembled response.
func readStream(body io.Reader, onDelta llm.DeltaFunc, attempts int) (*llm.Response, error) {
	st := &streamState{calls: map[int]*toolCallBuilder{}, last: -1}
	events := transport.NewReader(body)
	done := false
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
		if string(data) == "[DONE]" {
			done = true
			continue
		}
		var c streamChunk
		if err := json.Unmarshal(data, &c); err != nil {
			return nil, fmt.Errorf("decode stream chunk: %w", err)
		}
		if c.Error != nil {
			return nil, c.Error.providerError(attempts)
		}
		st.resp.Raw = append(json.RawMessage(nil), data...)
		st.apply(&c, onDelta)
	}
	if !done && st.resp.FinishReason == "" {
		return nil, fmt.Errorf("read stream: %w", errStreamEnded)
	}
	return st.finish(), nil
}

// apply folds one chunk into the state.
func (st *streamState) apply(c *streamChunk, onDelta llm.DeltaFunc) {
	if st.resp.ID == "" {
		st.resp.ID = c.ID
	}
	if st.resp.Model == "" {
		st.resp.Model = c.Model
	}
	if c.Usage != nil {
		st.resp.Usage = c.Usage.usage()
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		d := llm.Delta{Content: string(ch.Delta.Content), ReasoningContent: string(ch.Delta.ReasoningContent)}
		if d.ReasoningContent == "" {
			d.ReasoningContent = string(ch.Delta.Reasoning)
		}
		if d.Content != "" || d.ReasoningContent != "" {
			st.content.WriteString(d.Content)
			st.reason.WriteString(d.ReasoningContent)
			onDelta(d)
		}
		for _, tc := range ch.Delta.ToolCalls {
			st.applyToolCall(tc)
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			st.resp.FinishReason = *ch.FinishReason
		}
	}
}

// applyToolCall folds one tool-call delta in. Deltas are addressed by index;
// id and name may come in any chunk and arguments in many. A server that
// omits the index is followed by id: a new id opens a new call.
func (st *streamState) applyToolCall(tc toolCallDelta) {
	idx := st.last
	switch {
	case tc.Index != nil:
		idx = *tc.Index
	case idx < 0 || (tc.ID != "" && st.calls[idx].id != "" && st.calls[idx].id != tc.ID):
		idx = len(st.calls)
	}
	b := st.calls[idx]
	if b == nil {
		b = &toolCallBuilder{}
		st.calls[idx] = b
	}
	st.last = idx
	if b.id == "" {
		b.id = tc.ID
	}
	if n := tc.Function.Name; n != "" && n != b.name {
		b.name += n // a name is normally sent once; some servers split it
	}
	b.args.WriteString(tc.Function.Arguments)
}

// finish builds the response from the state.
func (st *streamState) finish() *llm.Response {
	r := st.resp
	r.Content = st.content.String()
	r.ReasoningContent = st.reason.String()
	idxs := make([]int, 0, len(st.calls))
	for i := range st.calls {
		idxs = append(idxs, i)
	}
	sort.Ints(idxs)
	for _, i := range idxs {
		b := st.calls[i]
		r.ToolCalls = append(r.ToolCalls, llm.ToolCall{ID: b.id, Name: b.name, Arguments: b.args.String()})
	}
	return &r
}
