package acp

import "encoding/json"

// ProtocolVersion is the ACP version this agent speaks.
const ProtocolVersion = 1

// The wire types below follow the ACP v1 JSON schema
// (@agentclientprotocol/sdk schema/v1/schema.json); only the fields N-Agent
// reads or writes are declared.

type initializeParams struct {
	ProtocolVersion    int                `json:"protocolVersion"`
	ClientCapabilities ClientCapabilities `json:"clientCapabilities"`
	ClientInfo         *implementation    `json:"clientInfo,omitempty"`
}

// ClientCapabilities are what the editor said it can do at initialize.
type ClientCapabilities struct {
	FS struct {
		ReadTextFile  bool `json:"readTextFile"`
		WriteTextFile bool `json:"writeTextFile"`
	} `json:"fs"`
	Terminal bool `json:"terminal"`
}

type implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

type initializeResult struct {
	ProtocolVersion   int               `json:"protocolVersion"`
	AgentCapabilities agentCapabilities `json:"agentCapabilities"`
	AuthMethods       []any             `json:"authMethods"`
	AgentInfo         implementation    `json:"agentInfo"`
}

type agentCapabilities struct {
	LoadSession         bool                `json:"loadSession"`
	PromptCapabilities  promptCapabilities  `json:"promptCapabilities"`
	MCPCapabilities     mcpCapabilities     `json:"mcpCapabilities"`
	SessionCapabilities sessionCapabilities `json:"sessionCapabilities"`
}

type promptCapabilities struct {
	Image           bool `json:"image"`
	Audio           bool `json:"audio"`
	EmbeddedContext bool `json:"embeddedContext"`
}

type mcpCapabilities struct {
	HTTP bool `json:"http"`
	SSE  bool `json:"sse"`
}

type sessionCapabilities struct {
	Close *struct{} `json:"close,omitempty"`
	List  *struct{} `json:"list,omitempty"`
}

// mcpServer is one MCP server the editor passes: stdio (no type), http or
// sse.
type mcpServer struct {
	Type    string     `json:"type,omitempty"`
	Name    string     `json:"name"`
	Command string     `json:"command,omitempty"`
	Args    []string   `json:"args,omitempty"`
	Env     []nameVal  `json:"env,omitempty"`
	URL     string     `json:"url,omitempty"`
	Headers []nameVal  `json:"headers,omitempty"`
	Meta    jsonObject `json:"_meta,omitempty"`
}

type nameVal struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type jsonObject = map[string]any

type newSessionParams struct {
	Cwd        string      `json:"cwd"`
	MCPServers []mcpServer `json:"mcpServers"`
}

type newSessionResult struct {
	SessionID string `json:"sessionId"`
}

type loadSessionParams struct {
	SessionID  string      `json:"sessionId"`
	Cwd        string      `json:"cwd"`
	MCPServers []mcpServer `json:"mcpServers"`
}

type sessionIDParams struct {
	SessionID string `json:"sessionId"`
}

type listSessionsParams struct {
	Cwd    string `json:"cwd,omitempty"`
	Cursor string `json:"cursor,omitempty"`
}

type sessionInfo struct {
	SessionID string `json:"sessionId"`
	Cwd       string `json:"cwd"`
	Title     string `json:"title,omitempty"`
	UpdatedAt string `json:"updatedAt,omitempty"`
}

type listSessionsResult struct {
	Sessions   []sessionInfo `json:"sessions"`
	NextCursor string        `json:"nextCursor,omitempty"`
}

type promptParams struct {
	SessionID string         `json:"sessionId"`
	Prompt    []contentBlock `json:"prompt"`
}

type promptResult struct {
	StopReason string `json:"stopReason"`
}

// Stop reasons.
const (
	StopEndTurn         = "end_turn"
	StopMaxTokens       = "max_tokens"
	StopMaxTurnRequests = "max_turn_requests"
	StopCancelled       = "cancelled"
)

// contentBlock is a prompt or message content block: text, image, audio,
// resource_link or resource.
type contentBlock struct {
	Type     string           `json:"type"`
	Text     string           `json:"text,omitempty"`
	URI      string           `json:"uri,omitempty"`
	Name     string           `json:"name,omitempty"`
	Title    string           `json:"title,omitempty"`
	MimeType string           `json:"mimeType,omitempty"`
	Resource *resourceContent `json:"resource,omitempty"`
}

type resourceContent struct {
	URI      string `json:"uri"`
	MimeType string `json:"mimeType,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     string `json:"blob,omitempty"`
}

func textBlock(s string) contentBlock { return contentBlock{Type: "text", Text: s} }

type sessionNotification struct {
	SessionID string `json:"sessionId"`
	Update    any    `json:"update"`
}

// chunkUpdate is user_message_chunk, agent_message_chunk or
// agent_thought_chunk.
type chunkUpdate struct {
	SessionUpdate string       `json:"sessionUpdate"`
	Content       contentBlock `json:"content"`
}

// Session update kinds.
const (
	updateUserChunk     = "user_message_chunk"
	updateAgentChunk    = "agent_message_chunk"
	updateThoughtChunk  = "agent_thought_chunk"
	updateToolCall      = "tool_call"
	updateToolCallPatch = "tool_call_update"
)

// toolCall is a tool_call update, and (without SessionUpdate) the toolCall
// of a permission request.
type toolCall struct {
	SessionUpdate string            `json:"sessionUpdate,omitempty"`
	ToolCallID    string            `json:"toolCallId"`
	Title         string            `json:"title,omitempty"`
	Kind          string            `json:"kind,omitempty"`
	Status        string            `json:"status,omitempty"`
	Content       []toolCallContent `json:"content,omitempty"`
	RawInput      json.RawMessage   `json:"rawInput,omitempty"`
	RawOutput     any               `json:"rawOutput,omitempty"`
}

type toolCallContent struct {
	Type    string       `json:"type"` // "content"
	Content contentBlock `json:"content"`
}

// Tool call statuses.
const (
	toolPending    = "pending"
	toolInProgress = "in_progress"
	toolCompleted  = "completed"
	toolFailed     = "failed"
)

type permissionParams struct {
	SessionID string             `json:"sessionId"`
	ToolCall  toolCall           `json:"toolCall"`
	Options   []permissionOption `json:"options"`
}

type permissionOption struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
}

type permissionResult struct {
	Outcome struct {
		Outcome  string `json:"outcome"` // cancelled or selected
		OptionID string `json:"optionId"`
	} `json:"outcome"`
}

// Permission options; each option's id is its kind.
const (
	optAllowOnce   = "allow_once"
	optAllowAlways = "allow_always"
	optRejectOnce  = "reject_once"
)

var permissionOptions = []permissionOption{
	{OptionID: optAllowOnce, Name: "Allow once", Kind: optAllowOnce},
	{OptionID: optAllowAlways, Name: "Allow always (this session)", Kind: optAllowAlways},
	{OptionID: optRejectOnce, Name: "Reject", Kind: optRejectOnce},
}
