package store

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// holdRunEnv makes the test binary, run as a child, open the mirror run it
// names (flows directory and run id, separated by a newline) as a CLI run,
// print "ready" and keep it open until its stdin closes.
const holdRunEnv = "STORE_TEST_HOLD_RUN"

func holdRun(spec string) int {
	flows, id, _ := strings.Cut(spec, "\n")
	root, err := os.OpenRoot(flows)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	defer root.Close()
	m, err := OpenMirror(root, id, MirrorOptions{Kind: RunCLI})
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	if err := m.Close(); err != nil {
		fmt.Println("error:", err)
		return 1
	}
	return 0
}

// holdRunInChild opens run id under flows in another process, until the
// test ends.
func holdRunInChild(t *testing.T, flows, id string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holdRunEnv+"="+flows+"\n"+id)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if line != "ready\n" {
		t.Fatalf("child: %q", line)
	}
}

var retentionNow = time.Date(2026, 3, 30, 12, 0, 0, 0, time.UTC)

// runAt is a run id started ago before retentionNow.
func runAt(ago time.Duration, suffix string) string {
	return retentionNow.Add(-ago).UTC().Format(runIDTime) + "-" + suffix
}

// makeRun writes a closed run of kind ("" : no marker, as runs from before
// markers) holding size bytes of mirror.
func makeRun(t *testing.T, flows, id string, kind RunKind, size int) {
	t.Helper()
	if kind == "" {
		if err := os.MkdirAll(filepath.Join(flows, id, "chat"), 0o700); err != nil {
			t.Fatal(err)
		}
	} else {
		m, err := OpenMirror(openRoot(t, flows), id, MirrorOptions{Kind: kind})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	}
	line := strings.Repeat("x", max(size-1, 0)) + "\n"
	if err := os.WriteFile(filepath.Join(flows, id, "chat", "inbound.jsonl"), []byte(line[:size]), 0o600); err != nil {
		t.Fatal(err)
	}
}

func ids(items []PruneItem) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, it.ID)
	}
	return out
}

// TestPruneCountsKindsApart: CLI runs never make serve runs go. With
// keep_runs 3 for both kinds, four CLI runs leave the two serve runs
// alone; fifty CLI runs under the defaults of mirror.retention leave
// every serve run.
func TestPruneCountsKindsApart(t *testing.T) {
	flows := t.TempDir()
	s1, s2 := runAt(48*time.Hour, "0001"), runAt(47*time.Hour, "0002")
	makeRun(t, flows, s1, RunServe, 100)
	makeRun(t, flows, s2, RunServe, 100)
	var cli []string
	for i := range 4 {
		id := runAt(time.Duration(46-i)*time.Hour, fmt.Sprintf("c%03x", i))
		makeRun(t, flows, id, RunCLI, 100)
		cli = append(cli, id)
	}
	three := KindRetention{KeepRuns: 3}
	removed, err := PruneRuns(openRoot(t, flows), Retention{Serve: three, CLI: three}, retentionNow)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(removed.Remove); !slices.Equal(got, cli[:1]) {
		t.Fatalf("removed %v, want only the oldest CLI run %s", got, cli[0])
	}
	if !slices.Contains(ListRuns(openRoot(t, flows)), s1) || !slices.Contains(ListRuns(openRoot(t, flows)), s2) {
		t.Fatalf("a serve run went: %v", ListRuns(openRoot(t, flows)))
	}
	for i := range 50 {
		makeRun(t, flows, runAt(time.Duration(40*60-i)*time.Minute, fmt.Sprintf("d%03x", i)), RunCLI, 100)
	}
	def := Retention{
		Serve: KindRetention{KeepAge: 720 * time.Hour, KeepRuns: 50, MinRuns: 3},
		CLI:   KindRetention{KeepAge: 720 * time.Hour, KeepRuns: 1000, KeepBytes: 256 << 20},
	}
	if removed, err := PruneRuns(openRoot(t, flows), def, retentionNow); err != nil || len(removed.Remove) != 0 {
		t.Fatalf("defaults removed %v (%v)", ids(removed.Remove), err)
	}
	// Even 50 serve runs' worth of CLI runs under the older single count.
	fifty := KindRetention{KeepRuns: 50}
	if _, err := PruneRuns(openRoot(t, flows), Retention{Serve: fifty, CLI: fifty}, retentionNow); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(ListRuns(openRoot(t, flows)), s1) || !slices.Contains(ListRuns(openRoot(t, flows)), s2) {
		t.Fatalf("a serve run went: %v", ListRuns(openRoot(t, flows)))
	}
}

