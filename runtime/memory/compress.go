package memory

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/store"
)

// HistorySummarizer writes the summary that stands in for compressed
// messages. previous is the summary of an earlier compression of the same
// session (to be folded in), dropped the messages newly compressed away.
type HistorySummarizer interface {
	SummarizeHistory(ctx context.Context, previous string, dropped []llm.Message) (string, error)
}

// HistoryCompressor keeps the history of a provider request within a token
// budget. When the request would pass the budget, the middle of the
// conversation is replaced by one summary message:
//
//	[first turns] [summary of the middle] [recent tail]
//
// pre_compress_all runs first and what the providers salvage is folded into
// the summary. The first KeepFirstTurns turns and a recent tail of about
// TailFraction of the budget are kept whole; a cut never falls between an
// assistant message with tool calls and its tool results (a cut is only
// ever made before a user or assistant message). The latest compression is
// stored, so later turns reuse it, and the request prefix stays the same,
// until the history outgrows it again. The messages table keeps every
// message; compression only shapes requests. The system message is not
// touched.
type HistoryCompressor struct {
	DB       *store.DB
	External *ExternalMemoryManager // for pre_compress_all; may be nil
	// Summarizer writes the summary; nil means HeuristicHistorySummarizer.
	Summarizer HistorySummarizer
	// ContextWindow is the model's context window in tokens; Budget the
	// fraction of it the request may use (default 0.75).
	ContextWindow int
	Budget        float64
	// TailFraction is the share of the budget kept as the recent tail
	// (default 0.4); KeepFirstTurns how many turns stay at the start (default 1).
	TailFraction   float64
	KeepFirstTurns int
	// SummarizerTimeout bounds one summary (default 60s).
	SummarizerTimeout time.Duration
	Log               *slog.Logger
}

// Compression is a session's compression state during a turn. The zero
// value is ready: the stored compression is read on first need.
type Compression struct {
	loaded bool
	rec    *store.HistoryCompression
}

// Record is the compression in force, or nil.
func (c *Compression) Record() *store.HistoryCompression { return c.rec }

// BudgetTokens is the token budget of one request.
func (h *HistoryCompressor) BudgetTokens() int {
	b := h.Budget
	if b <= 0 || b > 1 {
		b = 0.75
	}
	return int(float64(h.ContextWindow) * b)
}

// CompressInput is one request's history to fit.
type CompressInput struct {
	SessionID string
	Enabled   []string
	// Fixed is the estimated tokens of everything but the history: system
	// message, tool definitions, retrieved memory.
	Fixed   int
	History []llm.Message
	State   *Compression
}

// View returns the history to send: History itself when it fits the
// budget, else the compressed view. Failures of pre_compress_all providers
// and of the summarizer are returned to be reported; they never stop the
// turn.
func (h *HistoryCompressor) View(ctx context.Context, in CompressInput) ([]llm.Message, []Failure) {
	budget := h.BudgetTokens()
	if h.ContextWindow <= 0 || in.Fixed+EstimateTokens(in.History) <= budget {
		return in.History, nil
	}
	st := in.State
	if st == nil {
		st = &Compression{}
	}
	if !st.loaded && h.DB != nil {
		rec, err := h.DB.GetHistoryCompression(ctx, in.SessionID)
		if err != nil {
			h.log().Warn("history compression not read", "session_id", in.SessionID, "error", err)
		}
		st.rec, st.loaded = rec, true
	}
	if v, ok := apply(st.rec, in.History); ok && in.Fixed+EstimateTokens(v) <= budget {
		return v, nil
	}
	return h.compress(ctx, in, st, budget)
}

