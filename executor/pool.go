package executor

import "sync"

// Pool keeps slices their last holder gives back, for the next calls: the
// buffer of a result's encoding (Outcome.Release), what a result holds
// (Releaser: a file read whole, a large listing), a surface's answer once
// written. A client reading large files or listing large directories one
// after another then makes no garbage of their size at every call. Only
// slices of From to Max elements are kept: smaller ones cost less to
// allocate than to pool, larger ones are left to the collector rather
// than held for calls that rarely need them. The zero Pool keeps nothing
// past Max 0; set Max.
type Pool[T any] struct {
	From, Max int
	pool      sync.Pool // of *[]T
}

// Get returns an empty slice with room for n elements: one given back,
// or a new one (nil for n = 0, as a caller with no buffer passes).
func (p *Pool[T]) Get(n int) []T {
	if n >= p.From {
		if b, ok := p.pool.Get().(*[]T); ok && cap(*b) >= n {
			return (*b)[:0]
		}
	}
	if n == 0 {
		return nil
	}
	return make([]T, 0, n)
}

// Put keeps b, which nothing reads any more, if its size is one the pool
// keeps. A slice of values holding pointers is cleared first by its
// caller, so that it keeps nothing else alive.
func (p *Pool[T]) Put(b []T) {
	if c := cap(b); c > 0 && c >= p.From && c <= p.Max {
		p.pool.Put(&b)
	}
}