// TestPruneRules: age, count and size, each per kind, oldest first; the
// newest min_runs stay whatever their age or size; a run without a marker
// is a serve run.
func TestPruneRules(t *testing.T) {
	day := 24 * time.Hour
	serve := []string{runAt(90*day, "0a01"), runAt(40*day, "0a02"), runAt(20*day, "0a03"), runAt(10*day, "0a04"), runAt(1*day, "0a05")}
	cli := []string{runAt(60*day, "0b01"), runAt(5*day, "0b02"), runAt(4*day, "0b03"), runAt(3*day, "0b04")}
	legacy := runAt(100*day, "0c01")
	tests := []struct {
		name   string
		r      Retention
		want   []string
		reason string
	}{
		{"nothing set keeps all", Retention{}, nil, ""},
		{"age", Retention{Serve: KindRetention{KeepAge: 30 * day}}, []string{legacy, serve[0], serve[1]}, PruneAge},
		{"age, min runs", Retention{Serve: KindRetention{KeepAge: 15 * day, MinRuns: 4}}, []string{legacy, serve[0]}, PruneAge},
		{"age of cli only", Retention{CLI: KindRetention{KeepAge: 30 * day}}, []string{cli[0]}, PruneAge},
		{"count", Retention{Serve: KindRetention{KeepRuns: 4}, CLI: KindRetention{KeepRuns: 1}}, []string{legacy, serve[0], cli[0], cli[1], cli[2]}, PruneCount},
		// Each serve run holds 1000 bytes and its marker, the legacy one 10.
		{"size", Retention{Serve: KindRetention{KeepBytes: 3500}}, []string{legacy, serve[0], serve[1]}, PruneSize},
		{"size, min runs", Retention{Serve: KindRetention{KeepBytes: 10, MinRuns: 2}}, []string{legacy, serve[0], serve[1], serve[2]}, PruneSize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			flows := t.TempDir()
			for _, id := range serve {
				makeRun(t, flows, id, RunServe, 1000)
			}
			for _, id := range cli {
				makeRun(t, flows, id, RunCLI, 1000)
			}
			makeRun(t, flows, legacy, "", 10)
			// Not runs: never touched.
			os.Mkdir(filepath.Join(flows, "notes"), 0o700)
			os.WriteFile(filepath.Join(flows, "20200101T000000Z-dead"), nil, 0o600)
			removed, err := PruneRuns(openRoot(t, flows), tt.r, retentionNow)
			if err != nil {
				t.Fatal(err)
			}
			want := slices.Clone(tt.want)
			slices.Sort(want)
			if got := ids(removed.Remove); !slices.Equal(got, append([]string{}, want...)) {
				t.Fatalf("removed %v, want %v", got, want)
			}
			for _, it := range removed.Remove {
				if it.Reason != tt.reason || it.Why == "" {
					t.Errorf("%s removed for %q (%s), want %q", it.ID, it.Reason, it.Why, tt.reason)
				}
				if _, err := os.Lstat(filepath.Join(flows, it.ID)); !os.IsNotExist(err) {
					t.Errorf("%s is still there", it.ID)
				}
				if _, err := os.Lstat(filepath.Join(flows, RunLockName(it.ID))); !os.IsNotExist(err) {
					t.Errorf("the lock file of %s is still there", it.ID)
				}
			}
			for _, keep := range []string{"notes", "20200101T000000Z-dead"} {
				if _, err := os.Stat(filepath.Join(flows, keep)); err != nil {
					t.Errorf("%s was removed", keep)
				}
			}
			plan, err := PlanPrune(openRoot(t, flows), Retention{}, retentionNow)
			if err != nil {
				t.Fatal(err)
			}
			for _, ri := range plan.Runs {
				if ri.ID == legacy && (ri.Kind != RunServe || ri.Marked) {
					t.Errorf("the run without a marker: %+v", ri)
				}
			}
		})
	}
}

// TestPruneNeverRemovesAnOpenRun: a run another process holds open, or
// a mirror of this process, is never removed, though it counts; once
// closed it goes.
func TestPruneNeverRemovesAnOpenRun(t *testing.T) {
	flows := t.TempDir()
	held, open, last := runAt(90*24*time.Hour, "0001"), runAt(80*24*time.Hour, "0002"), runAt(time.Hour, "0003")
	holdRunInChild(t, flows, held)
	m, err := OpenMirror(openRoot(t, flows), open, MirrorOptions{Kind: RunCLI})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	makeRun(t, flows, last, RunCLI, 10)
	r := Retention{CLI: KindRetention{KeepAge: 24 * time.Hour, KeepRuns: 1, KeepBytes: 1 << 20}}
	plan, err := PlanPrune(openRoot(t, flows), r, retentionNow)
	if err != nil {
		t.Fatal(err)
	}
	for _, ri := range plan.Runs {
		if want := ri.ID != last; ri.Live != want {
			t.Errorf("%s live %v, want %v", ri.ID, ri.Live, want)
		}
	}
	removed, err := PruneRuns(openRoot(t, flows), r, retentionNow)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(removed.Remove); !slices.Equal(got, []string{last}) {
		t.Fatalf("removed %v, want only %s (two runs are open)", got, last)
	}
	if err := m.Append(t.Context(), in("still writing"), true); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenMirror(openRoot(t, flows), held, MirrorOptions{Kind: RunCLI}); !errors.Is(err, ErrRunOpen) {
		t.Fatalf("opening a run another process holds: %v", err)
	}
	m.Close()
	removed, err = PruneRuns(openRoot(t, flows), r, retentionNow)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(removed.Remove); !slices.Equal(got, []string{open}) {
		t.Fatalf("removed %v once closed, want %s", got, open)
	}
}

