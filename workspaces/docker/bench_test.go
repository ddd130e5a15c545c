package docker_test

import (
	"context"
	"testing"

	"github.com/a6afc2ce/hermes-hub/verbs"
)

// BenchmarkProcRunTrue measures proc.run of true: on the host, in a warm
// container, and the first call that creates the container.
func BenchmarkProcRunTrue(b *testing.B) {
	args := verbs.ProcRunArgs{Executable: "true", Arguments: []string{}}
	b.Run("local", func(b *testing.B) {
		e := newEnv(b, nil)
		for b.Loop() {
			if _, err := e.local.ProcRun(context.Background(), args); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/call")
	})
	b.Run("docker-warm", func(b *testing.B) {
		e := newEnv(b, nil)
		run(b, e.set, "true")
		for b.Loop() {
			if _, err := e.set.ProcRun(context.Background(), args); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/call")
	})
	b.Run("docker-first", func(b *testing.B) {
		e := newEnv(b, nil)
		for b.Loop() {
			if _, err := e.set.ProcRun(context.Background(), args); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if err := e.r.Reset(context.Background(), ""); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/call")
	})
}
