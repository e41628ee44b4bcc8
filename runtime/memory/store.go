// Package memory owns the Memory domain: session memory (the MemoryStore
// facade that hides SQLite from the loop, the rolling HeuristicSummarizer,
// background title generation), the ExternalMemoryManager that routes
// external memory to the providers of runtime/memory/<provider>, and the
// HistoryCompressor that keeps requests within their token budget.
package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nagent/nagent/runtime/llm"
	"github.com/nagent/nagent/store"
)

// Task statuses.
const (
	StatusRunning   = "running"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// MemoryStore is the session-memory facade the loop writes through. Each
// method is one step of a turn and writes in one transaction.
type MemoryStore struct {
	db         *store.DB
	summarizer Summarizer
	titler     Titler
	log        *slog.Logger

	titles sync.WaitGroup
}

// Summarizer rewrites the rolling summary from the previous one and the
// session's messages.
type Summarizer interface {
	Summarize(ctx context.Context, previous string, history []llm.Message) (string, error)
}

// Titler names a session from its first user message.
type Titler interface {
	Title(ctx context.Context, firstMessage string) (string, error)
}

// NewMemoryStore returns a facade over db. A nil summarizer means the
// heuristic one. A nil titler means the heuristic title, written in the
// turn's first transaction; any other Titler runs in the background, so a
// slow one (a model call) never blocks a turn.
func NewMemoryStore(db *store.DB, summarizer Summarizer, titler Titler, log *slog.Logger) *MemoryStore {
	if summarizer == nil {
		summarizer = HeuristicSummarizer{}
	}
	if log == nil {
		log = slog.Default()
	}
	return &MemoryStore{db: db, summarizer: summarizer, titler: titler, log: log}
}

// DB exposes the underlying store for read-side queries.
func (m *MemoryStore) DB() *store.DB { return m.db }

// TurnStart says what a turn starts with.
type TurnStart struct {
	SessionID string
	Source    string
	// ExternalMemory is the requested external-memory selection; the first
	// turn of a session locks it.
	ExternalMemory []string
	// Input holds the new user messages of this turn (may be empty when a
	// turn continues after client-side tool results, which are in Input too).
	Input []llm.Message
}

// BeginTurn creates the session if needed, locks its external-memory
// selection, appends the input messages and marks the task running, in one
// transaction. A new session gets its title from the first user message. It
// returns the external-memory selection in force.
func (m *MemoryStore) BeginTurn(ctx context.Context, t TurnStart) ([]string, error) {
	var first string
	for _, msg := range t.Input {
		if msg.Role == llm.RoleUser && msg.Content != "" {
			first = msg.Content
			break
		}
	}
	var title string
	if m.titler == nil {
		title, _ = HeuristicTitler{}.Title(ctx, first)
	}
	var locked []string
	var created bool
	err := m.db.Update(ctx, func(tx *store.Tx) error {
		var err error
		if created, err = tx.CreateSession(ctx, store.Session{ID: t.SessionID, Source: t.Source, Title: title}); err != nil {
			return err
		}
		if locked, err = tx.LockExternalMemory(ctx, t.SessionID, t.ExternalMemory); err != nil {
			return err
		}
		if err := tx.AppendMessages(ctx, t.SessionID, toStore(t.Input, "")...); err != nil {
			return err
		}
		return tx.SaveTaskState(ctx, store.TaskState{SessionID: t.SessionID, Status: StatusRunning})
	})
	if err != nil {
		return nil, fmt.Errorf("memory.BeginTurn: %w", err)
	}
	if created && m.titler != nil && first != "" {
		m.ensureTitle(t.SessionID, first)
	}
	return locked, nil
}

// ensureTitle sets the session title in the background; it never blocks a turn.
func (m *MemoryStore) ensureTitle(sessionID, first string) {
	m.titles.Add(1)
	go func() {
		defer m.titles.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		title, err := m.titler.Title(ctx, first)
		if err == nil && title != "" {
			err = m.db.Update(ctx, func(tx *store.Tx) error { return tx.SetTitle(ctx, sessionID, title) })
		}
		if err != nil {
			m.log.Warn("session title not set", "session_id", sessionID, "error", err)
		}
	}()
}

// Wait blocks until background title generation has finished.
func (m *MemoryStore) Wait() { m.titles.Wait() }

// History returns the session's messages in order and its rolling summary.
func (m *MemoryStore) History(ctx context.Context, sessionID string) ([]llm.Message, string, error) {
	rows, err := m.db.ListMessages(ctx, sessionID)
	if err != nil {
		return nil, "", fmt.Errorf("memory.History: %w", err)
	}
	out := make([]llm.Message, 0, len(rows))
	for _, r := range rows {
		msg := llm.Message{
			Role: llm.Role(r.Role), Content: r.Content, ToolCallID: r.ToolCallID,
			Name: r.Name, ReasoningContent: r.ReasoningContent,
		}
		if len(r.ToolCalls) > 0 {
			if err := json.Unmarshal(r.ToolCalls, &msg.ToolCalls); err != nil {
				return nil, "", fmt.Errorf("memory.History: message %d: %w", r.Seq, err)
			}
		}
		out = append(out, msg)
	}
	sum, err := m.db.GetSummary(ctx, sessionID)
	if err != nil {
		return nil, "", fmt.Errorf("memory.History: %w", err)
	}
	var summary string
	if sum != nil {
		summary = sum.Content
	}
	return out, summary, nil
}

// ToolRecord is the persisted fact of one tool execution.
type ToolRecord struct {
	ID         string
	Name       string
	Arguments  string
	Status     string
	Result     string
	Error      string
	DurationMS int64
}

// ToolRound is everything one execute_tools step produced.
type ToolRound struct {
	SessionID string
	// Assistant is the model message that asked for the tools.
	Assistant llm.Message
	Records   []ToolRecord
	// Results are the role=tool messages, in call order.
	Results   []llm.Message
	Iteration int
	// History is the session's messages after this round, for the summary.
	History         []llm.Message
	PreviousSummary string
}

// SaveToolRound persists one tool round in one transaction: the tool-call
// records, the assistant message with its tool calls, the tool messages, the
// running task state and the new rolling summary. It returns the summary.
func (m *MemoryStore) SaveToolRound(ctx context.Context, r ToolRound) (string, error) {
	summary := m.summarize(ctx, r.PreviousSummary, r.History)
	err := m.db.Update(ctx, func(tx *store.Tx) error {
		for _, rec := range r.Records {
			if err := tx.SaveToolCall(ctx, store.ToolCall{
				SessionID: r.SessionID, ID: rec.ID, Name: rec.Name, Arguments: rec.Arguments,
				Status: rec.Status, Result: rec.Result, Error: rec.Error, DurationMS: rec.DurationMS,
			}); err != nil {
				return err
			}
		}
		msgs := append([]llm.Message{r.Assistant}, r.Results...)
		if err := tx.AppendMessages(ctx, r.SessionID, toStore(msgs, "")...); err != nil {
			return err
		}
		if err := tx.SaveTaskState(ctx, store.TaskState{SessionID: r.SessionID, Status: StatusRunning, IterationCount: r.Iteration}); err != nil {
			return err
		}
		return tx.SaveSummary(ctx, r.SessionID, summary)
	})
	if err != nil {
		return "", fmt.Errorf("memory.SaveToolRound: %w", err)
	}
	return summary, nil
}

// TurnEnd is what finalize persists.
type TurnEnd struct {
	SessionID string
	// Final is the last assistant message, or nil when there is none to keep.
	Final *llm.Message
	// MessageStatus marks Final as kept from an incomplete turn ("cancelled", "error").
	MessageStatus   string
	Status          string
	Iteration       int
	Error           string
	History         []llm.Message
	PreviousSummary string
	// Freeze, when set, is the external-memory snapshot this turn took; it
	// is frozen for the session in the same transaction.
	Freeze *SnapshotFreeze
}

// Finalize appends the final (or error) assistant message, overwrites the
// summary, freezes a new external-memory snapshot and saves the final task
// state, in one transaction.
func (m *MemoryStore) Finalize(ctx context.Context, e TurnEnd) error {
	summary := m.summarize(ctx, e.PreviousSummary, e.History)
	err := m.db.Update(ctx, func(tx *store.Tx) error {
		if e.Final != nil {
			if err := tx.AppendMessages(ctx, e.SessionID, toStore([]llm.Message{*e.Final}, e.MessageStatus)...); err != nil {
				return err
			}
		}
		if err := tx.SaveSummary(ctx, e.SessionID, summary); err != nil {
			return err
		}
		if e.Freeze != nil {
			if err := tx.FreezeMemorySnapshot(ctx, *e.Freeze); err != nil {
				return err
			}
		}
		return tx.SaveTaskState(ctx, store.TaskState{SessionID: e.SessionID, Status: e.Status, IterationCount: e.Iteration, Error: e.Error})
	})
	if err != nil {
		return fmt.Errorf("memory.Finalize: %w", err)
	}
	return nil
}

func (m *MemoryStore) summarize(ctx context.Context, previous string, history []llm.Message) string {
	s, err := m.summarizer.Summarize(ctx, previous, history)
	if err != nil {
		m.log.Warn("summary not updated", "error", err)
		return previous
	}
	return s
}

func toStore(msgs []llm.Message, status string) []*store.Message {
	out := make([]*store.Message, len(msgs))
	for i, msg := range msgs {
		sm := &store.Message{
			Role: string(msg.Role), Content: msg.Content, ToolCallID: msg.ToolCallID,
			Name: msg.Name, ReasoningContent: msg.ReasoningContent, Status: status,
		}
		if len(msg.ToolCalls) > 0 {
			sm.ToolCalls, _ = json.Marshal(msg.ToolCalls)
		}
		out[i] = sm
	}
	return out
}
