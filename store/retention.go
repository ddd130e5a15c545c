package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"
)

// KindRetention is how long the runs of one kind are kept. Zero values
// mean no limit.
type KindRetention struct {
	// KeepAge removes runs that started longer ago.
	KeepAge time.Duration
	// KeepRuns keeps at most this many runs of the kind, the oldest going
	// first.
	KeepRuns int
	// KeepBytes keeps the kind's runs within this many bytes on disk, the
	// oldest going first.
	KeepBytes int64
	// MinRuns runs of the kind, the newest, stay whatever their age or
	// size.
	MinRuns int
}

// Retention is the retention of each kind of run. The kinds are counted
// apart: CLI runs never make a serve run go, nor the reverse.
type Retention struct {
	Serve, CLI KindRetention
}

// of returns the retention of kind.
func (r Retention) of(kind RunKind) KindRetention {
	if kind == RunCLI {
		return r.CLI
	}
	return r.Serve
}

// Why a run is removed.
const (
	PruneAge        = "age"        // older than keep_age
	PruneCount      = "count"      // more runs of its kind than keep_runs
	PruneSize       = "size"       // its kind's runs hold more than keep_bytes
	PruneIncomplete = "incomplete" // left by a run whose creation was cut short; holds no records
)

// RunInfo describes one run directory.
type RunInfo struct {
	ID   string  `json:"id"`
	Kind RunKind `json:"kind"`
	// Marked is false for a run without a marker (written before kinds were
	// recorded): it is taken as a serve run.
	Marked  bool      `json:"marked"`
	Started time.Time `json:"started"`
	Bytes   int64     `json:"bytes"`
	// Live is true while a process holds the run open; a live run is
	// never removed.
	Live bool `json:"live"`
}

// PruneItem is one removal and why.
type PruneItem struct {
	RunInfo
	// Path is the entry of the flows directory that goes, named from the
	// state directory (flows/<run_id>): the run's directory, or for an
	// incomplete run what it left.
	Path   string `json:"path"`
	entry  string // Path's name in the flows directory
	Reason string `json:"reason"` // PruneAge, PruneCount, PruneSize, PruneIncomplete
	Why    string `json:"why"`
}

// PrunePlan is what pruning would do now.
type PrunePlan struct {
	// Runs are every run, oldest first.
	Runs []RunInfo `json:"runs"`
	// Remove are the runs (and leftovers) pruning removes, oldest first.
	Remove []PruneItem `json:"remove"`
}

// ListRunInfo describes every run in flows, oldest first: its kind,
// start, size on disk and whether a process holds it open.
func ListRunInfo(flows *os.Root) ([]RunInfo, error) {
	var out []RunInfo
	for _, id := range ListRuns(flows) {
		ri, err := runInfo(flows, id)
		if err != nil {
			return nil, err
		}
		out = append(out, ri)
	}
	return out, nil
}

func runInfo(flows *os.Root, id string) (RunInfo, error) {
	started, _ := ParseRunID(id) // ListRuns returns run ids only
	kind, marked := readRunKind(flows, id)
	size, err := dirBytes(flows, id)
	if err != nil {
		return RunInfo{}, fmt.Errorf("size of run %s: %w", id, err)
	}
	live, err := runLive(flows, id)
	if err != nil {
		return RunInfo{}, err
	}
	return RunInfo{ID: id, Kind: kind, Marked: marked, Started: started, Bytes: size, Live: live}, nil
}

