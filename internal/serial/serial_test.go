package serial

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/internal/testkit"
)

// TestLanesKeepOrderOneAtATime: a lane's jobs run in the order added, never
// two at once, while every lane's jobs all run.
func TestLanesKeepOrderOneAtATime(t *testing.T) {
	var l Lanes
	var mu sync.Mutex
	ran := map[string][]int{}
	active := map[string]int{}
	var overlaps []string
	for i := range 200 {
		for _, lane := range []string{"a", "b", "c"} {
			l.Add(lane, func() bool {
				mu.Lock()
				active[lane]++
				if active[lane] > 1 {
					overlaps = append(overlaps, fmt.Sprintf("%s/%d", lane, i))
				}
				ran[lane] = append(ran[lane], i)
				mu.Unlock()
				runtime.Gosched() // room for a second job of the lane, were it started
				mu.Lock()
				active[lane]--
				mu.Unlock()
				return true
			})
		}
	}
	l.Wait()
	if len(overlaps) > 0 {
		t.Errorf("jobs of one lane ran at once: %v", overlaps)
	}
	for _, lane := range []string{"a", "b", "c"} {
		if got := ran[lane]; len(got) != 200 || !slices.IsSorted(got) {
			t.Errorf("lane %s ran %d jobs, in order %v", lane, len(got), slices.IsSorted(got))
		}
	}
}

// TestLanesRunAtOnce: a lane whose job waits does not hold back another
// lane.
func TestLanesRunAtOnce(t *testing.T) {
	var l Lanes
	release := make(chan struct{})
	otherRan := make(chan struct{})
	l.Add("slow", func() bool { <-release; return true })
	l.Add("other", func() bool { close(otherRan); return true })
	select {
	case <-otherRan:
	case <-time.After(testkit.Wait):
		t.Fatal("a job of another lane waited for the slow lane")
	}
	close(release)
	l.Wait()
}

// TestLanesFalseDropsTheRest: a job that returns false drops the jobs
// queued behind it in its lane, and only them; the lane takes new jobs.
func TestLanesFalseDropsTheRest(t *testing.T) {
	var l Lanes
	var mu sync.Mutex
	var ran []string
	record := func(name string, ok bool) Job {
		return func() bool {
			mu.Lock()
			ran = append(ran, name)
			mu.Unlock()
			return ok
		}
	}
	hold := make(chan struct{})
	l.Add("x", func() bool { <-hold; return true })
	l.Add("x", record("x1", false))
	l.Add("x", record("x2", true))
	l.Add("x", record("x3", true))
	l.Add("y", record("y1", true))
	close(hold)
	l.Wait()
	l.Add("x", record("x4", true))
	l.Wait()
	slices.Sort(ran)
	if want := []string{"x1", "x4", "y1"}; !slices.Equal(ran, want) {
		t.Errorf("ran %v, want %v", ran, want)
	}
}

// TestLanesWaitWaitsForRunningJobs: Wait returns only once the job under
// way has finished.
func TestLanesWaitWaitsForRunningJobs(t *testing.T) {
	var l Lanes
	started, release := make(chan struct{}), make(chan struct{})
	finished := false
	l.Add("a", func() bool {
		close(started)
		<-release
		finished = true
		return true
	})
	<-started
	waited := make(chan struct{})
	go func() {
		l.Wait()
		close(waited)
	}()
	select {
	case <-waited:
		t.Fatal("Wait returned while a job ran")
	default:
	}
	close(release)
	<-waited
	if !finished {
		t.Fatal("Wait returned before the job finished")
	}
}