func (h *HistoryCompressor) compress(ctx context.Context, in CompressInput, st *Compression, budget int) ([]llm.Message, []Failure) {
	hist := in.History
	headEnd := firstTurnsEnd(hist, max(h.KeepFirstTurns, 1))
	if EstimateTokens(hist[:headEnd]) > budget/5 { // a huge first turn: keep its question only
		headEnd = min(headEnd, nextCut(hist, 1))
	}
	tailFrac := h.TailFraction
	if tailFrac <= 0 || tailFrac >= 1 {
		tailFrac = 0.4
	}
	// The summary gets a fifth of the budget (a third of that for what the
	// providers salvage). The tail gets at most TailFraction of the budget,
	// and at most half of what head and summary leave, so that the next
	// turns have room before the next compression and the compressed
	// prefix is reused for a while.
	reserve := budget / 5
	avail := budget - in.Fixed - EstimateTokens(hist[:headEnd]) - reserve - 8
	tailBudget := min(int(float64(budget)*tailFrac), avail/2)
	tailStart := len(hist)
	acc := 0
	for i := len(hist) - 1; i > headEnd; i-- {
		acc += messageTokens(hist[i])
		if acc > tailBudget && tailStart < len(hist) {
			break
		}
		if isCut(hist, i) {
			tailStart = i
		}
	}
	// Keep the latest user message (this turn's question) whole when it fits.
	if lu := lastUser(hist); lu > headEnd && lu < tailStart &&
		in.Fixed+EstimateTokens(hist[:headEnd])+EstimateTokens(hist[lu:])+reserve+8 <= budget {
		tailStart = lu
	}
	if tailStart <= headEnd || tailStart >= len(hist) {
		h.log().Warn("history exceeds the token budget but has no middle to compress", "session_id", in.SessionID,
			"budget", budget, "messages", len(hist))
		return hist, nil
	}
	var previous, prevSalvage string
	from := headEnd
	if prev := st.rec; prev != nil && prev.HeadEnd == headEnd && prev.Upto <= tailStart && prev.Upto >= headEnd {
		previous, prevSalvage, from = prev.Summary, prev.Salvage, prev.Upto
	}
	dropped := hist[from:tailStart]
	var fails []Failure
	var salvage string
	if h.External != nil && len(dropped) > 0 {
		salvage, fails = h.External.PreCompressAll(ctx, in.SessionID, in.Enabled, dropped)
	}
	salvage = mergeSalvage(prevSalvage, salvage, reserve/3)
	summary := h.summarize(ctx, in.SessionID, previous, dropped, &fails)
	summary = clipTokens(summary, reserve-EstimateTextTokens(salvage)-40)
	rec := &store.HistoryCompression{SessionID: in.SessionID, HeadEnd: headEnd, Upto: tailStart, Summary: summary, Salvage: salvage}
	if h.DB != nil {
		if err := h.DB.SaveHistoryCompression(context.WithoutCancel(ctx), *rec); err != nil {
			h.log().Warn("history compression not saved", "session_id", in.SessionID, "error", err)
		}
	}
	st.rec, st.loaded = rec, true
	v, _ := apply(rec, hist)
	h.log().Info("history compressed", "session_id", in.SessionID, "head", headEnd, "dropped", tailStart-headEnd,
		"tail", len(hist)-tailStart, "tokens_before", in.Fixed+EstimateTokens(hist), "tokens_after", in.Fixed+EstimateTokens(v))
	return v, fails
}

func (h *HistoryCompressor) summarize(ctx context.Context, sessionID, previous string, dropped []llm.Message, fails *[]Failure) string {
	if h.Summarizer == nil {
		s, _ := HeuristicHistorySummarizer{}.SummarizeHistory(ctx, previous, dropped)
		return s
	}
	d := h.SummarizerTimeout
	if d <= 0 {
		d = 60 * time.Second
	}
	sctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	s, err := h.Summarizer.SummarizeHistory(sctx, previous, dropped)
	if err == nil && strings.TrimSpace(s) != "" {
		return s
	}
	if err == nil {
		err = fmt.Errorf("the summarizer returned an empty summary")
	}
	// Loud: the failure is reported; the compression still has to happen,
	// so the heuristic summary is used and says so.
	f := Failure{Provider: "summarizer", Operation: "compress", Err: err, Timeout: sctx.Err() != nil}
	h.log().Warn("history summarizer failed; heuristic summary used", "session_id", sessionID, "error", err)
	*fails = append(*fails, f)
	s, _ = HeuristicHistorySummarizer{}.SummarizeHistory(ctx, previous, dropped)
	return s
}

func (h *HistoryCompressor) log() *slog.Logger {
	if h.Log != nil {
		return h.Log
	}
	return slog.Default()
}

// SummaryMessage is the message that stands in for compressed history:
// the summary, then what external memory salvaged before compression.
func SummaryMessage(summary, salvage string) llm.Message {
	text := "<conversation-summary>\nEarlier messages of this conversation were compressed into this summary:\n" + strings.TrimSpace(summary)
	if salvage = strings.TrimSpace(salvage); salvage != "" {
		text += "\n\nSaved by external memory before compression:\n" + salvage
	}
	return llm.Message{Role: llm.RoleUser, Content: text + "\n</conversation-summary>"}
}

// salvageSection is one provider's part of the salvage: "[name]" and lines.
type salvageSection struct {
	name  string
	lines []string
}

