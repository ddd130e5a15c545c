// Package serial runs jobs one at a time per lane, in the order they were
// added, different lanes at once: the per-chat ordering of the platform
// adapters, where the messages of one chat are turns in the order they were
// sent while other chats go on.
package serial

import "sync"

// Job is one unit of work in a lane. Returning false drops the jobs queued
// behind it in its lane (the adapter is stopping: they were not started,
// and the platform gives them again at the next start).
type Job func() bool

// Lanes is a set of lanes, each with at most one worker goroutine, started
// when a job arrives in an idle lane and gone when its lane is empty. The
// zero value is ready to use; Lanes must not be copied after first use.
type Lanes struct {
	mu    sync.Mutex
	lanes map[string][]Job
	wg    sync.WaitGroup
}

// Add queues job behind the earlier jobs of lane and starts the lane's
// worker if the lane is idle. It never blocks on the jobs.
func (l *Lanes) Add(lane string, job Job) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lanes == nil {
		l.lanes = map[string][]Job{}
	}
	q, busy := l.lanes[lane]
	l.lanes[lane] = append(q, job)
	if busy {
		return
	}
	l.wg.Add(1)
	go l.work(lane)
}

// work runs lane's jobs in order until the lane is empty or a job returns
// false.
func (l *Lanes) work(lane string) {
	defer l.wg.Done()
	for {
		l.mu.Lock()
		q := l.lanes[lane]
		if len(q) == 0 {
			delete(l.lanes, lane)
			l.mu.Unlock()
			return
		}
		job := q[0]
		q[0] = nil
		l.lanes[lane] = q[1:]
		l.mu.Unlock()
		if !job() {
			l.mu.Lock()
			delete(l.lanes, lane)
			l.mu.Unlock()
			return
		}
	}
}

// Wait waits until every lane is idle and its worker gone. Call it once
// no more jobs are added (the adapter stopped taking messages).
func (l *Lanes) Wait() { l.wg.Wait() }
