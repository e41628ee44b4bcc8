package scheduler_test

import (
	"testing"
	"time"

	"github.com/nagent/nagent/runtime/scheduler"
)

func mustTime(tb testing.TB, s string) time.Time {
	tb.Helper()
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		tb.Fatal(err)
	}
	return t
}

// nextTests: from after, the next occurrences (RFC 3339, any offset).
var nextTests = []struct {
	name, kind, spec, tz, anchor, after string
	want                                []string // empty: no further occurrence
}{
	{name: "CronUTC", kind: "cron", spec: "*/15 * * * *", after: "2026-12-02T10:07:00Z",
		want: []string{"2026-12-02T10:15:00Z", "2026-12-02T10:30:00Z"}},
	{name: "CronStrictlyAfter", kind: "cron", spec: "0 9 * * *", after: "2026-12-02T09:00:00Z",
		want: []string{"2026-12-03T09:00:00Z"}},
	{name: "CronTimeZone", kind: "cron", spec: "0 9 * * 1-5", tz: "Asia/Shanghai", after: "2026-12-04T02:00:00Z", // Fri 10:00 CST
		want: []string{"2026-12-07T09:00:00+08:00", "2026-12-08T09:00:00+08:00"}},
	{name: "CronDescriptor", kind: "cron", spec: "@daily", tz: "Europe/Berlin", after: "2026-12-02T12:00:00Z",
		want: []string{"2026-12-03T00:00:00+01:00"}},
	// America/New_York springs forward on 2026-03-08 at 02:00 → 03:00.
	{name: "DSTSpringForwardSkippedTimeRunsAfterJump", kind: "cron", spec: "30 2 * * *", tz: "America/New_York",
		after: "2026-03-07T12:00:00-05:00",
		want:  []string{"2026-03-08T02:30:00-05:00", "2026-03-09T02:30:00-04:00"}}, // 02:30 EST = 03:30 EDT
	{name: "DSTSpringForwardHourly", kind: "cron", spec: "0 * * * *", tz: "America/New_York",
		after: "2026-03-08T00:30:00-05:00",
		want:  []string{"2026-03-08T01:00:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-08T04:00:00-04:00"}},
	// ... and falls back on 2026-11-01 at 02:00 → 01:00.
	{name: "DSTFallBackRepeatedTimeRunsOnce", kind: "cron", spec: "30 1 * * *", tz: "America/New_York",
		after: "2026-10-31T12:00:00-04:00",
		want:  []string{"2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"}},
	{name: "DSTFallBackDailyMorning", kind: "cron", spec: "0 9 * * *", tz: "America/New_York",
		after: "2026-10-31T12:00:00-04:00",
		want:  []string{"2026-11-01T09:00:00-05:00", "2026-11-02T09:00:00-05:00"}},
	// Europe/Berlin (east of UTC) springs forward on 2026-03-29 at 02:00 → 03:00
	// and falls back on 2026-10-25 at 03:00 → 02:00.
	{name: "DSTSpringForwardEastOfUTC", kind: "cron", spec: "30 2 * * *", tz: "Europe/Berlin",
		after: "2026-03-28T12:00:00+01:00",
		want:  []string{"2026-03-29T03:30:00+02:00", "2026-03-30T02:30:00+02:00"}},
	{name: "DSTFallBackEastOfUTCRunsAtFirst", kind: "cron", spec: "30 2 * * *", tz: "Europe/Berlin",
		after: "2026-10-24T12:00:00+02:00",
		want:  []string{"2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"}},
	{name: "DSTFallBackFromTheRepeatedHour", kind: "cron", spec: "30 2 * * *", tz: "Europe/Berlin",
		after: "2026-10-25T02:10:00+01:00", // after the first 02:30 already ran
		want:  []string{"2026-10-26T02:30:00+01:00"}},
	// Australia/Lord_Howe springs forward by 30 minutes on 2026-10-04 at 02:00 → 02:30.
	{name: "DSTHalfHourGap", kind: "cron", spec: "15 2 * * *", tz: "Australia/Lord_Howe",
		after: "2026-10-03T12:00:00+10:30",
		want:  []string{"2026-10-04T02:45:00+11:00", "2026-10-05T02:15:00+11:00"}},
	{name: "Every", kind: "every", spec: "15m", anchor: "2026-12-02T10:00:00Z", after: "2026-12-02T10:20:00Z",
		want: []string{"2026-12-02T10:30:00Z", "2026-12-02T10:45:00Z"}},
	{name: "EveryOnTheBoundary", kind: "every", spec: "1h", anchor: "2026-12-02T10:00:00Z", after: "2026-12-02T11:00:00Z",
		want: []string{"2026-12-02T12:00:00Z"}},
	{name: "EveryBeforeAnchor", kind: "every", spec: "90s", anchor: "2026-12-02T10:00:00Z", after: "2026-12-02T09:00:00Z",
		want: []string{"2026-12-02T10:01:30Z", "2026-12-02T10:03:00Z"}},
	{name: "EveryIgnoresDST", kind: "every", spec: "24h", anchor: "2026-03-07T09:00:00-05:00", tz: "America/New_York",
		after: "2026-03-07T09:00:00-05:00", want: []string{"2026-03-08T10:00:00-04:00"}},
	{name: "OnceRFC3339", kind: "once", spec: "2026-12-03T09:00:00+08:00", after: "2026-12-02T00:00:00Z",
		want: []string{"2026-12-03T01:00:00Z"}},
	{name: "OnceLocalInZone", kind: "once", spec: "2026-12-03 09:00", tz: "Asia/Shanghai", after: "2026-12-02T00:00:00Z",
		want: []string{"2026-12-03T01:00:00Z"}},
	{name: "OncePassed", kind: "once", spec: "2026-12-01T09:00:00Z", after: "2026-12-02T00:00:00Z"},
}

