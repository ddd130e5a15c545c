package executor

import "testing"

// TestPool: Get gives an empty slice with room for what is asked (nil for
// nothing), never a slice given back that is too small, and Put keeps only
// slices of the sizes the pool keeps.
func TestPool(t *testing.T) {
	p := Pool[int]{From: 16, Max: 64}
	check := func(got []int, n int) {
		t.Helper()
		if len(got) != 0 || cap(got) < n {
			t.Fatalf("Get(%d): len %d cap %d", n, len(got), cap(got))
		}
	}
	check(p.Get(4), 4) // under From: a new one
	if p.Get(0) != nil {
		t.Fatal("Get(0) under From is not nil, as a caller with no buffer passes")
	}
	p.Put(make([]int, 8))
	check(p.Get(16), 16) // the slice of 8 was not kept, or is not given
	p.Put(make([]int, 32))
	check(p.Get(40), 40) // given back, but too small for 40
	big := make([]int, 128)
	p.Put(big) // over Max: not kept
	for range 10 {
		if b := p.Get(100); cap(b) == cap(big) && &b[:1][0] == &big[0] {
			t.Fatal("a slice over Max was kept")
		}
	}
	p.Put(nil) // nothing to keep
}