// TestPlanPruneChangesNothing: the plan lists exactly what pruning then
// removes, and planning touches no file.
func TestPlanPruneChangesNothing(t *testing.T) {
	flows := t.TempDir()
	for i := range 6 {
		makeRun(t, flows, runAt(time.Duration(60-10*i)*24*time.Hour, fmt.Sprintf("%04x", i)), []RunKind{RunServe, RunCLI, ""}[i%3], 500)
	}
	// Leftovers of a creation cut short.
	os.Mkdir(filepath.Join(flows, "."+runAt(time.Hour, "0f01")+".new"), 0o700)
	os.WriteFile(filepath.Join(flows, RunLockName(runAt(time.Hour, "0f02"))), nil, 0o600)
	r := Retention{Serve: KindRetention{KeepAge: 35 * 24 * time.Hour}, CLI: KindRetention{KeepRuns: 1}}
	before := snapshot(t, flows)
	plan, err := PlanPrune(openRoot(t, flows), r, retentionNow)
	if err != nil {
		t.Fatal(err)
	}
	if after := snapshot(t, flows); !slices.Equal(before, after) {
		t.Fatalf("planning changed the flows:\n%v\n%v", before, after)
	}
	if len(plan.Remove) == 0 || len(plan.Runs) != 6 {
		t.Fatalf("plan %+v", plan)
	}
	done, err := PruneRuns(openRoot(t, flows), r, retentionNow)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(plan.Remove), ids(done.Remove)) {
		t.Fatalf("planned %v, removed %v", ids(plan.Remove), ids(done.Remove))
	}
	var reasons []string
	for _, it := range done.Remove {
		reasons = append(reasons, it.Reason)
		if _, err := os.Lstat(filepath.Join(filepath.Dir(flows), it.Path)); !os.IsNotExist(err) {
			t.Errorf("%s is still there", it.Path)
		}
	}
	for _, want := range []string{PruneAge, PruneCount, PruneIncomplete} {
		if !slices.Contains(reasons, want) {
			t.Errorf("no removal for %s: %v", want, reasons)
		}
	}
}

// snapshot lists every entry under dir with its size and mtime.
func snapshot(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := d.Info()
		out = append(out, fmt.Sprintf("%s %d %s", p, fi.Size(), fi.ModTime()))
		return nil
	})
	return out
}

// TestOpenMirrorMarksAndLocksTheRun: a new run appears with its marker and
// its lock held, and no temporary directory is left.
func TestOpenMirrorMarksAndLocksTheRun(t *testing.T) {
	flows := t.TempDir()
	m, err := OpenMirror(openRoot(t, flows), run1, MirrorOptions{Kind: RunCLI})
	if err != nil {
		t.Fatal(err)
	}
	if kind, marked := readRunKind(openRoot(t, flows), run1); kind != RunCLI || !marked {
		t.Fatalf("kind %q marked %v", kind, marked)
	}
	if live, err := runLive(openRoot(t, flows), run1); err != nil || !live {
		t.Fatalf("live %v %v", live, err)
	}
	ents, _ := os.ReadDir(flows)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{run1, run1 + ".lock"}) {
		t.Fatalf("flows holds %v", names)
	}
	if _, err := OpenMirror(openRoot(t, flows), run1, MirrorOptions{}); !errors.Is(err, ErrRunOpen) {
		t.Fatalf("a second writer: %v", err)
	}
	m.Close()
	if live, err := runLive(openRoot(t, flows), run1); err != nil || live {
		t.Fatalf("closed: live %v %v", live, err)
	}
	// Reopened, it keeps its kind.
	m, err = OpenMirror(openRoot(t, flows), run1, MirrorOptions{Kind: RunServe})
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	if kind, _ := readRunKind(openRoot(t, flows), run1); kind != RunCLI {
		t.Fatalf("reopened as %q", kind)
	}
}
