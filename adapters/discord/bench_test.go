package discord

import (
	"sort"
	"testing"
	"time"
)

// BenchmarkInteractionLatency measures, against the fake Discord, the time
// from an INTERACTION_CREATE dispatch to the edit of the deferred response
// with the answer (a real hub turn: ledger, mirror, verb, outbox).
func BenchmarkInteractionLatency(b *testing.B) {
	e := newEnv(b, envOptions{})
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		start := time.Now()
		i := e.interact(adminUser, "fs", sub("exists", str("path", "README.md")))
		e.waitOriginal(i)
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 {
		k := int(p * float64(len(lat)-1))
		return float64(lat[k].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// BenchmarkChannelMessages measures channel-message turns per second: b.N
// prefixed commands in one channel, from the first dispatch until every
// reply has been posted.
func BenchmarkChannelMessages(b *testing.B) {
	e := newEnv(b, envOptions{})
	want := map[string]bool{}
	b.ResetTimer()
	start := time.Now()
	for n := 0; n < b.N; n++ {
		m := e.say(adminUser, "!fs.exists README.md")
		want[m.ID] = true
	}
	e.fake.WaitFor(e.t, "every reply", func() bool {
		n := 0
		for _, m := range e.fake.ChannelMessages(e.fake.ChannelID) {
			if want[m.Reference] {
				n++
			}
		}
		return n == len(want)
	})
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "turns/s")
}