// mergeSalvage folds next (PreCompressAll's answer) into prev (the salvage
// of earlier compressions), provider by provider, leaving out lines a
// provider already gave, and keeps the result within maxTokens by dropping
// the oldest lines of the longest sections first.
func mergeSalvage(prev, next string, maxTokens int) string {
	secs := parseSalvage(prev)
	for _, n := range parseSalvage(next) {
		i := slices.IndexFunc(secs, func(s salvageSection) bool { return s.name == n.name })
		if i < 0 {
			secs = append(secs, salvageSection{name: n.name})
			i = len(secs) - 1
		}
		for _, l := range n.lines {
			if !slices.Contains(secs[i].lines, l) {
				secs[i].lines = append(secs[i].lines, l)
			}
		}
	}
	render := func() string {
		parts := make([]string, 0, len(secs))
		for _, s := range secs {
			if len(s.lines) > 0 {
				parts = append(parts, "["+s.name+"]\n"+strings.Join(s.lines, "\n"))
			}
		}
		return strings.Join(parts, "\n\n")
	}
	out := render()
	for EstimateTextTokens(out) > maxTokens {
		longest := -1
		for i, s := range secs {
			if len(s.lines) > 1 && (longest < 0 || len(s.lines) > len(secs[longest].lines)) {
				longest = i
			}
		}
		if longest < 0 {
			return clipTokens(out, maxTokens)
		}
		secs[longest].lines = secs[longest].lines[1:]
		out = render()
	}
	return out
}

func parseSalvage(text string) []salvageSection {
	var out []salvageSection
	for _, l := range strings.Split(text, "\n") {
		t := strings.TrimSpace(l)
		switch {
		case t == "":
		case strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]") && !strings.Contains(t, " "):
			out = append(out, salvageSection{name: t[1 : len(t)-1]})
		case len(out) == 0:
			out = append(out, salvageSection{name: "memory", lines: []string{l}})
		default:
			out[len(out)-1].lines = append(out[len(out)-1].lines, l)
		}
	}
	return out
}

// clipTokens shortens s to about n tokens, dropping its oldest (first)
// lines, then cutting the last one.
func clipTokens(s string, n int) string {
	if n <= 0 {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for len(lines) > 1 && EstimateTextTokens(strings.Join(lines, "\n")) > n {
		lines = lines[1:]
	}
	out := strings.Join(lines, "\n")
	for EstimateTextTokens(out) > n {
		r := []rune(out)
		out = string(r[:len(r)*3/4])
	}
	return out
}

// apply builds the compressed view of hist from rec, if rec still fits hist.
func apply(rec *store.HistoryCompression, hist []llm.Message) ([]llm.Message, bool) {
	if rec == nil || rec.HeadEnd < 0 || rec.HeadEnd > rec.Upto || rec.Upto > len(hist) ||
		(rec.Upto < len(hist) && !isCut(hist, rec.Upto)) || (rec.HeadEnd < len(hist) && !isCut(hist, rec.HeadEnd)) {
		return nil, false
	}
	v := make([]llm.Message, 0, rec.HeadEnd+1+len(hist)-rec.Upto)
	v = append(v, hist[:rec.HeadEnd]...)
	v = append(v, SummaryMessage(rec.Summary, rec.Salvage))
	v = append(v, hist[rec.Upto:]...)
	return v, true
}

// isCut reports whether a cut may fall just before hist[i]: never before a
// tool result, which belongs to the assistant message before it.
func isCut(hist []llm.Message, i int) bool {
	return i > 0 && i < len(hist) && hist[i].Role != llm.RoleTool
}

// nextCut is the first cut at or after i.
func nextCut(hist []llm.Message, i int) int {
	for ; i < len(hist); i++ {
		if isCut(hist, i) {
			return i
		}
	}
	return len(hist)
}

// firstTurnsEnd is where the first n turns end: before the (n+1)th user
// message.
func firstTurnsEnd(hist []llm.Message, n int) int {
	users := 0
	for i, m := range hist {
		if m.Role == llm.RoleUser {
			users++
			if users == n+1 {
				return i
			}
		}
	}
	return len(hist)
}

func lastUser(hist []llm.Message) int {
	for i := len(hist) - 1; i >= 0; i-- {
		if hist[i].Role == llm.RoleUser {
			return i
		}
	}
	return -1
}

// EstimateTokens estimates the tokens of msgs as a provider would count
// them: about four bytes per token for ASCII text, a token per other
// character (CJK text is close to one token a character), and a few tokens
// of framing per message.
func EstimateTokens(msgs []llm.Message) int {
	n := 0
	for _, m := range msgs {
		n += messageTokens(m)
	}
	return n
}

func messageTokens(m llm.Message) int {
	n := 4 + EstimateTextTokens(m.Content)
	for _, c := range m.ToolCalls {
		n += 4 + EstimateTextTokens(c.Name) + EstimateTextTokens(c.Arguments)
	}
	return n
}

// EstimateTextTokens estimates the tokens of s (see EstimateTokens).
func EstimateTextTokens(s string) int {
	ascii, other := 0, 0
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			ascii++
			i++
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		other++
		i += size
	}
	return (ascii+3)/4 + other
}