// runLive reports whether a process holds run id open. A run without a lock
// file was written by a hub that kept none and is not open.
func runLive(flows *os.Root, id string) (bool, error) {
	if !runLocks {
		return true, nil
	}
	l, err := lockRun(flows, id, false)
	switch {
	case err == nil:
		return false, l.release()
	case errors.Is(err, ErrRunOpen):
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("is run %s open: %w", id, err)
}

// dirBytes is the size of the regular files under dir in flows.
func dirBytes(flows *os.Root, dir string) (int64, error) {
	var n int64
	err := fs.WalkDir(flows.FS(), dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) { // removed meanwhile
				return nil
			}
			return err
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	if err != nil {
		return n, flowsError("walk", dir, err)
	}
	return n, nil
}

// PlanPrune says which runs in flows retention r removes at now, and
// why, without touching anything. Each kind is judged on its own runs:
// first by age, then by count, then by size, the oldest first; the newest
// MinRuns of a kind and every live run are never removed, though they count
// towards keep_runs and keep_bytes. Leftovers of runs whose creation was cut
// short go too, once no process holds their lock.
func PlanPrune(flows *os.Root, r Retention, now time.Time) (PrunePlan, error) {
	runs, err := ListRunInfo(flows)
	if err != nil {
		return PrunePlan{}, err
	}
	plan := PrunePlan{Runs: runs}
	for _, kind := range RunKinds {
		var of []RunInfo
		for _, ri := range runs {
			if ri.Kind == kind {
				of = append(of, ri)
			}
		}
		plan.Remove = append(plan.Remove, planKind(of, kind, r.of(kind), now)...)
	}
	left, err := leftovers(flows)
	if err != nil {
		return PrunePlan{}, err
	}
	plan.Remove = append(plan.Remove, left...)
	slices.SortStableFunc(plan.Remove, func(a, b PruneItem) int { return strings.Compare(a.ID, b.ID) })
	if plan.Runs == nil {
		plan.Runs = []RunInfo{}
	}
	if plan.Remove == nil {
		plan.Remove = []PruneItem{}
	}
	return plan, nil
}

// planKind applies k to the runs of one kind, oldest first.
func planKind(runs []RunInfo, kind RunKind, k KindRetention, now time.Time) []PruneItem {
	n := len(runs)
	gone := make([]bool, n)
	var out []PruneItem
	keep := func(i int) bool { return runs[i].Live || i >= n-k.MinRuns }
	drop := func(i int, reason, why string) {
		gone[i] = true
		out = append(out, PruneItem{RunInfo: runs[i], Path: flowsName(runs[i].ID), entry: runs[i].ID, Reason: reason, Why: why})
	}
	if k.KeepAge > 0 {
		for i, ri := range runs {
			if age := now.Sub(ri.Started); age > k.KeepAge && !keep(i) {
				drop(i, PruneAge, fmt.Sprintf("started %s ago, keep_age of %s runs is %s", roundAge(age), kind, k.KeepAge))
			}
		}
	}
	left := func() (count int, bytes int64) {
		for i, ri := range runs {
			if !gone[i] {
				count++
				bytes += ri.Bytes
			}
		}
		return count, bytes
	}
	if count, _ := left(); k.KeepRuns > 0 && count > k.KeepRuns {
		for i := 0; i < n && count > k.KeepRuns; i++ {
			if !gone[i] && !keep(i) {
				drop(i, PruneCount, fmt.Sprintf("%d %s runs, keep_runs is %d", count, kind, k.KeepRuns))
				count--
			}
		}
	}
	if _, total := left(); k.KeepBytes > 0 && total > k.KeepBytes {
		for i := 0; i < n && total > k.KeepBytes; i++ {
			if !gone[i] && !keep(i) {
				drop(i, PruneSize, fmt.Sprintf("%s runs hold %d bytes, keep_bytes is %d", kind, total, k.KeepBytes))
				total -= runs[i].Bytes
			}
		}
	}
	return out
}

// roundAge shows an age to the minute, or in days past two days.
func roundAge(d time.Duration) string {
	if d >= 48*time.Hour {
		return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	}
	return d.Round(time.Minute).String()
}

// leftovers are what runs whose creation (or removal) was cut short left
// in flows: a .<run_id>.new directory, or a lock file without its run,
// no process holding the lock.
func leftovers(flows *os.Root) ([]PruneItem, error) {
	ents, err := fs.ReadDir(flows.FS(), ".")
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", flowsError("read directory", ".", err))
	}
	var out []PruneItem
	for _, e := range ents {
		id := runOfNew(e.Name())
		if id == "" {
			if id = runOfLock(e.Name()); id == "" {
				continue
			}
			if _, err := flows.Lstat(id); err == nil {
				continue // the lock of a run that exists
			}
		}
		live, err := runLive(flows, id)
		if err != nil {
			return nil, err
		}
		if live {
			continue
		}
		started, _ := ParseRunID(id)
		out = append(out, PruneItem{
			RunInfo: RunInfo{ID: id, Started: started},
			Path:    flowsName(e.Name()), entry: e.Name(), Reason: PruneIncomplete,
			Why: "left by a run whose creation or removal was cut short",
		})
	}
	return out, nil
}

// PruneRuns removes what PlanPrune plans now and returns that plan with
// Remove narrowed to what it removed. A run found open when its turn comes
// is left alone, and so is anything that fails to go (the error says what).
func PruneRuns(flows *os.Root, r Retention, now time.Time) (PrunePlan, error) {
	plan, err := PlanPrune(flows, r, now)
	if err != nil {
		return PrunePlan{}, err
	}
	removed := []PruneItem{}
	var errs []error
	for _, it := range plan.Remove {
		ok, err := removeRun(flows, it)
		if err != nil {
			errs = append(errs, err)
		}
		if ok {
			removed = append(removed, it)
		}
	}
	plan.Remove = removed
	return plan, errors.Join(errs...)
}

// removeRun removes one planned item unless its run has been opened
// since: it takes the run's lock first, so no writer can hold it meanwhile
// (a writer never reopens a finished run, and a new one cannot take its
// id while the lock file exists), removes the entry, then the lock file.
func removeRun(flows *os.Root, it PruneItem) (bool, error) {
	l, err := lockRun(flows, it.ID, false)
	switch {
	case errors.Is(err, ErrRunOpen):
		return false, nil
	case errors.Is(err, fs.ErrNotExist):
		l = nil // a run from before lock files
	case err != nil:
		return false, fmt.Errorf("remove run %s: %w", it.ID, err)
	}
	if it.entry != RunLockName(it.ID) {
		if err := flows.RemoveAll(it.entry); err != nil {
			l.release()
			return false, fmt.Errorf("remove run %s: %w", it.ID, flowsError("remove", it.entry, err))
		}
	}
	if l == nil {
		return true, nil
	}
	if err := l.release(); err != nil {
		return true, fmt.Errorf("remove run %s: %w", it.ID, err)
	}
	if _, err := flows.Lstat(it.ID); errors.Is(err, fs.ErrNotExist) {
		if err := flows.Remove(RunLockName(it.ID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return true, fmt.Errorf("remove run %s: %w", it.ID, flowsError("remove", RunLockName(it.ID), err))
		}
	}
	return true, nil
}
