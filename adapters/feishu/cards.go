package feishu

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Cards are message-card JSON 1.0 with update_multi, so that PATCH updates
// reach everyone in the chat.

func card(header, template string, elements ...map[string]any) map[string]any {
	c := map[string]any{
		"config":   map[string]any{"wide_screen_mode": true, "update_multi": true},
		"elements": elements,
	}
	if header != "" {
		c["header"] = map[string]any{
			"title":    map[string]any{"tag": "plain_text", "content": header},
			"template": template,
		}
	}
	return c
}

func markdown(text string) map[string]any {
	return map[string]any{"tag": "markdown", "content": text}
}

func note(text string) map[string]any {
	return map[string]any{"tag": "note", "elements": []map[string]any{{"tag": "plain_text", "content": text}}}
}

// streamingCard shows an answer still being written.
func streamingCard(text string) map[string]any {
	if text == "" {
		text = "…"
	}
	return card("", "", markdown(truncate(text, maxCardBytes)), note("Writing…"))
}

// finalCard shows the finished answer (or, when failed, the plain-words
// error).
func finalCard(text string, failed bool) map[string]any {
	if failed {
		return card("", "", markdown(truncate(text, maxCardBytes)), note("The answer could not be completed."))
	}
	return card("", "", markdown(truncate(text, maxCardBytes)))
}

// Values of the confirmation buttons.
const (
	actionKey   = "nagent_confirm"
	choiceKey   = "choice"
	choiceAllow = "allow"
	choiceDeny  = "deny"
)

func button(label, kind, id, choice string) map[string]any {
	return map[string]any{
		"tag":   "button",
		"text":  map[string]any{"tag": "plain_text", "content": label},
		"type":  kind,
		"value": map[string]any{actionKey: id, choiceKey: choice},
	}
}

// confirmCard asks the run's starter to allow or deny one tool call.
func confirmCard(id, tool, args string, reasons []string) map[string]any {
	body := fmt.Sprintf("I would like to run **%s**", tool)
	if args != "" && args != "{}" {
		body += fmt.Sprintf(" with:\n```\n%s\n```", truncate(args, 1500))
	}
	for _, r := range reasons {
		body += "\n- " + r
	}
	return card("Approval needed", "orange",
		markdown(body),
		map[string]any{"tag": "action", "actions": []map[string]any{
			button("Allow", "primary", id, choiceAllow),
			button("Deny", "danger", id, choiceDeny),
		}},
		note("Only the person who asked can answer."),
	)
}

// settledCard replaces a confirmation card once it is answered.
func settledCard(tool, outcome string) map[string]any {
	return card("Approval", "grey", markdown(fmt.Sprintf("**%s**: %s", tool, outcome)))
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "\n…(truncated)"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// rateLimited reports the platform's "too many requests" codes.
func rateLimited(code int) bool {
	return code == 99991400 || code == 230020 || code == 11232
}

func apiError(op string, code int, msg string) error {
	return fmt.Errorf("feishu: %s: code %d: %s", op, code, msg)
}
