package feishu

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"

	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/runtime/gateway"
)

// inbound is one user message the bot should answer.
type inbound struct {
	EventID   string
	MessageID string
	ChatID    string
	ChatType  string // p2p or group
	ThreadID  string
	OpenID    string // the sender
	Text      string
	// CreateTime is when Feishu received the message, in ms.
	CreateTime int64
}

// onMessage handles im.message.receive_v1. It hands the message to the
// gateway and returns at once: the SDK acks the event only after this
// returns, and Feishu redelivers events not acked within about 3 s.
func (a *Adapter) onMessage(_ context.Context, ev *larkim.P2MessageReceiveV1) error {
	in, ok := a.parse(ev)
	if !ok {
		return nil
	}
	a.order.add(in)
	return nil
}

// parse extracts the message, or reports false for one the bot ignores: a
// bot's own message, a group message that does not mention the bot, a
// message type other than text and post, or an empty text.
func (a *Adapter) parse(ev *larkim.P2MessageReceiveV1) (inbound, bool) {
	if ev == nil || ev.Event == nil || ev.Event.Message == nil {
		return inbound{}, false
	}
	m, s := ev.Event.Message, ev.Event.Sender
	in := inbound{
		MessageID: deref(m.MessageId),
		ChatID:    deref(m.ChatId),
		ChatType:  deref(m.ChatType),
		ThreadID:  deref(m.ThreadId),

		CreateTime: parseMillis(deref(m.CreateTime)),
	}
	if ev.EventV2Base != nil && ev.EventV2Base.Header != nil {
		in.EventID = ev.EventV2Base.Header.EventID
	}
	if s != nil {
		if deref(s.SenderType) != "" && deref(s.SenderType) != "user" {
			return inbound{}, false
		}
		if s.SenderId != nil {
			in.OpenID = deref(s.SenderId.OpenId)
		}
	}
	bot := a.botOpenID()
	mentions := map[string]mention{}
	botMentioned := false
	for _, me := range m.Mentions {
		if me == nil {
			continue
		}
		isBot := me.Id != nil && bot != "" && deref(me.Id.OpenId) == bot
		botMentioned = botMentioned || isBot
		mentions[deref(me.Key)] = mention{name: deref(me.Name), bot: isBot}
	}
	if in.ChatType != "p2p" && !botMentioned {
		return inbound{}, false
	}
	var text string
	switch deref(m.MessageType) {
	case "text":
		text = textContent(deref(m.Content), mentions)
	case "post":
		text = postContent(deref(m.Content), mentions)
	default:
		a.log.Debug("feishu: ignoring a message type the bot does not read", "message_type", deref(m.MessageType))
		return inbound{}, false
	}
	in.Text = strings.TrimSpace(text)
	if in.Text == "" || in.ChatID == "" {
		return inbound{}, false
	}
	return in, true
}

type mention struct {
	name string
	bot  bool
}

// textContent reads a text message, dropping the bot's mention and
// spelling out others ("@_user_2" becomes "@Alice").
func textContent(content string, mentions map[string]mention) string {
	var c struct {
		Text string `json:"text"`
	}
	if json.Unmarshal([]byte(content), &c) != nil {
		return ""
	}
	return replaceMentions(c.Text, mentions)
}

func replaceMentions(s string, mentions map[string]mention) string {
	for key, m := range mentions {
		if key == "" {
			continue
		}
		repl := "@" + m.name
		if m.bot {
			repl = ""
		}
		s = strings.ReplaceAll(s, key, repl)
	}
	return strings.Join(strings.Fields(s), " ")
}

// postElem is one element of a rich-text (post) paragraph.
type postElem struct {
	Tag      string `json:"tag"`
	Text     string `json:"text"`
	Href     string `json:"href"`
	UserID   string `json:"user_id"`
	UserName string `json:"user_name"`
}

type postBody struct {
	Title   string       `json:"title"`
	Content [][]postElem `json:"content"`
}

// postContent reads a rich-text message: the title, then one line per
// paragraph. Received posts are {"title","content"}; a locale-keyed body
// ({"zh_cn": {...}}) is read as well.
func postContent(content string, mentions map[string]mention) string {
	var body postBody
	if json.Unmarshal([]byte(content), &body) != nil {
		return ""
	}
	if body.Content == nil {
		var byLocale map[string]json.RawMessage
		if json.Unmarshal([]byte(content), &byLocale) == nil {
			for _, raw := range byLocale {
				if json.Unmarshal(raw, &body) == nil && body.Content != nil {
					break
				}
			}
		}
	}
	var lines []string
	if t := strings.TrimSpace(body.Title); t != "" {
		lines = append(lines, t)
	}
	for _, para := range body.Content {
		var b strings.Builder
		for _, e := range para {
			switch e.Tag {
			case "text", "md", "code_block":
				b.WriteString(e.Text)
			case "a":
				b.WriteString(e.Text)
				if e.Href != "" && e.Href != e.Text {
					b.WriteString(" (" + e.Href + ")")
				}
			case "at":
				if m, ok := mentions[e.UserID]; ok {
					if !m.bot {
						b.WriteString("@" + m.name)
					}
				} else if e.UserName != "" {
					b.WriteString("@" + e.UserName)
				}
			}
		}
		if line := strings.TrimSpace(b.String()); line != "" {
			lines = append(lines, line)
		}
	}
	return replaceLines(lines, mentions)
}

func replaceLines(lines []string, mentions map[string]mention) string {
	for i, l := range lines {
		for key, m := range mentions {
			if key != "" && m.bot {
				l = strings.ReplaceAll(l, key, "")
			}
		}
		lines[i] = strings.TrimSpace(l)
	}
	return strings.Join(lines, "\n")
}

// submit queues the message in the gateway. Refusals are answered in plain
// words from a goroutine, so the event handler returns at once.
func (a *Adapter) submit(in inbound) {
	conv := gateway.Conversation{Platform: gateway.PlatformFeishu, ChatID: in.ChatID, ThreadID: in.ThreadID}
	if in.ChatType == "p2p" {
		// A group (or a topic in it) is one shared session; a p2p chat is
		// one user's.
		conv.UserID = in.OpenID
	}
	r := a.newReply(in)
	msg := gateway.Message{
		Conversation: conv,
		MessageID:    in.MessageID,
		EventID:      in.EventID,
		Text:         in.Text,
		Confirmer:    &confirmer{a: a, in: in},
		TrustedMetadata: map[string]any{
			"platform":       gateway.PlatformFeishu,
			"feishu_open_id": in.OpenID,
			"feishu_chat_id": in.ChatID,
			"chat_type":      in.ChatType,
		},
	}
	_, err := a.gw.Submit(a.turnContext(), msg, gateway.Handler{Event: r.event, Done: r.done})
	switch {
	case err == nil:
	case errors.Is(err, gateway.ErrDuplicate):
		a.log.Debug("feishu: redelivered message dropped", "message_id", in.MessageID, "event_id", in.EventID)
	case errs.Code(err) == errs.EBUSY:
		go r.fail("I am still answering your earlier messages. Please wait for those answers, then send this one again.")
	default:
		a.log.Warn("feishu: could not take a message", "message_id", in.MessageID, "err", err)
		go r.fail("Sorry, I could not take your message just now. Please try again in a moment.")
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
