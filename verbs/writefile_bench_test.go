//go:build linux

package verbs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/a6afc2ce/hermes-hub/verbs"
)

// BenchmarkWriteFile measures fs.writeFile of 4 KB (100 files overwritten in
// turn, as in bench/mcp) and, beside it, the ways of making such a write
// durable, written out with plain system calls so each costs only its
// syscalls: temp file, write, sync, rename over the old file, then a sync of
// the directory (what the verb does), with fsync or fdatasync of the temp
// file, and with 8 concurrent writers that each sync the directory or share
// one directory sync per batch (a small group commit). nosync is the MCP
// reference server's write (temp file and rename, no sync): not durable, the
// floor.
func BenchmarkWriteFile(b *testing.B) {
	content := strings.Repeat("w", 4095) + "\n"
	b.Run("verb", func(b *testing.B) {
		dir := b.TempDir()
		s := dirSet(b, dir)
		ctx := context.Background()
		for i := 0; b.Loop(); i++ {
			if _, err := s.WriteFile(ctx, verbs.FsWriteFileArgs{Path: fmt.Sprintf("f%02d.txt", i%100), Content: content}); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, tc := range []struct {
		name    string
		sync    func(fd int) error
		dirSync bool
		writers int
		group   bool
	}{
		{"fsync+dirsync", unix.Fsync, true, 1, false},
		{"fdatasync+dirsync", unix.Fdatasync, true, 1, false},
		{"nosync", nil, false, 1, false},
		{"fdatasync+dirsync,writers=8", unix.Fdatasync, true, 8, false},
		{"fdatasync+groupdirsync,writers=8", unix.Fdatasync, true, 8, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			dir := b.TempDir()
			d, err := os.Open(dir)
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			g := &dirSyncGroup{dir: d}
			data := []byte(content)
			write := func(i int) {
				tmp := filepath.Join(dir, fmt.Sprintf(".f%d.tmp", i))
				fd, err := unix.Open(tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o644)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := unix.Write(fd, data); err != nil {
					b.Fatal(err)
				}
				if tc.sync != nil {
					if err := tc.sync(fd); err != nil {
						b.Fatal(err)
					}
				}
				unix.Close(fd)
				if err := os.Rename(tmp, filepath.Join(dir, fmt.Sprintf("f%02d.txt", i%100))); err != nil {
					b.Fatal(err)
				}
				switch {
				case tc.group:
					g.sync()
				case tc.dirSync:
					d.Sync()
				}
			}
			var next sync.Mutex
			n := 0
			b.SetParallelism(1)
			if tc.writers == 1 {
				for i := 0; b.Loop(); i++ {
					write(i)
				}
				return
			}
			var wg sync.WaitGroup
			b.ResetTimer()
			for range tc.writers {
				wg.Go(func() {
					for {
						next.Lock()
						i := n
						n++
						next.Unlock()
						if i >= b.N {
							return
						}
						write(i)
					}
				})
			}
			wg.Wait()
		})
	}
}

// dirSyncGroup shares directory syncs among concurrent writers: a writer
// whose rename is done waits for a sync that started after it; one sync
// covers every rename finished before it started.
type dirSyncGroup struct {
	dir *os.File

	mu      sync.Mutex
	cond    *sync.Cond
	running bool
	started uint64 // syncs started
	done    uint64 // syncs finished
}

func (g *dirSyncGroup) sync() {
	g.mu.Lock()
	if g.cond == nil {
		g.cond = sync.NewCond(&g.mu)
	}
	// A sync that starts after now covers this writer's rename.
	want := g.started + 1
	for g.done < want {
		if !g.running {
			g.running = true
			g.started++
			mine := g.started
			g.mu.Unlock()
			g.dir.Sync()
			g.mu.Lock()
			g.running = false
			g.done = mine
			g.cond.Broadcast()
			continue
		}
		g.cond.Wait()
	}
	g.mu.Unlock()
}
