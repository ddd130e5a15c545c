package main

import (
	"regexp"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/hub"
)

// TestTurnIDsMatchHub compares the CLI's turn ids with hub.NewTurnID's for
// the same instants (the random suffix aside): across seconds, within one,
// in other time zones, and back in time.
func TestTurnIDsMatchHub(t *testing.T) {
	base := time.Date(2026, 11, 24, 23, 59, 58, 999_999_000, time.UTC)
	east := time.FixedZone("east", 5*3600+1800)
	times := []time.Time{
		base,
		base.Add(time.Microsecond), // next second
		base.Add(2 * time.Microsecond),
		base.Add(time.Second).In(east),
		base.Add(-time.Hour),
		base.Add(-time.Hour + 500*time.Millisecond),
		time.Date(1999, 12, 31, 23, 59, 59, 0, time.UTC),
	}
	shape := regexp.MustCompile(`^cli\.\d{8}T\d{6}Z-[0-9a-f]{12}$`)
	ids := newTurnIDs("cli")
	seen := map[string]bool{}
	for _, now := range times {
		got, want := ids.next(now), hub.NewTurnID("cli", now)
		if !shape.MatchString(got) || len(got) != len(want) || got[:len(got)-12] != want[:len(want)-12] {
			t.Fatalf("at %v: turn id %q, hub.NewTurnID gives %q", now, got, want)
		}
		if seen[got] {
			t.Fatalf("turn id %q made twice", got)
		}
		seen[got] = true
	}
	// Within one second, and between two generators (two processes), ids
	// do not repeat.
	other := newTurnIDs("cli")
	for range 10_000 {
		for _, g := range []*turnIDs{ids, other} {
			id := g.next(base)
			if seen[id] {
				t.Fatalf("turn id %q made twice", id)
			}
			seen[id] = true
		}
	}
}
