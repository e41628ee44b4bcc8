package feishutest

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// Mention is one @mention in a message.
type Mention struct {
	Key    string // "@_user_1"
	OpenID string
	Name   string
}

// Message describes an im.message.receive_v1 event.
type Message struct {
	EventID   string // defaults to "ev_" + MessageID
	MessageID string
	ChatID    string
	ChatType  string // "p2p" (default) or "group"
	ThreadID  string
	Sender    string // the sender's open_id
	MsgType   string // "text" (default) or "post"
	// Text is the text of a text message; Content, when set, is the raw
	// content JSON instead.
	Text     string
	Content  string
	Mentions []Mention
	// CreateTime is the message's create_time; zero means now.
	CreateTime time.Time
}

// MessageEvent returns the event JSON for m.
func MessageEvent(appID string, m Message) []byte {
	if m.ChatType == "" {
		m.ChatType = "p2p"
	}
	if m.MsgType == "" {
		m.MsgType = "text"
	}
	if m.EventID == "" {
		m.EventID = "ev_" + m.MessageID
	}
	if m.CreateTime.IsZero() {
		m.CreateTime = time.Now()
	}
	content := m.Content
	if content == "" {
		b, _ := json.Marshal(map[string]string{"text": m.Text})
		content = string(b)
	}
	var mentions []map[string]any
	for _, me := range m.Mentions {
		mentions = append(mentions, map[string]any{
			"key": me.Key, "name": me.Name, "tenant_key": "tk",
			"id": map[string]any{"open_id": me.OpenID},
		})
	}
	msg := map[string]any{
		"message_id": m.MessageID, "chat_id": m.ChatID, "chat_type": m.ChatType,
		"message_type": m.MsgType, "content": content, "mentions": mentions,
		"create_time": strconv.FormatInt(m.CreateTime.UnixMilli(), 10),
	}
	if m.ThreadID != "" {
		msg["thread_id"] = m.ThreadID
	}
	ev := map[string]any{
		"schema": "2.0",
		"header": map[string]any{
			"event_id": m.EventID, "event_type": "im.message.receive_v1", "app_id": appID,
			"tenant_key": "tk", "create_time": strconv.FormatInt(time.Now().UnixMilli(), 10),
		},
		"event": map[string]any{
			"sender":  map[string]any{"sender_id": map[string]any{"open_id": m.Sender}, "sender_type": "user", "tenant_key": "tk"},
			"message": msg,
		},
	}
	b, _ := json.Marshal(ev)
	return b
}

// CardActionEvent returns the card.action.trigger event JSON for a click by
// operator on a button whose value is value, on card message cardID.
func CardActionEvent(appID, eventID, operator, cardID string, value map[string]any) []byte {
	ev := map[string]any{
		"schema": "2.0",
		"header": map[string]any{
			"event_id": eventID, "event_type": "card.action.trigger", "app_id": appID,
			"tenant_key": "tk", "create_time": fmt.Sprint(time.Now().UnixMilli()),
		},
		"event": map[string]any{
			"operator": map[string]any{"open_id": operator, "tenant_key": "tk"},
			"token":    "c-token",
			"action":   map[string]any{"tag": "button", "value": value},
			"host":     "im_message",
			"context":  map[string]any{"open_message_id": cardID, "open_chat_id": "oc_fake"},
		},
	}
	b, _ := json.Marshal(ev)
	return b
}
