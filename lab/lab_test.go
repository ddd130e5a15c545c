package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/internal/dockertest"
)

// Environment knobs:
//
//	LAB_SOAK=1        run the soak scenarios for real (make soak)
//	LAB_FULL=1        run every scenario but the soak as written instead of its short version
//	LAB_SEED=N        repeat a run's random choices (every report logs its seed)
//	LAB_HUB_RACE=0|1  build the hub with the race detector (default: as the tests are)
//	LAB_KEEP=1        keep each scenario's workspace, state and hub logs (the path is logged)
//	LAB_PARALLEL=N    run N scenarios at once in TestScenarios (default 6)

var hubBuild struct {
	once sync.Once
	dir  string
	race bool
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if hubBuild.dir != "" {
		os.RemoveAll(hubBuild.dir)
	}
	os.Exit(code)
}

// hubBinary builds the hub once for the whole test binary.
func hubBinary(t *testing.T) string {
	t.Helper()
	hubBuild.once.Do(func() {
		hubBuild.race = raceEnabled
		if v := os.Getenv("LAB_HUB_RACE"); v != "" {
			hubBuild.race = v == "1"
		}
		mod, err := ModuleDir()
		if err != nil {
			hubBuild.err = err
			return
		}
		hubBuild.dir, err = os.MkdirTemp("", "lab-hub-")
		if err != nil {
			hubBuild.err = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		hubBuild.path, hubBuild.err = BuildHub(ctx, mod, hubBuild.dir, hubBuild.race)
	})
	if hubBuild.err != nil {
		t.Fatal(hubBuild.err)
	}
	return hubBuild.path
}

func scenarioFiles(t *testing.T) []*Scenario {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("scenarios", "*.yml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios under scenarios/: %v", err)
	}
	var out []*Scenario
	for _, f := range files {
		sc, err := LoadScenario(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, sc)
	}
	return out
}

func envSeed(t *testing.T) int64 {
	v := os.Getenv("LAB_SEED")
	if v == "" {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n == 0 {
		t.Fatalf("LAB_SEED=%q is not a non-zero integer", v)
	}
	return n
}

// TestScenarios runs every scenario's short version (LAB_FULL=1: as
// written, but a soak scenario stays short: its long run is TestSoak's),
// in parallel, but those on a NATS cluster: TestClusterScenarios runs
// them.
func TestScenarios(t *testing.T) {
	runScenarios(t, func(sc *Scenario) bool { return sc.Hub.Cluster == 0 })
}

// TestClusterScenarios runs the scenarios whose hub uses a three-server
// NATS cluster (hub.cluster) as TestScenarios runs the others, so that
// `go test -run Cluster` runs them with the other tests on a cluster.
func TestClusterScenarios(t *testing.T) {
	runScenarios(t, func(sc *Scenario) bool { return sc.Hub.Cluster != 0 })
}

// runScenarios runs the scenarios pick chooses, in parallel.
func runScenarios(t *testing.T, pick func(*Scenario) bool) {
	full := os.Getenv("LAB_FULL") == "1"
	bin := hubBinary(t)
	// The scenarios spend their time waiting on hubs, nodes and platforms
	// (processes of their own) more than computing: more of them run at
	// once than go test's -parallel (the CPUs) allows.
	slots := make(chan struct{}, labParallel(t))
	var wg sync.WaitGroup
	n := 0
	for _, sc := range scenarioFiles(t) {
		if !pick(sc) {
			continue
		}
		n++
		mode := Short
		if full && sc.Soak == nil {
			mode = Full
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			t.Run(sc.Name, func(t *testing.T) { runScenario(t, sc, bin, mode) })
		}()
	}
	wg.Wait()
	if n == 0 {
		t.Fatal("no scenario to run")
	}
}

// labParallel is how many scenarios TestScenarios (and
// TestClusterScenarios) runs at once: LAB_PARALLEL,
// default 6.
func labParallel(t *testing.T) int {
	v := os.Getenv("LAB_PARALLEL")
	if v == "" {
		return 6
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("LAB_PARALLEL=%q: want a number of scenarios, 1 or more", v)
	}
	return n
}

// TestSoak runs the soak scenarios for real: ten minutes of steady mixed
// load with periodic faults. Only with LAB_SOAK=1 (make soak).
func TestSoak(t *testing.T) {
	if os.Getenv("LAB_SOAK") != "1" {
		t.Skip("the soak runs with LAB_SOAK=1 (make soak); go test runs its short version in TestScenarios")
	}
	bin := hubBinary(t)
	n := 0
	for _, sc := range scenarioFiles(t) {
		if sc.Soak == nil {
			continue
		}
		n++
		t.Run(sc.Name, func(t *testing.T) { runScenario(t, sc, bin, Soak) })
	}
	if n == 0 {
		t.Fatal("no scenario has a soak section")
	}
}

func runScenario(t *testing.T, sc *Scenario, bin string, mode Mode) {
	dir := t.TempDir()
	if os.Getenv("LAB_KEEP") == "1" {
		var err error
		if dir, err = os.MkdirTemp("", "lab-"+sc.Name+"-"); err != nil {
			t.Fatal(err)
		}
		t.Logf("LAB_KEEP=1: the workspace, state and hub logs stay in %s", dir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	opts := Options{HubBinary: bin, Dir: dir, Mode: mode, Seed: envSeed(t), Logf: t.Logf}
	if sc.Hub.Docker {
		d := dockertest.StartDaemon(t)
		img := dockertest.ImportBusybox(t, d.Client())
		opts.Docker = &DockerDaemon{Host: d.Host(), Image: img, Stop: d.Stop, Start: d.Start}
	}
	rep, err := Run(ctx, sc, opts)
	if errors.Is(err, ErrNeedsRoot) {
		t.Skipf("this scenario needs root: %v", err)
	}
	if rep != nil {
		t.Log(rep.Summary())
		// One line per scenario on the test's output, for the record.
		fmt.Println(rep.Summary())
	}
	failed := err != nil || (rep != nil && len(rep.Violations) > 0)
	if err != nil {
		t.Error(err)
	}
	if rep != nil {
		for _, v := range rep.Violations {
			t.Errorf("invariant %s", v)
		}
	}
	if failed && rep != nil {
		for _, l := range rep.Logs {
			t.Logf("--- %s\n%s", l, tail(l, 60))
		}
	}
}