func TestNext(t *testing.T) {
	for _, tt := range nextTests {
		t.Run(tt.name, func(t *testing.T) {
			var anchor time.Time
			if tt.anchor != "" {
				anchor = mustTime(t, tt.anchor)
			}
			timing, err := scheduler.ParseTiming(tt.kind, tt.spec, tt.tz, anchor)
			if err != nil {
				t.Fatal(err)
			}
			after := mustTime(t, tt.after)
			for i, w := range tt.want {
				got, ok := timing.Next(after)
				if !ok || !got.Equal(mustTime(t, w)) {
					t.Fatalf("occurrence %d after %s = %s (ok=%v), want %s", i+1, after.Format(time.RFC3339), got.Format(time.RFC3339), ok, w)
				}
				after = got
			}
			if len(tt.want) == 0 {
				if got, ok := timing.Next(after); ok {
					t.Fatalf("Next = %s, want none", got)
				}
			}
		})
	}
}

var invalidTimings = []struct{ name, kind, spec, tz, wantMsg string }{
	{"CronFieldRange", "cron", "61 * * * *", "", "5 fields"},
	{"CronTooFewFields", "cron", "* * *", "", "5 fields"},
	{"CronZoneInside", "cron", "CRON_TZ=Asia/Tokyo 0 9 * * *", "", "--tz"},
	{"CronEveryDescriptor", "cron", "@every 5m", "", "--every"},
	{"EveryTooShort", "every", "10ms", "", "minimum interval is 1 minute"},
	{"EverySeconds", "every", "1s", "", "minimum interval is 1 minute"},
	{"EveryJustUnderAMinute", "every", "59s", "", "minimum interval is 1 minute"},
	{"EveryNotDuration", "every", "daily", "", "such as 90s"},
	{"OnceGarbage", "once", "tomorrow", "", "RFC 3339"},
	{"UnknownZone", "cron", "0 9 * * *", "Mars/Base", "IANA"},
	{"UnknownKind", "hourly", "x", "", "cron, every or once"},
}

func TestParseTimingErrors(t *testing.T) {
	for _, tt := range invalidTimings {
		t.Run(tt.name, func(t *testing.T) {
			_, err := scheduler.ParseTiming(tt.kind, tt.spec, tt.tz, time.Now())
			if err == nil || !contains(err.Error(), tt.wantMsg) {
				t.Fatalf("err = %v, want one mentioning %q", err, tt.wantMsg)
			}
		})
	}
}

func TestMissed(t *testing.T) {
	timing, _ := scheduler.ParseTiming("every", "1h", "", mustTime(t, "2026-12-02T00:00:00Z"))
	n, latest := timing.Missed(mustTime(t, "2026-12-02T01:00:00Z"), mustTime(t, "2026-12-02T04:30:00Z"), 1000)
	if n != 4 || !latest.Equal(mustTime(t, "2026-12-02T04:00:00Z")) {
		t.Fatalf("Missed = %d, %s; want 4, 04:00", n, latest)
	}
	if n, _ := timing.Missed(mustTime(t, "2026-12-02T01:00:00Z"), mustTime(t, "2027-12-02T04:30:00Z"), 10); n != 10 {
		t.Fatalf("Missed with limit 10 = %d", n)
	}
}
