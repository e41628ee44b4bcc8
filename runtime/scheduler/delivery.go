package scheduler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/nagent/nagent/runtime/errs"
	"github.com/nagent/nagent/store"
)

// Delivery kinds: where a schedule's result goes.
const (
	DeliverNone    = "none"
	DeliverWebhook = "webhook" // POST JSON (Payload) to a URL
	DeliverInbox   = "inbox"   // a row in the dashboard inbox
	DeliverFeishu  = "feishu"  // a text message to a Feishu chat, through the registered ChatSender
)

// ChatSender sends a text message to a chat of a chat platform. The Feishu
// adapter registers one with ScheduleOutboundDelivery.SetChatSender.
type ChatSender interface {
	SendText(ctx context.Context, chatID, text string) error
}

// Payload is the JSON body POSTed to a webhook target.
type Payload struct {
	ScheduleID   string    `json:"schedule_id"`
	ScheduleName string    `json:"schedule_name"`
	RunID        string    `json:"run_id"`
	SessionID    string    `json:"session_id"`
	Trigger      string    `json:"trigger"`
	Status       string    `json:"status"`
	Content      string    `json:"content"`
	Error        string    `json:"error,omitempty"`
	ScheduledFor time.Time `json:"scheduled_for"`
	FinishedAt   time.Time `json:"finished_at"`
}

// ParseTarget reads a delivery target as the CLI writes it: "" or "none",
// "inbox", "webhook:URL" (or just an http(s) URL) and "feishu:CHAT_ID". It
// returns the kind and the target.
func ParseTarget(s string) (kind, target string, err error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "" || s == DeliverNone:
		return DeliverNone, "", nil
	case s == DeliverInbox:
		return DeliverInbox, "", nil
	case strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://"):
		return ParseTarget("webhook:" + s)
	case strings.HasPrefix(s, "webhook:"):
		raw := strings.TrimPrefix(s, "webhook:")
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "", "", errs.Errorf(errs.EINVALID, "webhook target %q: give an http or https URL, e.g. webhook:https://example.com/hook", raw)
		}
		return DeliverWebhook, raw, nil
	case strings.HasPrefix(s, "feishu:"):
		chat := strings.TrimPrefix(s, "feishu:")
		if chat == "" {
			return "", "", errs.Errorf(errs.EINVALID, "feishu target: give the chat id, e.g. feishu:oc_0123456789abcdef")
		}
		return DeliverFeishu, chat, nil
	}
	return "", "", errs.Errorf(errs.EINVALID, "delivery target %q: use inbox, webhook:URL or feishu:CHAT_ID", s)
}

// FormatTarget is the inverse of ParseTarget.
func FormatTarget(kind, target string) string {
	switch kind {
	case DeliverWebhook, DeliverFeishu:
		return kind + ":" + target
	case "":
		return DeliverNone
	}
	return kind
}

// permanentError is a delivery failure that retrying cannot fix.
type permanentError struct{ error }

func (e permanentError) Unwrap() error { return e.error }

// ScheduleOutboundDelivery sends a finished run's result to its schedule's
// target, retrying with exponential backoff. Every attempt is recorded on
// the run (delivery_attempts, delivery_error); a delivery that finally fails
// is recorded as failed, never as delivered.
type ScheduleOutboundDelivery struct {
	DB         *store.DB
	HTTPClient *http.Client
	// MaxAttempts bounds the attempts of one delivery (default 5).
	MaxAttempts int
	// BaseDelay is the wait after the first failure; it doubles each time
	// up to MaxDelay (defaults 2s and 1m).
	BaseDelay, MaxDelay time.Duration
	// Timeout bounds one attempt (default 10s).
	Timeout time.Duration
	Log     *slog.Logger

	mu   sync.RWMutex
	chat ChatSender
}

// SetChatSender registers the sender of feishu deliveries; nil removes it.
func (d *ScheduleOutboundDelivery) SetChatSender(s ChatSender) {
	d.mu.Lock()
	d.chat = s
	d.mu.Unlock()
}

func (d *ScheduleOutboundDelivery) chatSender() ChatSender {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.chat
}

