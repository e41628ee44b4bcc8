package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nagent/nagent/runtime/llm"
)

// ResponseCreateRequest is the body of POST /v1/responses. Fields N-Agent
// does not know are ignored, as for chat completions.
type ResponseCreateRequest struct {
	Model string `json:"model"`
	// Input is a string or an array of input items.
	Input              json.RawMessage   `json:"input"`
	Instructions       string            `json:"instructions"`
	PreviousResponseID string            `json:"previous_response_id"`
	Tools              []ResponseTool    `json:"tools"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	Temperature        *float64          `json:"temperature"`
	TopP               *float64          `json:"top_p"`
	MaxOutputTokens    *int              `json:"max_output_tokens"`
	Metadata           map[string]string `json:"metadata"`
	Store              *bool             `json:"store"`
	Stream             bool              `json:"stream"`
	Reasoning          *struct {
		Effort string `json:"effort"`
	} `json:"reasoning"`
	Text         *ResponseTextConfig `json:"text"`
	Background   bool                `json:"background"`
	Conversation json.RawMessage     `json:"conversation"`
}

// ResponseTool is a function tool in the Responses shape, which is flat:
// {"type":"function","name","description","parameters","strict"}.
type ResponseTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

// ResponseTextConfig is the text output configuration.
type ResponseTextConfig struct {
	Format struct {
		Type string `json:"type"`
	} `json:"format"`
}

// Response is the Responses API object, returned by POST /v1/responses,
// carried by the lifecycle stream events and stored for
// GET /v1/responses/{id}.
type Response struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"`
	CreatedAt          int64              `json:"created_at"`
	Status             string             `json:"status"`
	Error              *ResponseError     `json:"error"`
	IncompleteDetails  *IncompleteDetails `json:"incomplete_details"`
	Instructions       *string            `json:"instructions"`
	MaxOutputTokens    *int               `json:"max_output_tokens"`
	Model              string             `json:"model"`
	Output             []OutputItem       `json:"output"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Reasoning          ResponseReasoning  `json:"reasoning"`
	Store              bool               `json:"store"`
	Temperature        *float64           `json:"temperature"`
	Text               ResponseTextConfig `json:"text"`
	ToolChoice         json.RawMessage    `json:"tool_choice"`
	Tools              []ResponseTool     `json:"tools"`
	TopP               *float64           `json:"top_p"`
	Truncation         string             `json:"truncation"`
	Usage              *ResponseUsage     `json:"usage"`
	Metadata           map[string]string  `json:"metadata"`
}

// ResponseError is the error of a failed response.
type ResponseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// IncompleteDetails says why a response is incomplete: "max_output_tokens"
// or "content_filter".
type IncompleteDetails struct {
	Reason string `json:"reason"`
}

// ResponseReasoning echoes the reasoning configuration.
type ResponseReasoning struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

// ResponseUsage is the usage object of a response.
type ResponseUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

func responseUsage(u llm.Usage) *ResponseUsage {
	w := wireUsage(u)
	r := &ResponseUsage{InputTokens: w.PromptTokens, OutputTokens: w.CompletionTokens, TotalTokens: w.TotalTokens}
	r.InputTokensDetails.CachedTokens = u.CachedTokens
	r.OutputTokensDetails.ReasoningTokens = u.ReasoningTokens
	return r
}

// Output item types and statuses.
const (
	itemMessage      = "message"
	itemFunctionCall = "function_call"

	statusInProgress = "in_progress"
	statusCompleted  = "completed"
	statusIncomplete = "incomplete"
	statusFailed     = "failed"
	statusCancelled  = "cancelled"
)

// OutputItem is one item of a response's output: an assistant message
// (Role, Content) or a call of a client tool (CallID, Name, Arguments). It
// marshals to the shape of its Type.
type OutputItem struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	Status string `json:"status"`

	Role    string       `json:"role,omitempty"`
	Content []OutputText `json:"content,omitempty"`

	CallID    string `json:"call_id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
}

