package hub

import (
	"time"

	"github.com/robfig/cron/v3"

	"github.com/a6afc2ce/hermes-hub/config"
)

// timing is when a schedule runs: its cron expression read in its zone,
// with the rules for the days the zone's clocks change (docs/chatops.md,
// "When clocks change"). An expression whose hour field names hours (no
// '*') is about wall-clock times: a time the clocks skip runs at the
// change, and a time they pass twice runs once, the first time. One whose
// hour field is '*' (every hour, every 15 minutes) follows real time: a
// skipped minute does not exist, a repeated one is another minute.
type timing struct {
	spec *cron.SpecSchedule
	// wall is the expression in UTC, to ask whether a wall-clock time
	// matches whatever the zone does at that moment.
	wall      *cron.SpecSchedule
	loc       *time.Location
	fixedHour bool
}

// cronStar is the bit robfig/cron sets in a field written with '*'.
const cronStar = 1 << 63

// newTiming reads a schedule's expression and zone, checked by the
// configuration.
func newTiming(s config.Schedule) (timing, error) {
	spec, err := config.ParseCron(s.Cron)
	if err != nil {
		return timing{}, err
	}
	loc, err := s.Location()
	if err != nil {
		return timing{}, err
	}
	spec.Location = loc
	wall := *spec
	wall.Location = time.UTC
	return timing{spec: spec, wall: &wall, loc: loc, fixedHour: spec.Hour&cronStar == 0}, nil
}

// next is the first time after t the schedule runs (zero when none comes
// within five years), in its zone.
func (tm timing) next(t time.Time) time.Time {
	t = t.In(tm.loc)
	n := tm.spec.Next(t)
	if !tm.fixedHour {
		return n
	}
	for !n.IsZero() && repeated(n) {
		n = tm.spec.Next(n)
	}
	if g := tm.skipped(t, n); !g.IsZero() {
		return g
	}
	return n
}

// repeated reports whether n's wall-clock time came once already: the
// clocks went back at the start of n's zone period, and n is within the
// hour (or so) they went back by.
func repeated(n time.Time) bool {
	start, _ := n.ZoneBounds()
	if start.IsZero() {
		return false
	}
	_, before := start.Add(-time.Second).Zone()
	_, after := n.Zone()
	back := time.Duration(before-after) * time.Second
	return back > 0 && n.Sub(start) < back
}

// skipped is the first moment in (t, n] the clocks jump forward over a
// wall-clock time the schedule names, zero when there is none: the run
// of that time happens at the change.
func (tm timing) skipped(t, n time.Time) time.Time {
	if n.IsZero() {
		return time.Time{}
	}
	_, change := t.In(tm.loc).ZoneBounds()
	for !change.IsZero() && !change.After(n) {
		_, before := change.Add(-time.Second).Zone()
		_, after := change.Zone()
		if gap := time.Duration(after-before) * time.Second; gap > 0 && change.After(t) {
			// The wall-clock times [from, from+gap) do not exist that day.
			w := change.In(time.FixedZone("", before))
			from := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), 0, time.UTC)
			if m := tm.wall.Next(from.Add(-time.Second)); !m.IsZero() && m.Before(from.Add(gap)) {
				return change.In(tm.loc)
			}
		}
		_, change = change.ZoneBounds()
	}
	return time.Time{}
}

// missed counts the times the schedule ran in (after, upTo]: how many (at
// most limit; more is reported as limit), the first and the latest.
func (tm timing) missed(after, upTo time.Time, limit int) (n int, first, last time.Time) {
	for t := tm.next(after); !t.IsZero() && !t.After(upTo); t = tm.next(t) {
		if n == 0 {
			first = t
		}
		last = t
		if n++; n == limit {
			// Stop counting; the latest is still wanted.
			last = tm.latest(t, upTo)
			break
		}
	}
	return n, first, last
}

// latest is the last time the schedule runs at or before upTo, from a time
// t it runs at or before it.
func (tm timing) latest(t, upTo time.Time) time.Time {
	// Step back from upTo in growing windows until a window holds a time,
	// then walk that window forward.
	for w := time.Hour; ; w *= 2 {
		from := upTo.Add(-w)
		if !from.After(t) {
			from = t
		}
		last := time.Time{}
		for x := tm.next(from.Add(-time.Second)); !x.IsZero() && !x.After(upTo); x = tm.next(x) {
			last = x
		}
		if !last.IsZero() || !from.After(t) {
			if last.IsZero() {
				return t
			}
			return last
		}
	}
}
