package store

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
)

// TestTailMirrorHugeNAllocatesByRecords: the last n records cost memory by
// the records there are, not by n: a billion asked of 21 records is 21
// records (it once preallocated n records, some 200 GB).
func TestTailMirrorHugeNAllocatesByRecords(t *testing.T) {
	flows := t.TempDir()
	writeRuns(t, flows)
	var want []string
	for ri := range 3 {
		for i := range 7 {
			want = append(want, fmt.Sprintf("%d-%d", ri, i))
		}
	}
	for _, n := range []int{1_000_000_000, 1 << 62} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		recs, err := TailMirror(openRoot(t, flows), MirrorFilter{}, n)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		if got := texts(recs); !slices.Equal(got, want) {
			t.Errorf("TailMirror(%d) = %v, want %v", n, got, want)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
			t.Errorf("TailMirror(%d) allocated %d bytes for %d records", n, alloc, len(recs))
		}
	}
}

// TestRingKeepsTheLast: the ring keeps the last max records in order
// however many are pushed.
func TestRingKeepsTheLast(t *testing.T) {
	for _, tt := range []struct{ max, pushed int }{{3, 0}, {3, 2}, {3, 3}, {3, 7}, {1, 5}} {
		r := newRing(tt.max)
		var all []string
		for i := range tt.pushed {
			s := fmt.Sprint(i)
			all = append(all, s)
			r.push(in(s))
		}
		want := all[max(0, len(all)-tt.max):]
		if got := texts(r.slice()); !slices.Equal(got, want) {
			t.Errorf("max %d, %d pushed: %v, want %v", tt.max, tt.pushed, got, want)
		}
	}
}
