package hubtest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/store"
)

// SlowVerb is the verb test.slow, for tests of long calls: it reports a
// line of progress for each Step it is told to take and ends when Finish
// is called (with its lines as output) or when its call is cancelled.
type SlowVerb struct {
	// Started receives once each time a call of the verb starts.
	Started  chan struct{}
	steps    chan string
	reported chan struct{}
	release  chan struct{}
	once     sync.Once
}

type slowArgs struct{}

type slowResult struct {
	executor.Result
	Out string `json:"out"`
}

// NewSlowVerb returns a SlowVerb to register.
func NewSlowVerb() *SlowVerb {
	return &SlowVerb{Started: make(chan struct{}, 4), steps: make(chan string), reported: make(chan struct{}), release: make(chan struct{})}
}

// Register adds test.slow to reg; it fits Options.Register.
func (s *SlowVerb) Register(reg *executor.Registry, _ *config.Config, _ *store.State) error {
	return executor.Register(reg, executor.Info{Name: "test.slow", Summary: "A slow verb"},
		executor.VerbFunc[slowArgs, slowResult](func(ctx context.Context, _ slowArgs) (slowResult, error) {
			s.Started <- struct{}{}
			var lines []string
			for {
				select {
				case l := <-s.steps:
					lines = append(lines, l)
					executor.ReportProgress(ctx, executor.Progress{Tail: strings.Join(lines, "\n")})
					s.reported <- struct{}{}
				case <-s.release:
					return slowResult{Out: strings.Join(lines, "\n")}, nil
				case <-ctx.Done():
					return slowResult{}, executor.Errorf(executor.CodeCanceled, "test.slow was stopped before it finished (%v)", ctx.Err())
				}
			}
		}))
}

// Step makes the running call report one more line and returns once it has
// (so a clock moved afterwards sees the report).
func (s *SlowVerb) Step(t testing.TB, line string) {
	t.Helper()
	select {
	case s.steps <- line:
	case <-time.After(testkit.Wait):
		t.Fatal("no call of test.slow is running")
	}
	select {
	case <-s.reported:
	case <-time.After(testkit.Wait):
		t.Fatal("test.slow did not report its progress")
	}
}

// Finish lets the running calls end; it may be called more than once (at
// cleanup, say, so that a failed test leaves no turn running).
func (s *SlowVerb) Finish() { s.once.Do(func() { close(s.release) }) }
