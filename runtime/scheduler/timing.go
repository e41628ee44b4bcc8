package scheduler

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/nagent/nagent/runtime/errs"
)

// Schedule kinds.
const (
	KindCron  = "cron"  // a 5-field cron expression or a descriptor (@daily), read in the schedule's time zone
	KindEvery = "every" // a fixed interval ("15m"), counted from the schedule's creation
	KindOnce  = "once"  // one run at a time
)

// Catch-up policies: what happens to runs that fell due while nagent was
// not running.
const (
	CatchUpSkip    = "skip"     // record one skipped_missed run and wait for the next occurrence
	CatchUpRunOnce = "run_once" // run once on start, however many occurrences were missed
)

// MinEvery is the shortest interval of an every schedule: a scheduled run
// is a whole agent turn, and the scheduler ticks every few seconds.
const MinEvery = time.Minute

// cronParser reads standard 5-field expressions and the @yearly, @monthly,
// @weekly, @daily and @hourly descriptors. @every is the every kind.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Timing is a parsed schedule timing: it says when a schedule fires next.
type Timing struct {
	kind   string
	loc    *time.Location
	cron   cron.Schedule
	every  time.Duration
	anchor time.Time // every: occurrences are anchor + n*every, n >= 1
	at     time.Time // once
}

// ParseTiming parses a schedule's kind and spec in the IANA time zone tz
// ("" is UTC). anchor is the time an every schedule counts from (its
// creation). Errors are coded EINVALID and say what a valid spec looks like.
func ParseTiming(kind, spec, tz string, anchor time.Time) (Timing, error) {
	if tz == "" {
		tz = "UTC"
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return Timing{}, errs.Errorf(errs.EINVALID, "unknown time zone %q; use an IANA name such as Asia/Shanghai or UTC", tz)
	}
	t := Timing{kind: kind, loc: loc}
	spec = strings.TrimSpace(spec)
	switch kind {
	case KindCron:
		if strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=") || strings.HasPrefix(spec, "@every") {
			return Timing{}, errs.Errorf(errs.EINVALID, "cron spec %q: give the time zone with --tz and an interval with --every, not inside the expression", spec)
		}
		s, err := cronParser.Parse(spec)
		if err != nil {
			return Timing{}, errs.Errorf(errs.EINVALID, "cron spec %q: %v; use 5 fields (minute hour day-of-month month day-of-week), e.g. \"0 9 * * 1-5\", or @daily / @hourly", spec, err)
		}
		t.cron = s
	case KindEvery:
		d, err := time.ParseDuration(spec)
		if err != nil {
			return Timing{}, errs.Errorf(errs.EINVALID, "every spec %q: give a duration of at least 1 minute, such as 90s, 15m or 24h", spec)
		}
		if d < MinEvery {
			return Timing{}, errs.Errorf(errs.EINVALID, "every spec %q: the minimum interval is 1 minute; give a duration such as 90s, 15m or 24h", spec)
		}
		t.every, t.anchor = d, anchor
	case KindOnce:
		at, err := ParseOnce(spec, loc)
		if err != nil {
			return Timing{}, err
		}
		t.at = at
	default:
		return Timing{}, errs.Errorf(errs.EINVALID, "unknown schedule kind %q; use cron, every or once", kind)
	}
	return t, nil
}

// onceLayouts are the accepted forms of a once time without a zone offset;
// they are read in the schedule's time zone.
var onceLayouts = []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04"}

// ParseOnce reads a once time: RFC 3339 with an offset, or a local date and
// time ("2026-12-03 09:00") in loc.
func ParseOnce(spec string, loc *time.Location) (time.Time, error) {
	if at, err := time.Parse(time.RFC3339Nano, spec); err == nil {
		return at, nil
	}
	for _, layout := range onceLayouts {
		if at, err := time.ParseInLocation(layout, spec, loc); err == nil {
			return at, nil
		}
	}
	return time.Time{}, errs.Errorf(errs.EINVALID, "once time %q: use RFC 3339 (2026-12-03T09:00:00+08:00) or a date and time in the schedule's time zone (2026-12-03 09:00)", spec)
}

// Next returns the first occurrence strictly after after, and false when
// there is none (a once schedule whose time has passed).
func (t Timing) Next(after time.Time) (time.Time, bool) {
	switch t.kind {
	case KindCron:
		return t.nextCron(after)
	case KindEvery:
		if after.Before(t.anchor) {
			return t.anchor.Add(t.every).UTC(), true
		}
		n := after.Sub(t.anchor)/t.every + 1
		return t.anchor.Add(n * t.every).UTC(), true
	case KindOnce:
		if t.at.After(after) {
			return t.at.UTC(), true
		}
		return time.Time{}, false
	}
	return time.Time{}, false
}

// nextCron matches the expression against local wall-clock time in the
// schedule's zone, so that a daily job runs once a day across DST changes:
// a wall time skipped by a spring-forward fires at the same offset after
// the jump (02:30 becomes 03:30), and a wall time repeated by a fall-back
// fires once, at its first occurrence. (Matching in absolute time instead,
// as robfig/cron does, drops the 02:30 run and runs 01:30 twice.) The price:
// an hourly job skips the repeated hour of a fall-back.
func (t Timing) nextCron(after time.Time) (time.Time, bool) {
	wall := wallOf(after.In(t.loc))
	for range 1000 {
		w := t.cron.Next(wall)
		if w.IsZero() {
			return time.Time{}, false
		}
		if r := wallInstant(w, t.loc); r.After(after) {
			return r.UTC(), true
		}
		wall = w
	}
	return time.Time{}, false
}

// wallOf is t's wall clock written as UTC, where every minute exists once.
func wallOf(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// wallInstant returns the instant whose wall clock in loc is w (a wall
// clock written as UTC). A wall time repeated by a fall-back resolves to
// its first occurrence; one skipped by a spring-forward is read with the
// offset in force before the jump, so it lands after the jump by the
// length of the gap (02:30 becomes 03:30). time.Date does neither
// consistently: its choice depends on the sign of the zone's offset.
// It assumes that a zone's offset changes at most once in two days.
func wallInstant(w time.Time, loc *time.Location) time.Time {
	_, before := w.Add(-36 * time.Hour).In(loc).Zone()
	_, after := w.Add(36 * time.Hour).In(loc).Zone()
	for _, off := range []int{max(before, after), min(before, after)} { // the larger offset is the earlier instant
		r := w.Add(-time.Duration(off) * time.Second)
		if l := r.In(loc); wallOf(l).Equal(w) {
			return l
		}
	}
	return w.Add(-time.Duration(before) * time.Second).In(loc)
}

// Missed walks the occurrences from first (an occurrence at or before now)
// up to now. It returns how many there were (at most limit, then it stops
// counting) and the latest of them.
func (t Timing) Missed(first, now time.Time, limit int) (count int, latest time.Time) {
	latest = first
	count = 1
	for count < limit {
		n, ok := t.Next(latest)
		if !ok || n.After(now) {
			break
		}
		latest = n
		count++
	}
	return count, latest
}

// Describe is a short human description of the timing, e.g. "cron 0 9 * * *
// (Asia/Shanghai)".
func Describe(kind, spec, tz string) string {
	if kind == KindCron && tz != "" && tz != "UTC" {
		return fmt.Sprintf("cron %s (%s)", spec, tz)
	}
	return kind + " " + spec
}
