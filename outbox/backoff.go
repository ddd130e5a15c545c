package outbox

import (
	"math"
	"math/rand/v2"
	"time"
)

// Backoff is exponential backoff with jitter, capped: the n-th failed attempt
// (n from 1) waits Base·Factor^(n-1), capped at Max, then spread by ±Jitter
// (a fraction), and never more than Max.
type Backoff struct {
	Base   time.Duration // default 1s
	Max    time.Duration // default 5m
	Factor float64       // default 2; values below 1 mean the default
	Jitter float64       // default 0.2 (for 0); a negative value means no jitter; at most 1
}

// DefaultBackoff is used for zero fields.
var DefaultBackoff = Backoff{Base: time.Second, Max: 5 * time.Minute, Factor: 2, Jitter: 0.2}

func (b Backoff) withDefaults() Backoff {
	if b.Base <= 0 {
		b.Base = DefaultBackoff.Base
	}
	if b.Max <= 0 {
		b.Max = DefaultBackoff.Max
	}
	if b.Max < b.Base {
		b.Max = b.Base
	}
	if b.Factor < 1 {
		b.Factor = DefaultBackoff.Factor
	}
	if b.Jitter == 0 || math.IsNaN(b.Jitter) {
		b.Jitter = DefaultBackoff.Jitter
	}
	b.Jitter = min(max(b.Jitter, 0), 1)
	return b
}

// Nominal is the delay after the n-th failed attempt before jitter.
func (b Backoff) Nominal(attempt int) time.Duration {
	b = b.withDefaults()
	if attempt < 1 {
		attempt = 1
	}
	d := float64(b.Base) * math.Pow(b.Factor, float64(attempt-1))
	if math.IsInf(d, 0) || math.IsNaN(d) || d >= float64(b.Max) {
		return b.Max
	}
	return time.Duration(d)
}

// Delay is the delay after the n-th failed attempt, with jitter: uniform in
// [Nominal·(1-Jitter), Nominal·(1+Jitter)], capped at Max.
func (b Backoff) Delay(attempt int) time.Duration {
	return b.delay(attempt, rand.Float64())
}

func (b Backoff) delay(attempt int, r float64) time.Duration {
	b = b.withDefaults()
	n := float64(b.Nominal(attempt))
	d := n * (1 + b.Jitter*(2*r-1))
	if d >= float64(b.Max) {
		return b.Max
	}
	return max(time.Duration(d), 0)
}
