package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/nagent/nagent/store"
)

// DecisionRecorder stores audit records; *store.DB implements it.
type DecisionRecorder interface {
	SavePolicyDecisions(ctx context.Context, ds []store.PolicyDecision) error
}

// Audit buffering: records queue in a channel and one goroutine writes them
// in batches, so recording costs a call about a channel send.
const (
	auditQueue    = 1024
	auditMaxBatch = 256
)

// Redaction limits for the arguments kept in the audit trail.
const (
	// Redacted replaces the value of a secret-looking key or string.
	Redacted = "[REDACTED]"
	// maxAuditString caps each string value.
	maxAuditString = 256
	// maxAuditArguments caps the whole arguments document.
	maxAuditArguments = 4096
)

var (
	// secretKey matches object keys whose values are never stored.
	secretKey = regexp.MustCompile(`(?i)secret|token|passw(or)?d|key|auth|credential|cookie|session_?id|private`)
	// secretValue matches string values that look like credentials
	// whatever their key: bearer tokens, API keys, JWTs, PEM blocks.
	secretValue = regexp.MustCompile(`(?i)^bearer\s|^basic\s|\bsk-[a-z0-9_-]{16,}|\bgh[pousr]_[a-z0-9]{20,}|\bAKIA[0-9A-Z]{16}\b|\bxox[abposr]-|^eyJ[a-zA-Z0-9_-]{8,}\.[a-zA-Z0-9_-]{8,}\.|-----BEGIN [A-Z ]*PRIVATE KEY-----`)
)

// pendingRecord is a record whose arguments are not yet redacted; the
// writer goroutine redacts them, off the call's path.
type pendingRecord struct {
	rec         store.PolicyDecision
	args        []byte
	constraints map[string]any
}

// auditLog writes audit records asynchronously and loses none on Close.
type auditLog struct {
	db   DecisionRecorder
	log  *slog.Logger
	ch   chan pendingRecord
	done chan struct{}

	mu     sync.RWMutex // held shared while sending; exclusively to close ch
	closed bool
}

func newAuditLog(db DecisionRecorder, log *slog.Logger) *auditLog {
	a := &auditLog{db: db, log: log, ch: make(chan pendingRecord, auditQueue), done: make(chan struct{})}
	go a.run()
	return a
}

// record queues one record. When the queue is full it waits for the writer
// rather than drop an audit record. After close it writes synchronously.
func (a *auditLog) record(rec store.PolicyDecision, args []byte, constraints map[string]any) {
	p := pendingRecord{rec: rec, args: bytes.Clone(args), constraints: constraints}
	a.mu.RLock()
	if !a.closed {
		a.ch <- p
		a.mu.RUnlock()
		return
	}
	a.mu.RUnlock()
	a.write([]pendingRecord{p})
}

func (a *auditLog) run() {
	defer close(a.done)
	batch := make([]pendingRecord, 0, auditMaxBatch)
	for p := range a.ch {
		batch = append(batch[:0], p)
	drain:
		for len(batch) < auditMaxBatch {
			select {
			case p, ok := <-a.ch:
				if !ok {
					break drain
				}
				batch = append(batch, p)
			default:
				break drain
			}
		}
		a.write(batch)
	}
}

// write redacts and stores a batch, retrying once.
func (a *auditLog) write(batch []pendingRecord) {
	recs := make([]store.PolicyDecision, len(batch))
	for i, p := range batch {
		recs[i] = p.rec
		recs[i].Arguments = RedactArguments(p.args)
		if len(p.constraints) > 0 {
			recs[i].Constraints, _ = json.Marshal(p.constraints)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := a.db.SavePolicyDecisions(ctx, recs)
	if err != nil {
		time.Sleep(50 * time.Millisecond)
		err = a.db.SavePolicyDecisions(ctx, recs)
	}
	if err != nil {
		a.log.Error("policy: audit records lost", "count", len(recs), "err", err)
	}
}

// close stops accepting queued records and waits until every queued
// record is written.
func (a *auditLog) close() {
	a.mu.Lock()
	if !a.closed {
		a.closed = true
		close(a.ch)
	}
	a.mu.Unlock()
	<-a.done
}

// RedactArguments returns the JSON arguments of a call as they are kept in
// the audit trail: the values of secret-looking keys (secret, token,
// password, key, auth, credential, cookie, session id, private) and
// credential-looking strings are replaced with Redacted at any depth,
// strings are capped at 256 bytes, and a document still over 4 KiB is
// replaced by a JSON string holding its truncated text. Arguments that are
// not JSON are not stored.
func RedactArguments(raw []byte) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage(`{}`)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return json.RawMessage(`"[unparseable arguments not stored]"`)
	}
	out, err := json.Marshal(redact(v))
	if err != nil {
		return json.RawMessage(`"[unencodable arguments not stored]"`)
	}
	text := string(out)
	for n := maxAuditArguments - 64; len(out) > maxAuditArguments && n > 0; n -= len(out) - maxAuditArguments + 16 {
		out, _ = json.Marshal(truncate(text, n)) // escaping grows it; cut again if needed
	}
	return out
}

func redact(v any) any { return redactInto(v, nil) }

// redactInto redacts v in place; every secret string it removes is added to
// *removed when removed is not nil.
func redactInto(v any, removed *[]string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if secretKey.MatchString(k) {
				collectStrings(e, removed)
				x[k] = Redacted
			} else {
				x[k] = redactInto(e, removed)
			}
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = redactInto(e, removed)
		}
		return x
	case string:
		if secretValue.MatchString(x) {
			collectStrings(x, removed)
			return Redacted
		}
		return truncate(x, maxAuditString)
	default:
		return v
	}
}

func collectStrings(v any, into *[]string) {
	if into == nil {
		return
	}
	switch x := v.(type) {
	case string:
		*into = append(*into, x)
	case json.Number:
		*into = append(*into, x.String())
	case map[string]any:
		for _, e := range x {
			collectStrings(e, into)
		}
	case []any:
		for _, e := range x {
			collectStrings(e, into)
		}
	}
}

// scrubSecrets removes from text (an evaluation error, which may quote the
// operands of a failing built-in) every value that RedactArguments would
// redact from args, so that logs and the audit trail never hold them.
func scrubSecrets(text string, args []byte) string {
	if len(args) == 0 {
		return text
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return text
	}
	var removed []string
	redactInto(v, &removed)
	for _, s := range removed {
		if len(s) >= 3 {
			text = strings.ReplaceAll(text, s, Redacted)
		}
	}
	return text
}

// secretSafeError is an error whose message has the call's secrets
// scrubbed; errors.Is and errors.As still see the original.
type secretSafeError struct {
	msg string
	err error
}

func (e *secretSafeError) Error() string { return e.msg }
func (e *secretSafeError) Unwrap() error { return e.err }

// truncate cuts s to at most n bytes on a rune boundary, saying how much
// was cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…[" + strconv.Itoa(len(s)-cut) + " more bytes]"
}
