package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPipeRoomNeverWaits writes into a pipe nobody reads, made
// non-blocking so that a write that would wait fails with EAGAIN instead:
// every write pipeRoom allows must go through whole, whatever the sizes
// (writes of 2049 bytes take a page each: a bound on unread bytes alone
// allows a write into a full pipe there). After the reader empties the
// pipe, small writes are allowed again, and checking the pipe costs one
// ioctl per pipe's worth of pages, not one per write.
func TestPipeRoomNeverWaits(t *testing.T) {
	page := os.Getpagesize()
	for _, tc := range []struct {
		name  string
		sizes []int // repeated in turn
	}{
		{"tiny", []int{1}},
		{"answers", []int{97, 130, 64}},
		{"just over half a page", []int{page/2 + 1}},
		{"a page", []int{page}},
		{"just over a page", []int{page + 1}},
		{"mixed", []int{3000, 10, page * 3, 2049, 1, page - 1}},
		{"over the pipe", []int{100, 1 << 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fds [2]int
			if err := unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fds[0])
			defer unix.Close(fds[1])
			size, err := unix.FcntlInt(uintptr(fds[1]), unix.F_GETPIPE_SZ, 0)
			if err != nil {
				t.Fatal(err)
			}
			checks := 0
			p := newPipeRoom(size, page, func() (int, error) {
				checks++
				return unix.IoctlGetInt(fds[1], unix.TIOCINQ)
			})
			drain := func() {
				buf := make([]byte, 1<<16)
				for {
					if _, err := unix.Read(fds[0], buf); err != nil {
						if !errors.Is(err, unix.EAGAIN) {
							t.Fatal(err)
						}
						return
					}
				}
			}
			// Fill: every write allowed goes through; stop at the first refused.
			allowed := 0
			for i := 0; ; i++ {
				n := tc.sizes[i%len(tc.sizes)]
				if !p.take(n) {
					break
				}
				if w, err := unix.Write(fds[1], make([]byte, n)); err != nil || w != n {
					t.Fatalf("write %d of %d bytes was allowed but wrote %d: %v", i, n, w, err)
				}
				allowed++
			}
			if small := tc.sizes[0] <= size; small && allowed == 0 {
				t.Fatalf("no write of %d bytes allowed into an empty pipe of %d", tc.sizes[0], size)
			}
			// An emptied pipe takes writes again, one check per pipe's worth.
			drain()
			checks = 0
			writes := 0
			for i := range 4 * size / page {
				n := min(tc.sizes[i%len(tc.sizes)], page)
				if !p.take(n) {
					t.Fatalf("write %d of %d bytes refused while the reader keeps the pipe empty", i, n)
				}
				if w, err := unix.Write(fds[1], make([]byte, n)); err != nil || w != n {
					t.Fatalf("write %d of %d bytes: wrote %d: %v", i, n, w, err)
				}
				drain()
				writes++
			}
			if most := writes/(size/page) + 1; checks > most {
				t.Fatalf("%d ioctls for %d writes of at most a page into a pipe of %d pages, want at most %d", checks, writes, size/page, most)
			}
		})
	}
}

// TestGrowPipe: hub mcp's output pipe is made to hold a mebibyte; a file,
// or a writer that is not one, is left as it is.
func TestGrowPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	growPipe(w)
	size, err := unix.FcntlInt(w.Fd(), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatal(err)
	}
	if size < 1<<20 {
		t.Errorf("the pipe holds %d bytes after growPipe, want 1 MiB", size)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	growPipe(f)
	growPipe(io.Discard)
}