// Deliver sends run's result to s's target and records the outcome on the
// run. It returns the final delivery status (delivered or failed) and the
// last error.
func (d *ScheduleOutboundDelivery) Deliver(ctx context.Context, s store.Schedule, run store.ScheduleRun) (string, error) {
	attempts := max(d.MaxAttempts, 1)
	if d.MaxAttempts == 0 {
		attempts = 5
	}
	delay := d.BaseDelay
	if delay <= 0 {
		delay = 2 * time.Second
	}
	maxDelay := d.MaxDelay
	if maxDelay <= 0 {
		maxDelay = time.Minute
	}
	var err error
	for n := 1; ; n++ {
		err = d.attempt(ctx, s, run)
		status := store.DeliveryPending
		switch {
		case err == nil:
			status = store.DeliveryDelivered
		case n >= attempts, errors.As(err, new(permanentError)), ctx.Err() != nil:
			status = store.DeliveryFailed
		}
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if rerr := d.DB.UpdateRunDelivery(context.WithoutCancel(ctx), run.ID, status, n, msg); rerr != nil {
			return store.DeliveryFailed, errors.Join(err, rerr)
		}
		if status != store.DeliveryPending {
			if err != nil {
				d.log().Warn("schedule delivery failed", "schedule", s.Name, "run_id", run.ID,
					"target", s.DeliveryKind, "attempts", n, "err", err)
			}
			return status, err
		}
		d.log().Info("schedule delivery failed; retrying", "schedule", s.Name, "run_id", run.ID,
			"attempt", n, "retry_in", delay, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
		delay = min(delay*2, maxDelay)
	}
}

func (d *ScheduleOutboundDelivery) attempt(ctx context.Context, s store.Schedule, run store.ScheduleRun) error {
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch s.DeliveryKind {
	case DeliverWebhook:
		return d.webhook(ctx, s, run)
	case DeliverInbox:
		_, err := d.DB.AddInboxMessage(ctx, store.InboxMessage{
			ScheduleID: s.ID, ScheduleName: s.Name, RunID: run.ID, SessionID: run.SessionID,
			Status: run.Status, Content: resultText(run),
		})
		return err
	case DeliverFeishu:
		sender := d.chatSender()
		if sender == nil {
			return permanentError{errors.New("no Feishu chat sender is registered: feishu delivery needs `nagent serve` with the Feishu adapter configured")}
		}
		return sender.SendText(ctx, s.DeliveryTarget, fmt.Sprintf("[%s] %s", s.Name, resultText(run)))
	}
	return permanentError{fmt.Errorf("unknown delivery kind %q", s.DeliveryKind)}
}

// resultText is what a chat or the inbox shows of a run.
func resultText(run store.ScheduleRun) string {
	if run.Status == store.RunCompleted {
		return run.Content
	}
	if run.Error != "" {
		return "run " + run.Status + ": " + run.Error
	}
	return "run " + run.Status
}

func (d *ScheduleOutboundDelivery) webhook(ctx context.Context, s store.Schedule, run store.ScheduleRun) error {
	p := Payload{
		ScheduleID: s.ID, ScheduleName: s.Name, RunID: run.ID, SessionID: run.SessionID, Trigger: run.Trigger,
		Status: run.Status, Content: run.Content, Error: run.Error, ScheduledFor: run.ScheduledFor,
	}
	if run.FinishedAt != nil {
		p.FinishedAt = *run.FinishedAt
	}
	body, _ := json.Marshal(p)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.DeliveryTarget, bytes.NewReader(body))
	if err != nil { // err quotes the whole URL
		return permanentError{fmt.Errorf("webhook: %s is not a valid URL; fix the schedule's target", redactURL(s.DeliveryTarget))}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "nagent-scheduler")
	req.Header.Set("X-Nagent-Run-Id", run.ID) // lets a receiver drop a retried duplicate
	client := d.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // its message holds the whole URL
		}
		return fmt.Errorf("webhook: POST %s: %w", redactURL(s.DeliveryTarget), err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 == 2 {
		return nil
	}
	err = fmt.Errorf("webhook: %s answered %s", redactURL(s.DeliveryTarget), resp.Status)
	if resp.StatusCode/100 == 4 && resp.StatusCode != http.StatusRequestTimeout && resp.StatusCode != http.StatusTooManyRequests {
		return permanentError{err}
	}
	return err
}

// redactURL keeps the scheme and host only: webhook paths and queries
// often carry tokens.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "the webhook"
	}
	return u.Scheme + "://" + u.Host + "/…"
}

func (d *ScheduleOutboundDelivery) log() *slog.Logger {
	if d.Log != nil {
		return d.Log
	}
	return slog.Default()
}
