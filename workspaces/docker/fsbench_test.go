//go:build linux

package docker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/verbs"
)

// BenchmarkFsVerbs measures fs.readFile (4 KiB), fs.listDir (100 entries)
// and fs.writeFile (4 KiB) on one workspace directory opened twice: as a
// docker workspace (its runner talks to the daemon through a counting
// proxy) and as a local one. The fs verbs take the same path in both: they
// act on the host directory and never call the runner, which api/op (the
// Docker API requests per call, 0) shows whatever the machine's load.
func BenchmarkFsVerbs(b *testing.B) {
	e := newEnv(b, nil)
	p := countingProxy(b, e.cli.DaemonHost())
	e.cfg.Host = p.host
	e.r = e.runner()
	e.set = e.verbs(e.r)
	run(b, e.set, "true") // the container exists: the runner is warm
	content := strings.Repeat("0123456789abcde\n", 256)
	if err := os.WriteFile(filepath.Join(e.dir, "read.txt"), []byte(content), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(e.dir, "many"), 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range 100 {
		if err := os.WriteFile(filepath.Join(e.dir, "many", fmt.Sprintf("f%03d.txt", i)), []byte("x"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	verbsOf := []struct {
		name string
		call func(s *verbs.Set) error
	}{
		{"readFile-4KiB", func(s *verbs.Set) error {
			r, err := s.ReadFile(ctx, verbs.FsReadFileArgs{Path: "read.txt"})
			if err == nil && len(r.Content) != len(content) {
				err = fmt.Errorf("read %d bytes", len(r.Content))
			}
			return err
		}},
		{"listDir-100", func(s *verbs.Set) error {
			r, err := s.ListDir(ctx, verbs.FsListDirArgs{Path: "many"})
			if err == nil && len(r.Entries) != 100 {
				err = fmt.Errorf("listed %d entries", len(r.Entries))
			}
			return err
		}},
		{"writeFile-4KiB", func(s *verbs.Set) error {
			_, err := s.WriteFile(ctx, verbs.FsWriteFileArgs{Path: "write.txt", Content: content})
			return err
		}},
	}
	for _, v := range verbsOf {
		for _, dest := range []struct {
			name string
			set  *verbs.Set
		}{{"docker", e.set}, {"local", e.local}} {
			b.Run(v.name+"/"+dest.name, func(b *testing.B) {
				p.reset()
				for b.Loop() {
					if err := v.call(dest.set); err != nil {
						b.Fatal(err)
					}
				}
				total, _ := p.counts()
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "µs/call")
				b.ReportMetric(float64(total)/float64(b.N), "api/op")
			})
		}
	}
}
