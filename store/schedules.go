package store

import (
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

const (
	schedulesBucket  = "schedules"
	schedulesVersion = 1
)

// Outcomes of a schedule's run, as its state records them.
const (
	ScheduleRunning     = "running"     // the run started; a hub that died during it leaves this
	ScheduleSucceeded   = "succeeded"   // the verb ran and succeeded
	ScheduleFailed      = "failed"      // the verb ran and failed, or the call was invalid
	ScheduleForbidden   = "forbidden"   // the identity's roles do not grant the verb or the workspace
	ScheduleSkipped     = "skipped"     // not run: the previous run was still running
	ScheduleInterrupted = "interrupted" // the hub stopped during the run, which is not run again
	ScheduleNotRun      = "not_run"     // not run: it could not be recorded (the ledger, the mirror)
)

// ScheduleState is what hub.db keeps of one schedule between runs of the
// hub, so that a restart neither runs a time twice nor forgets the ones
// it missed (docs/chatops.md).
type ScheduleState struct {
	// Through is the time up to which every scheduled time is accounted
	// for: run, skipped, or before the schedule existed. A start finds
	// the times after it that have passed missed.
	Through time.Time `json:"through"`
	// Last is the latest run, nil before the first.
	Last *ScheduleRun `json:"last,omitempty"`
	// Missed is what the last start found missed, nil when nothing was.
	Missed *ScheduleMissed `json:"missed,omitempty"`
}

// ScheduleRun is one run of a schedule.
type ScheduleRun struct {
	TurnID string `json:"turn_id"`
	// Scheduled is the time the run was for (a manual run: when it was
	// asked for).
	Scheduled time.Time `json:"scheduled"`
	Manual    bool      `json:"manual,omitempty"`
	Started   time.Time `json:"started"`
	Finished  time.Time `json:"finished,omitzero"`
	// Outcome is one of the Schedule* outcomes; Code the error code of a
	// failed or forbidden run, Detail a line for people.
	Outcome string `json:"outcome"`
	Code    string `json:"code,omitempty"`
	Detail  string `json:"detail,omitempty"`
}

// ScheduleMissed is what a start found missed while the hub was down.
type ScheduleMissed struct {
	// Count is how many times passed (at least; counting stops at a
	// bound), First and Last the first and the latest of them.
	Count int       `json:"count"`
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	// Policy is what was done: skip, or run_once (the latest ran).
	Policy string    `json:"policy"`
	Found  time.Time `json:"found"`
}

// Schedules keeps each schedule's state in hub.db, by schedule name. Its
// writes are durable when they return.
type Schedules struct{ db *DB }

// OpenSchedules creates the schedules' bucket in db.
func OpenSchedules(db *DB) (*Schedules, error) {
	err := db.Update(func(tx *bolt.Tx) error {
		_, _, err := EnsureBucket(tx, schedulesBucket, schedulesVersion)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("open schedule states: %w", err)
	}
	return &Schedules{db: db}, nil
}

// Get returns the state of the schedule name; ok is false when none is
// kept.
func (s *Schedules) Get(name string) (st ScheduleState, ok bool, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket([]byte(schedulesBucket)).Get([]byte(name))
		if v == nil {
			return nil
		}
		ok = true
		return json.Unmarshal(v, &st)
	})
	if err != nil {
		return ScheduleState{}, false, fmt.Errorf("schedule %s: read its state: %w", name, err)
	}
	return st, ok, nil
}

// Put records the state of the schedule name, durably.
func (s *Schedules) Put(name string, st ScheduleState) error {
	v, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("schedule %s: %w", name, err)
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(schedulesBucket)).Put([]byte(name), v)
	})
	if err != nil {
		return fmt.Errorf("schedule %s: record its state: %w", name, err)
	}
	return nil
}
