package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nagent/nagent/store"
)

func TestPolicyDecisions(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	at := time.Date(2026, 6, 27, 15, 52, 6, 0, time.UTC)
	recs := []store.PolicyDecision{
		{CreatedAt: at, SessionID: "s1", Tool: "get_current_time", Phase: "call", Allow: true, Reasons: nil,
			Arguments: json.RawMessage(`{"timezone":"UTC"}`), Revision: "abc", EvalMicros: 21},
		{CreatedAt: at.Add(time.Second), SessionID: "s2", Tool: "send_email", Phase: "call", Allow: false,
			Reasons:   []string{"high-risk tool needs a human's confirmation, and no human can answer in a cron run"},
			Arguments: json.RawMessage(`{"to":"ops@example.com","token":"[REDACTED]"}`), Revision: "abc", EvalMicros: 30},
		{SessionID: "s1", Tool: "execute_code", Phase: "call", Allow: true, Confirm: false,
			Constraints: json.RawMessage(`{"timeout_ms":120000}`), Revision: "def", Error: ""},
	}
	if err := db.SavePolicyDecisions(ctx, recs); err != nil {
		t.Fatal(err)
	}

	all, err := db.ListPolicyDecisions(ctx, store.PolicyDecisionFilter{})
	if err != nil || len(all) != 3 {
		t.Fatalf("ListPolicyDecisions = %d, %v", len(all), err)
	}
	if all[0].Tool != "execute_code" || all[2].Tool != "get_current_time" {
		t.Errorf("order = %s, %s, %s; want newest first", all[0].Tool, all[1].Tool, all[2].Tool)
	}
	if all[0].CreatedAt.IsZero() || string(all[0].Constraints) != `{"timeout_ms":120000}` || string(all[0].Arguments) != `{}` {
		t.Errorf("defaults = %+v", all[0])
	}
	if d := all[1]; d.Allow || len(d.Reasons) != 1 || string(d.Arguments) != string(recs[1].Arguments) || !d.CreatedAt.Equal(recs[1].CreatedAt) {
		t.Errorf("round trip = %+v", d)
	}
	if d := all[2]; !d.Allow || d.Reasons == nil || len(d.Reasons) != 0 || d.EvalMicros != 21 || d.Revision != "abc" {
		t.Errorf("round trip = %+v (reasons must be an empty list, not null)", d)
	}

	s1, err := db.ListPolicyDecisions(ctx, store.PolicyDecisionFilter{SessionID: "s1", Limit: 1})
	if err != nil || len(s1) != 1 || s1[0].Tool != "execute_code" {
		t.Fatalf("session filter with limit = %+v, %v", s1, err)
	}
	none, err := db.ListPolicyDecisions(ctx, store.PolicyDecisionFilter{SessionID: "nope"})
	if err != nil || len(none) != 0 {
		t.Fatalf("unknown session = %+v, %v", none, err)
	}
}
