package store

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// TestScheduleStatesSurviveReopen: a schedule's state, its last run and
// what a start found missed, is read back after the database is closed
// and opened again; a schedule never recorded has none.
func TestScheduleStatesSurviveReopen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".hub")
	at := time.Date(2026, 3, 29, 6, 0, 0, 0, time.UTC)
	want := ScheduleState{
		Through: at,
		Last: &ScheduleRun{TurnID: "schedule.nightly.1774764000", Scheduled: at, Started: at.Add(time.Second),
			Finished: at.Add(3 * time.Second), Outcome: ScheduleForbidden, Code: "forbidden", Detail: "schedule:nightly may not run proc.run"},
		Missed: &ScheduleMissed{Count: 2, First: at.Add(-48 * time.Hour), Last: at.Add(-24 * time.Hour), Policy: "skip", Found: at.Add(-time.Minute)},
	}
	st, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := OpenSchedules(st.Database())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.Get("nightly"); ok || err != nil {
		t.Fatalf("a schedule never recorded: ok %v, err %v", ok, err)
	}
	if err := s.Put("nightly", want); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err = OpenSchedules(st.Database())
	if err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.Get("nightly")
	if err != nil || !ok {
		t.Fatalf("get after reopen: ok %v, err %v", ok, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("state after reopen:\n got %+v\nwant %+v", got, want)
	}
}
