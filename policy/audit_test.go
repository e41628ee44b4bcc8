package policy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nagent/nagent/policy"
	"github.com/nagent/nagent/runtime/tools"
	"github.com/nagent/nagent/store"
)

func mustOpenDB(tb testing.TB) *store.DB {
	tb.Helper()
	db, err := store.Open(context.Background(), filepath.Join(tb.TempDir(), "nagent.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

var redactTests = []struct {
	name, in, want string
}{
	{"Empty", ``, `{}`},
	{"Plain", `{"timezone":"UTC"}`, `{"timezone":"UTC"}`},
	{"SecretKeys", `{"api_key":"k1","Password":"p","authToken":"t","user":"ann"}`,
		`{"Password":"[REDACTED]","api_key":"[REDACTED]","authToken":"[REDACTED]","user":"ann"}`},
	{"Nested", `{"headers":[{"Authorization":"Bearer abc"},{"accept":"json"}],"db":{"credentials":{"u":"x"}}}`,
		`{"db":{"credentials":"[REDACTED]"},"headers":[{"Authorization":"[REDACTED]"},{"accept":"json"}]}`},
	{"SecretValues", `{"note":"Bearer eyJabc","cmd":"curl -H x","k":["sk-abcdefghijklmnopqrstuv"]}`,
		`{"cmd":"curl -H x","k":["[REDACTED]"],"note":"[REDACTED]"}`},
	{"SecretValueUnderInnocentKey", `{"items":["sk-abcdefghijklmnopqrstuv", "AKIAABCDEFGHIJKLMNOP"]}`,
		`{"items":["[REDACTED]","[REDACTED]"]}`},
	{"NotJSON", `{"x":`, `"[unparseable arguments not stored]"`},
	{"Numbers", `{"n":12345678901234567890,"f":1.5}`, `{"f":1.5,"n":12345678901234567890}`},
}

func TestRedactArguments(t *testing.T) {
	for _, tt := range redactTests {
		t.Run(tt.name, func(t *testing.T) {
			if got := policy.RedactArguments([]byte(tt.in)); !jsonEqual(got, []byte(tt.want)) {
				t.Errorf("RedactArguments(%s) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
	t.Run("Capped", func(t *testing.T) {
		long := strings.Repeat("x", 10000)
		got := policy.RedactArguments([]byte(`{"a":"` + long + `"}`))
		if len(got) > 400 || !json.Valid(got) || !strings.Contains(string(got), "more bytes") {
			t.Errorf("one long string: %d bytes, %.80s", len(got), got)
		}
		var many []string
		for i := range 200 {
			many = append(many, fmt.Sprintf(`"k%d":"%s"`, i, strings.Repeat("y", 200)))
		}
		got = policy.RedactArguments([]byte("{" + strings.Join(many, ",") + "}"))
		if len(got) > 4096 || !json.Valid(got) {
			t.Errorf("large document: %d bytes, valid %t", len(got), json.Valid(got))
		}
	})
}

// TestAuditTrail: every call decision is recorded, redacted, with its
// revision and timing; expose decisions are not.
func TestAuditTrail(t *testing.T) {
	db := mustOpenDB(t)
	dir := t.TempDir()
	writeFile(t, dir, "data.yaml", "nagent:\n  tool_limits:\n    fetch_url: {timeout_ms: 1500}\n")
	e := MustNewEngine(t, policy.Options{Dir: dir, Audit: db})
	ctx := context.Background()

	fetch := tools.ToolDefinition{Name: "fetch_url", SourceType: tools.SourceMCP, RiskLevel: tools.RiskLow}
	mustDecide(t, e, exposeInput(fetch))
	mustDecide(t, e, callInput(fetch, `{"url":"https://example.com","headers":{"Authorization":"Bearer s3cr3t"}}`))
	email := tools.ToolDefinition{Name: "send_email", SourceType: tools.SourceMCP, RiskLevel: tools.RiskHigh}
	cron := callInput(email, `{"to":"ops@example.com","password":"hunter2"}`)
	cron.Exec.SessionID, cron.Exec.AgentContext = "s2", tools.AgentCron
	mustDecide(t, e, cron)
	if err := e.Close(); err != nil { // flushes
		t.Fatal(err)
	}

	recs, err := db.ListPolicyDecisions(ctx, store.PolicyDecisionFilter{})
	if err != nil || len(recs) != 2 {
		t.Fatalf("audit records = %d, %v; want the 2 calls only", len(recs), err)
	}
	denied, allowed := recs[0], recs[1]
	if denied.SessionID != "s2" || denied.Tool != "send_email" || denied.Phase != "call" || denied.Allow ||
		len(denied.Reasons) != 1 || !strings.Contains(denied.Reasons[0], "no human can answer") {
		t.Errorf("denied record = %+v", denied)
	}
	if strings.Contains(string(denied.Arguments), "hunter2") || !strings.Contains(string(denied.Arguments), "ops@example.com") {
		t.Errorf("denied record arguments = %s", denied.Arguments)
	}
	if !allowed.Allow || allowed.Revision != e.Revision() || allowed.EvalMicros < 0 || !allowed.CreatedAt.Equal(benchNow) ||
		string(allowed.Constraints) != `{"timeout_ms":1500}` || strings.Contains(string(allowed.Arguments), "s3cr3t") {
		t.Errorf("allowed record = %+v, arguments %s", allowed, allowed.Arguments)
	}

	// After Close, decisions are still recorded, synchronously.
	mustDecide(t, e, callInput(fetch, `{}`))
	if recs, _ := db.ListPolicyDecisions(ctx, store.PolicyDecisionFilter{}); len(recs) != 3 {
		t.Errorf("records after Close = %d, want 3", len(recs))
	}
}

// TestAuditLosesNothingOnClose: a burst of concurrent calls, then Close;
// every decision is in the table.
func TestAuditLosesNothingOnClose(t *testing.T) {
	db := mustOpenDB(t)
	e := MustNewEngine(t, policy.Options{Audit: db})
	const workers, each = 8, 300
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				in := callInput(clock, fmt.Sprintf(`{"n":%d}`, i))
				in.Exec.SessionID = fmt.Sprintf("w%d", w)
				if _, err := e.Decide(context.Background(), in); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	e.Close()
	recs, err := db.ListPolicyDecisions(context.Background(), store.PolicyDecisionFilter{Limit: 100000})
	if err != nil || len(recs) != workers*each {
		t.Fatalf("records = %d, %v; want %d", len(recs), err, workers*each)
	}
}

// BenchmarkDecideCallAudited is BenchmarkDecideCall with the audit trail on
// a real database: the call pays for queueing the record only.
func BenchmarkDecideCallAudited(b *testing.B) {
	db := mustOpenDB(b)
	e := MustNewEngine(b, policy.Options{Audit: db})
	in := callInput(tools.ToolDefinition{Name: "send_email", RiskLevel: tools.RiskHigh, SourceType: tools.SourceMCP},
		`{"to":"ops@example.com","subject":"nightly report","body":"all green","api_key":"k"}`)
	ctx := context.Background()
	var lat []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		_, err := e.Decide(ctx, in)
		lat = append(lat, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	e.Close()
	reportPercentiles(b, lat)
}

// TestEvaluationErrorsKeepSecrets: a failing built-in quotes its operand;
// when that is a secret argument, neither the error, the log nor the audit
// trail may hold it.
func TestEvaluationErrorsKeepSecrets(t *testing.T) {
	const secret = "sk-live-abcdefghijklmnopqrstuv"
	db := mustOpenDB(t)
	dir := t.TempDir()
	writeFile(t, dir, "n.rego", "package nagent.tools\n\ndeny contains \"x\" if to_number(input.args.api_key) > 0\n")
	var logs strings.Builder
	e := MustNewEngine(t, policy.Options{Dir: dir, Audit: db, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	d, err := e.Decide(context.Background(), callInput(clock, `{"api_key":"`+secret+`"}`))
	if err == nil || d.Allow {
		t.Fatalf("Decide = %+v, %v; want a denial", d, err)
	}
	e.Close()
	recs, _ := db.ListPolicyDecisions(context.Background(), store.PolicyDecisionFilter{})
	if len(recs) != 1 || recs[0].Error == "" {
		t.Fatalf("audit = %+v", recs)
	}
	for what, text := range map[string]string{
		"error": err.Error(), "reasons": strings.Join(d.Reasons, ";"), "log": logs.String(),
		"audit error": recs[0].Error, "audit arguments": string(recs[0].Arguments),
	} {
		if strings.Contains(text, secret) {
			t.Errorf("%s holds the secret: %s", what, text)
		}
	}
	if !strings.Contains(err.Error(), "to_number") || !strings.Contains(err.Error(), policy.Redacted) {
		t.Errorf("error = %v; want it to still say what failed", err)
	}
}
