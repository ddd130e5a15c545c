package verbs

import "sync"

// slicePool keeps slices that results give back once their last holder
// is done with them (executor.Releaser), for the next calls' results of
// the same kind: a client reading large files or listing large
// directories one after another then makes no garbage of their size at
// every call. Only slices of from to max elements are kept: smaller ones
// cost less to allocate than to pool, larger ones are left to the
// collector rather than held for calls that rarely need them.
type slicePool[T any] struct {
	pool      sync.Pool // of *[]T
	from, max int
}

// get returns an empty slice with room for n elements: one given back,
// or a new one.
func (p *slicePool[T]) get(n int) []T {
	if n >= p.from {
		if b, ok := p.pool.Get().(*[]T); ok && cap(*b) >= n {
			return (*b)[:0]
		}
	}
	return make([]T, 0, n)
}

// put keeps b, which nothing reads any more, if its size is one the pool
// keeps. A slice of values holding pointers is cleared first by its
// caller, so that it keeps nothing else alive.
func (p *slicePool[T]) put(b []T) {
	if cap(b) >= p.from && cap(b) <= p.max {
		p.pool.Put(&b)
	}
}
