package verbs_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/verbs"
	"github.com/a6afc2ce/hermes-hub/verbs/internal/verbtest"
)

// benchMount writes files×size bytes under the mount root and mounts them.
func benchMount(files, size int) sessOption {
	return func(o *verbs.SessionOptions, e *sessEnv) {
		body := strings.Repeat("x", size)
		for i := range files {
			verbtest.WriteFile(e.t, filepath.Join(e.mountDir, "tree", fmt.Sprintf("d%02d", i%16), fmt.Sprintf("f%04d.txt", i)), body)
		}
		o.Mounts = []verbs.Mount{{HostPath: "tree"}}
	}
}

// BenchmarkSessionCreate measures opening a new session with a mount of 200
// files of 4 KiB copied in (fsynced): what a chat waits for on its first verb.
func BenchmarkSessionCreate(b *testing.B) {
	e := newSessEnv(b, benchMount(200, 4<<10))
	n := 0
	var lat []time.Duration
	for b.Loop() {
		start := time.Now()
		sok[verbs.FsExistsResult](e, fmt.Sprintf("bench:%d", n), "fs.exists", verbs.FsExistsArgs{Path: "."})
		lat = append(lat, time.Since(start))
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "sessions/s")
	b.ReportMetric(p99(lat), "p99-ms")
}

// BenchmarkSessionWrite measures fs.writeFile of 1 KiB in a session
// workspace, version recorded (in-memory metadata), through the executor.
func BenchmarkSessionWrite(b *testing.B) {
	e := newSessEnv(b)
	content := strings.Repeat("y", 1<<10)
	n := 0
	var lat []time.Duration
	for b.Loop() {
		start := time.Now()
		sok[verbs.FsWriteFileResult](e, chatA, "fs.writeFile", verbs.FsWriteFileArgs{Path: fmt.Sprintf("w/%d.txt", n%100), Content: content})
		lat = append(lat, time.Since(start))
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "writes/s")
	b.ReportMetric(p99(lat), "p99-ms")
}

// BenchmarkSnapshot measures vfs.snapshot of a workspace of 200 files of
// 4 KiB (800 KiB), in MB copied per second.
func BenchmarkSnapshot(b *testing.B) {
	e := newSessEnv(b, benchMount(200, 4<<10), func(o *verbs.SessionOptions, _ *sessEnv) { o.MaxSnapshots = 3 })
	sok[verbs.FsExistsResult](e, chatA, "fs.exists", verbs.FsExistsArgs{Path: "."})
	n := 0
	for b.Loop() {
		sok[verbs.VfsSnapshotResult](e, chatA, "vfs.snapshot", verbs.VfsSnapshotArgs{})
		n++
	}
	b.ReportMetric(float64(n)*200*4096/1e6/b.Elapsed().Seconds(), "MB/s")
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "snapshots/s")
}

func p99(lat []time.Duration) float64 {
	if len(lat) == 0 {
		return 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	return float64(s[(len(s)*99)/100]) / float64(time.Millisecond)
}