// HeuristicHistorySummarizer summarises compressed messages without a model
// call: one line per user message and per assistant answer (clipped), the
// tools that were called, and the previous summary kept in front. It is
// bounded to MaxRunes (default 4000), keeping the newest lines.
type HeuristicHistorySummarizer struct {
	MaxRunes int
}

// SummarizeHistory implements HistorySummarizer.
func (s HeuristicHistorySummarizer) SummarizeHistory(_ context.Context, previous string, dropped []llm.Message) (string, error) {
	limit := s.MaxRunes
	if limit <= 0 {
		limit = 4000
	}
	var lines []string
	if p := strings.TrimSpace(previous); p != "" {
		lines = append(lines, strings.Split(p, "\n")...)
	}
	var toolsUsed []string
	flushTools := func() {
		if len(toolsUsed) > 0 {
			lines = append(lines, "- tools called: "+strings.Join(toolsUsed, ", "))
			toolsUsed = nil
		}
	}
	for _, m := range dropped {
		switch m.Role {
		case llm.RoleUser:
			flushTools()
			lines = append(lines, "- user: "+clip(oneLine(m.Content), 160))
		case llm.RoleAssistant:
			for _, c := range m.ToolCalls {
				toolsUsed = append(toolsUsed, c.Name)
			}
			if m.Content != "" {
				flushTools()
				lines = append(lines, "- assistant: "+clip(oneLine(m.Content), 160))
			}
		}
	}
	flushTools()
	out := strings.Join(lines, "\n")
	for utf8.RuneCountInString(out) > limit && len(lines) > 1 {
		lines = lines[1:]
		out = strings.Join(lines, "\n")
	}
	return clip(out, limit), nil
}

// LLMHistorySummarizer summarises compressed messages with a model call.
type LLMHistorySummarizer struct {
	Provider llm.Provider
	Model    string
	// MaxTokens bounds the summary (default 800).
	MaxTokens int
}

// SummarizeHistory implements HistorySummarizer.
func (s LLMHistorySummarizer) SummarizeHistory(ctx context.Context, previous string, dropped []llm.Message) (string, error) {
	var b strings.Builder
	if previous != "" {
		b.WriteString("Summary so far:\n" + previous + "\n\nNew messages to fold into it:\n")
	}
	for _, m := range dropped {
		switch {
		case m.Role == llm.RoleTool:
			fmt.Fprintf(&b, "[tool %s result] %s\n", m.Name, clip(oneLine(m.Content), 400))
		case len(m.ToolCalls) > 0:
			for _, c := range m.ToolCalls {
				fmt.Fprintf(&b, "[assistant called %s] %s\n", c.Name, clip(oneLine(c.Arguments), 200))
			}
			if m.Content != "" {
				fmt.Fprintf(&b, "[assistant] %s\n", clip(oneLine(m.Content), 1000))
			}
		default:
			fmt.Fprintf(&b, "[%s] %s\n", m.Role, clip(oneLine(m.Content), 1000))
		}
	}
	maxTokens := s.MaxTokens
	if maxTokens <= 0 {
		maxTokens = 800
	}
	resp, err := s.Provider.Chat(ctx, &llm.Request{
		Model: s.Model,
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "You compress the middle of a conversation between a user and an AI agent so that the agent can continue it. " +
				"Write a concise summary in the conversation's language: the user's goals and requests, decisions, facts learned (including tool results that still matter), " +
				"and open questions. Use short bullet points. Do not invent anything."},
			{Role: llm.RoleUser, Content: b.String()},
		},
		Params: llm.GenerationParams{MaxTokens: &maxTokens},
	}, nil)
	if err != nil {
		return "", fmt.Errorf("summarizer: %w", err)
	}
	return strings.TrimSpace(resp.Content), nil
}
