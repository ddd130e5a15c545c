package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
)

// scriptedFile fails chosen writes (nothing written) and fsyncs, and counts
// the fsyncs.
type scriptedFile struct {
	*os.File
	mu        sync.Mutex
	writes    int
	failWrite map[int]bool // 1-based write numbers that fail
	failSync  error
	syncs     int
}

func (f *scriptedFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	f.writes++
	fail := f.failWrite[f.writes]
	f.mu.Unlock()
	if fail {
		return 0, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.File.Write(p)
}

func (f *scriptedFile) Sync() error {
	f.mu.Lock()
	f.syncs++
	err := f.failSync
	f.mu.Unlock()
	if err != nil {
		return err
	}
	return f.File.Sync()
}

// TestMirrorAppendAll: AppendAll writes its records in order, each with its
// own error, and with durable waits for one fsync per file that covers
// every line written (a failed last write included); a failed fsync is the
// error of every line it was to cover.
func TestMirrorAppendAll(t *testing.T) {
	tests := []struct {
		name      string
		dirs      []string // direction of each record
		failWrite []int    // 1-based writes of each file that fail
		failSync  error
		wantErr   []error // per record
		wantSyncs int     // in all
	}{
		{"ten outbound", slices.Repeat([]string{DirectionOutbound}, 10), nil, nil, make([]error, 10), 1},
		{"the last write fails", slices.Repeat([]string{DirectionOutbound}, 4), []int{4}, nil,
			[]error{nil, nil, nil, syscall.ENOSPC}, 1},
		{"a middle write fails", slices.Repeat([]string{DirectionOutbound}, 4), []int{2}, nil,
			[]error{nil, syscall.ENOSPC, nil, nil}, 1},
		{"the fsync fails", slices.Repeat([]string{DirectionOutbound}, 3), []int{3}, syscall.EIO,
			[]error{syscall.EIO, syscall.EIO, syscall.ENOSPC}, 1},
		{"both files", []string{DirectionOutbound, DirectionInbound, DirectionOutbound, DirectionInbound}, nil, nil,
			make([]error, 4), 2},
		{"nothing written", []string{DirectionOutbound}, []int{1}, nil, []error{syscall.ENOSPC}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			flows := t.TempDir()
			var mu sync.Mutex
			files := map[string]*scriptedFile{}
			opts := keepAll
			opts.OpenFile = func(root *os.Root, name string, flag int, perm os.FileMode) (MirrorFile, error) {
				f, err := root.OpenFile(name, flag, perm)
				if err != nil {
					return nil, err
				}
				sf := &scriptedFile{File: f, failWrite: map[int]bool{}}
				mu.Lock()
				files[filepath.Base(name)] = sf
				mu.Unlock()
				return sf, nil
			}
			m := openMirror(t, flows, run1, opts)
			for _, f := range files {
				for _, n := range tc.failWrite {
					f.failWrite[n] = true
				}
				f.failSync = tc.failSync
			}
			recs := make([]MirrorRecord, len(tc.dirs))
			for i, d := range tc.dirs {
				if d == DirectionOutbound {
					recs[i] = out("r" + strconv.Itoa(i))
				} else {
					recs[i] = in("r" + strconv.Itoa(i))
				}
			}
			errs := m.AppendAll(context.Background(), recs, true)
			if len(errs) != len(recs) {
				t.Fatalf("%d errors for %d records", len(errs), len(recs))
			}
			for i, err := range errs {
				if !errors.Is(err, tc.wantErr[i]) || (err == nil) != (tc.wantErr[i] == nil) {
					t.Fatalf("record %d: %v, want %v", i, err, tc.wantErr[i])
				}
			}
			syncs := 0
			for _, f := range files {
				f.mu.Lock()
				syncs += f.syncs
				f.mu.Unlock()
			}
			if syncs != tc.wantSyncs {
				t.Fatalf("%d fsyncs, want %d", syncs, tc.wantSyncs)
			}
			m.Close()
			var want []string
			for i := range recs {
				if !errors.Is(tc.wantErr[i], syscall.ENOSPC) {
					want = append(want, "r"+strconv.Itoa(i))
				}
			}
			got := texts(readAll(t, flows, MirrorFilter{}))
			slices.Sort(got) // the two files are read one after the other
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("records %v, want %v", got, want)
			}
		})
	}
}

// TestMirrorAppendAllInOrder: the lines of one file are in the records'
// order, and without durable nothing is fsynced.
func TestMirrorAppendAllInOrder(t *testing.T) {
	flows := t.TempDir()
	var syncs int
	var mu sync.Mutex
	opts := keepAll
	opts.OpenFile = func(root *os.Root, name string, flag int, perm os.FileMode) (MirrorFile, error) {
		f, err := root.OpenFile(name, flag, perm)
		if err != nil {
			return nil, err
		}
		return &countSyncs{File: f, mu: &mu, n: &syncs}, nil
	}
	m := openMirror(t, flows, run1, opts)
	var recs []MirrorRecord
	var want []string
	for i := range 100 {
		recs = append(recs, out("r"+strconv.Itoa(i)))
		want = append(want, "r"+strconv.Itoa(i))
	}
	for i, err := range m.AppendAll(context.Background(), recs, false) {
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	mu.Lock()
	n := syncs
	mu.Unlock()
	if n != 0 {
		t.Fatalf("%d fsyncs without durable", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for i, err := range m.AppendAll(ctx, recs[:2], true) {
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("record %d with a cancelled context: %v", i, err)
		}
	}
	m.Close()
	if got := texts(readAll(t, flows, MirrorFilter{})); !slices.Equal(got, want) {
		t.Fatalf("records %v, want %v", got, want)
	}
}

type countSyncs struct {
	*os.File
	mu *sync.Mutex
	n  *int
}

func (c *countSyncs) Sync() error {
	c.mu.Lock()
	*c.n++
	c.mu.Unlock()
	return c.File.Sync()
}
