package memory

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/nagent/nagent/runtime/llm"
)

// HeuristicSummarizer writes the rolling summary without a model call, in
// the shape "用户: <last user message> | 助手: <last assistant reply>". When
// the assistant has only asked for tools so far, the reply part names them.
type HeuristicSummarizer struct {
	// MaxRunes caps each side; 0 means 200.
	MaxRunes int
}

// Summarize implements Summarizer.
func (h HeuristicSummarizer) Summarize(_ context.Context, previous string, history []llm.Message) (string, error) {
	limit := h.MaxRunes
	if limit <= 0 {
		limit = 200
	}
	var user, assistant string
	for i := len(history) - 1; i >= 0 && user == ""; i-- {
		msg := history[i]
		switch {
		case msg.Role == llm.RoleUser:
			user = msg.Content
		case msg.Role == llm.RoleAssistant && assistant == "":
			assistant = msg.Content
			if assistant == "" && len(msg.ToolCalls) > 0 {
				names := make([]string, len(msg.ToolCalls))
				for j, c := range msg.ToolCalls {
					names[j] = c.Name
				}
				assistant = "调用工具 " + strings.Join(names, ", ")
			}
		}
	}
	if user == "" && assistant == "" {
		return previous, nil
	}
	return "用户: " + clip(oneLine(user), limit) + " | 助手: " + clip(oneLine(assistant), limit), nil
}

// HeuristicTitler titles a session with the first line of its first message.
type HeuristicTitler struct{}

// Title implements Titler.
func (HeuristicTitler) Title(_ context.Context, first string) (string, error) {
	line, _, _ := strings.Cut(strings.TrimSpace(first), "\n")
	return clip(strings.TrimSpace(line), 60), nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// clip shortens s to at most n runes, marking the cut with "...".
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "..."
}