// MarshalJSON writes the fields of the item's type, each always present.
func (it OutputItem) MarshalJSON() ([]byte, error) {
	if it.Type == itemFunctionCall {
		return marshalJSON(struct {
			Type      string `json:"type"`
			ID        string `json:"id"`
			CallID    string `json:"call_id"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
			Status    string `json:"status"`
		}{it.Type, it.ID, it.CallID, it.Name, it.Arguments, it.Status})
	}
	content := it.Content
	if content == nil {
		content = []OutputText{}
	}
	return marshalJSON(struct {
		Type    string       `json:"type"`
		ID      string       `json:"id"`
		Status  string       `json:"status"`
		Role    string       `json:"role"`
		Content []OutputText `json:"content"`
	}{it.Type, it.ID, it.Status, it.Role, content})
}

// OutputText is an output_text content part.
type OutputText struct {
	Type        string            `json:"type"`
	Text        string            `json:"text"`
	Annotations []json.RawMessage `json:"annotations"`
	Logprobs    []json.RawMessage `json:"logprobs"`
}

func outputText(text string) OutputText {
	return OutputText{Type: "output_text", Text: text, Annotations: []json.RawMessage{}, Logprobs: []json.RawMessage{}}
}

func messageItem(status, text string) OutputItem {
	return OutputItem{Type: itemMessage, ID: newID("msg_"), Status: status, Role: "assistant", Content: []OutputText{outputText(text)}}
}

func functionCallItem(status string, c llm.ToolCall) OutputItem {
	return OutputItem{Type: itemFunctionCall, ID: newID("fc_"), Status: status, CallID: c.ID, Name: c.Name, Arguments: c.Arguments}
}

// marshalJSON encodes v without escaping HTML characters, as the SSE and
// JSON writers do.
func marshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// inputItem is one item of a request's input array, with the fields of
// every supported type.
type inputItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// inputMessages converts a request's input, a string or an array of items,
// to messages. Consecutive function_call items, and those that follow an
// assistant message, become one assistant message with tool calls, as a
// model produced them.
func inputMessages(raw json.RawMessage) ([]llm.Message, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, invalid("input", "input is required: a string or a non-empty array of input items")
	}
	if raw[0] == '"' {
		var text string
		if err := json.Unmarshal(raw, &text); err != nil || text == "" {
			return nil, invalid("input", "input must be a non-empty string or a non-empty array of input items")
		}
		return []llm.Message{{Role: llm.RoleUser, Content: text}}, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || len(items) == 0 {
		return nil, invalid("input", "input must be a non-empty string or a non-empty array of input items")
	}
	out := make([]llm.Message, 0, len(items))
	callNames := map[string]string{}
	for i, rawItem := range items {
		param := fmt.Sprintf("input[%d]", i)
		var it inputItem
		if err := json.Unmarshal(rawItem, &it); err != nil {
			var typeErr *json.UnmarshalTypeError
			if errors.As(err, &typeErr) && typeErr.Field != "" {
				return nil, invalid(param+"."+typeErr.Field, "Invalid type for '%s.%s': expected %s, but got %s.", param, typeErr.Field, typeErr.Type, typeErr.Value)
			}
			return nil, invalid(param, "%s must be an input item object", param)
		}
		switch it.Type {
		case "", itemMessage:
			msg, e := inputMessage(param, it)
			if e != nil {
				return nil, e
			}
			out = append(out, msg)
		case itemFunctionCall:
			if it.CallID == "" {
				return nil, invalid(param+".call_id", "%s: a function_call item needs call_id", param)
			}
			if it.Name == "" {
				return nil, invalid(param+".name", "%s: a function_call item needs name", param)
			}
			call := llm.ToolCall{ID: it.CallID, Name: it.Name, Arguments: it.Arguments}
			callNames[it.CallID] = it.Name
			if n := len(out); n > 0 && out[n-1].Role == llm.RoleAssistant {
				out[n-1].ToolCalls = append(out[n-1].ToolCalls, call)
			} else {
				out = append(out, llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call}})
			}
		case "function_call_output":
			if it.CallID == "" {
				return nil, invalid(param+".call_id", "%s: a function_call_output item needs call_id", param)
			}
			text, err := contentText(it.Output)
			if err != nil {
				return nil, invalid(param+".output", "%s.output: %v", param, err)
			}
			out = append(out, llm.Message{Role: llm.RoleTool, Content: text, ToolCallID: it.CallID, Name: callNames[it.CallID]})
		default:
			return nil, invalid(param+".type", "%s: input item type %q is not supported; use message, function_call or function_call_output", param, it.Type)
		}
	}
	return out, nil
}

// inputMessage converts a message item.
func inputMessage(param string, it inputItem) (llm.Message, *apiError) {
	text, err := contentText(it.Content)
	if err != nil {
		return llm.Message{}, invalid(param+".content", "%s.content: %v", param, err)
	}
	msg := llm.Message{Content: text}
	switch it.Role {
	case "user":
		msg.Role = llm.RoleUser
	case "assistant":
		msg.Role = llm.RoleAssistant
	case "system", "developer":
		msg.Role = llm.RoleSystem
	case "":
		return llm.Message{}, invalid(param+".role", "%s: role is required", param)
	default:
		return llm.Message{}, invalid(param+".role", "%s: unknown role %q; use user, system, developer or assistant", param, it.Role)
	}
	return msg, nil
}

// responseToolSpecs converts the request's function tools. Other tool types
// (OpenAI's hosted tools) are refused: N-Agent runs its own server tools.
func responseToolSpecs(in []ResponseTool) ([]llm.ToolSpec, *apiError) {
	out := make([]llm.ToolSpec, 0, len(in))
	for i, t := range in {
		if t.Type != "function" {
			return nil, invalid(fmt.Sprintf("tools[%d].type", i),
				"tools[%d]: tool type %q is not supported; declare client tools with type \"function\" (N-Agent runs its own server-side tools)", i, t.Type)
		}
		if t.Name == "" {
			return nil, invalid(fmt.Sprintf("tools[%d].name", i), "tools[%d]: name is required", i)
		}
		out = append(out, llm.ToolSpec{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	return out, nil
}

// responseToolChoice maps tool_choice ("auto", "none", "required" or
// {"type":"function","name":…}) to the provider-neutral form, and returns
// the value the response echoes.
func responseToolChoice(raw json.RawMessage) (string, json.RawMessage, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", json.RawMessage(`"auto"`), nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "auto", "none", "required":
			return s, raw, nil
		}
		return "", nil, invalid("tool_choice", "tool_choice %q is not one of auto, none, required", s)
	}
	var obj struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if json.Unmarshal(raw, &obj) != nil || obj.Type != "function" || obj.Name == "" {
		return "", nil, invalid("tool_choice", "tool_choice must be auto, none, required or {\"type\":\"function\",\"name\":…}")
	}
	echo, _ := marshalJSON(obj)
	return obj.Name, echo, nil
}
