//go:build unix

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/admin"
	"github.com/a6afc2ce/hermes-hub/store"
)

// stopServe stops a hub started by startServe and waits for it.
func stopServe(t *testing.T, cmd *exec.Cmd, logs *syncWriter) {
	t.Helper()
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("hub exit: %v\n%s", err, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the hub did not stop\n%s", logs.String())
	}
}

// serveRun runs `hub serve` in dir, delivers text through it to a local
// target (so its run holds records), stops it and returns its run id.
func serveRun(t *testing.T, dir, cfg, text string) string {
	t.Helper()
	cmd, _, logs := startServe(t, dir, "--config", cfg)
	if out, errOut, code := runHub(t, dir, "", "targets", "add", "--config", cfg, "local:pma/deliveries.jsonl"); code != 0 {
		t.Fatalf("targets add: %s %s", out, errOut)
	}
	if _, errOut, code := runHub(t, dir, "", "send", "--config", cfg, text); code != 0 {
		t.Fatalf("send: %s", errOut)
	}
	var run string
	flows := filepath.Join(dir, ".hub", "flows")
	waitUntil(t, "the hub's run mirrors the delivery", func() bool {
		for _, r := range listRuns(flows) {
			b, _ := os.ReadFile(filepath.Join(flows, r, "chat", "outbound.jsonl"))
			if strings.Contains(string(b), text) && strings.Contains(string(b), `"platform":"local"`) {
				run = r
				return true
			}
		}
		return false
	})
	stopServe(t, cmd, logs)
	return run
}

func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCLIWritesNeverPruneChatHistory: CLI runs are kept apart from the
// hub's: with the older keep_runs: 3, four `hub exec` writes, and under
// the defaults fifty, leave the previous `hub serve` run's chat mirror in
// place when the next `hub serve` starts and prunes.
func TestCLIWritesNeverPruneChatHistory(t *testing.T) {
	t.Parallel() // its own directories and processes: it runs beside the package's other long tests
	for _, tc := range []struct {
		name   string
		config string
		writes int
	}{
		{"keep_runs 3, four writes", "mirror:\n  keep_runs: 3\n", 4},
		{"defaults, fifty writes", "", 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := workspace(t)
			cfg := filepath.Join(dir, "hub.yml")
			os.WriteFile(cfg, []byte("web:\n  listen: 127.0.0.1:0\n"+tc.config), 0o600)
			first := serveRun(t, dir, cfg, "chat history of the first run")
			// Run ids start with the second: from the next one on, every
			// CLI run sorts after the hub's, as it would after a real chat.
			time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
			for i := range tc.writes {
				env := fmt.Sprintf(`{"verb":"fs.writeFile","arguments":{"path":"w%d.txt","content":"x"}}`, i)
				if _, errOut, code := runHub(t, dir, "", "exec", "--config", cfg, env); code != 0 {
					t.Fatalf("write %d: %s", i, errOut)
				}
			}
			second := serveRun(t, dir, cfg, "chat history of the second run")
			flows := filepath.Join(dir, ".hub", "flows")
			for _, run := range []string{first, second} {
				b, err := os.ReadFile(filepath.Join(flows, run, "chat", "outbound.jsonl"))
				if err != nil || !strings.Contains(string(b), "chat history of the") {
					t.Fatalf("the serve run %s lost its chat mirror: %v", run, err)
				}
			}
		})
	}
}

// startStdio starts `hub exec --stdio` in dir and returns a func that
// writes one file through it (waiting for the answer) and one that ends it.
func startStdio(t *testing.T, dir string, args ...string) (write func(path string), end func()) {
	t.Helper()
	cmd := exec.Command(hubBin, append([]string{"exec", "--stdio"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HUB_CONFIG=")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	answers := bufio.NewReader(stdout)
	write = func(path string) {
		t.Helper()
		fmt.Fprintf(stdin, `{"verb":"fs.writeFile","arguments":{"path":%q,"content":"x"}}`+"\n", path)
		if line, err := answers.ReadString('\n'); err != nil || strings.Contains(line, "errorCode") {
			t.Fatalf("stdio write: %q %v", line, err)
		}
	}
	end = func() {
		t.Helper()
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	return write, end
}

// TestServeNeverPrunesAnOpenRun: the run of a CLI process still writing
// (`hub exec --stdio`) is never removed when `hub serve` starts and
// prunes, though it is the oldest run beyond keep_runs; the process goes
// on writing it.
func TestServeNeverPrunesAnOpenRun(t *testing.T) {
	dir := workspace(t)
	cfg := filepath.Join(dir, "hub.yml")
	os.WriteFile(cfg, []byte("web:\n  listen: 127.0.0.1:0\nmirror:\n  keep_runs: 2\n"), 0o600)
	flows := filepath.Join(dir, ".hub", "flows")
	write, end := startStdio(t, dir, "--config", cfg)
	write("live1.txt")
	runs := listRuns(flows)
	if len(runs) != 1 {
		t.Fatalf("runs %v", runs)
	}
	live := runs[0]
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second))) // the next runs sort after it
	for i := range 2 {
		if _, errOut, code := runHub(t, dir, "", "exec", "--config", cfg, fmt.Sprintf(`{"verb":"fs.writeFile","arguments":{"path":"n%d.txt","content":"x"}}`, i)); code != 0 {
			t.Fatal(errOut)
		}
	}
	cmd, _, logs := startServe(t, dir, "--config", cfg)
	stopServe(t, cmd, logs)
	write("live2.txt")
	end()
	b, err := os.ReadFile(filepath.Join(flows, live, "chat", "inbound.jsonl"))
	if err != nil || !strings.Contains(string(b), "live1.txt") || !strings.Contains(string(b), "live2.txt") {
		t.Fatalf("the open run %s: %v %s (runs left: %v)", live, err, b, listRuns(flows))
	}
}

// TestMirrorPrune: `hub mirror prune --dry-run` lists what would go and
// why, per kind, changing nothing; `hub mirror prune` then removes exactly
// that; a run a live CLI process is writing stays and can still be
// written; through a running hub, its own run stays.
func TestMirrorPrune(t *testing.T) {
	dir := workspace(t)
	cfg := filepath.Join(dir, "hub.yml")
	os.WriteFile(cfg, []byte(`web:
  listen: 127.0.0.1:0
mirror:
  retention:
    serve: {keep_age: 720h, min_runs: 1}
    cli: {keep_runs: 1}
`), 0o600)
	flows := filepath.Join(dir, ".hub", "flows")
	day := 24 * time.Hour
	old := func(ago time.Duration, suffix, kind string) string {
		id := time.Now().Add(-ago).UTC().Format("20060102T150405Z") + "-" + suffix
		os.MkdirAll(filepath.Join(flows, id, "chat"), 0o700)
		os.WriteFile(filepath.Join(flows, id, "chat", "inbound.jsonl"), []byte(`{"text":"old"}`+"\n"), 0o600)
		if kind != "" {
			os.WriteFile(filepath.Join(flows, id, store.RunMarkerFile), []byte(`{"version":1,"kind":"`+kind+`"}`), 0o600)
		}
		return id
	}
	serve100, legacy95, serve90, cli60 := old(100*day, "0001", "serve"), old(95*day, "0002", ""), old(90*day, "0003", "serve"), old(60*day, "0004", "cli")

	// A CLI process that keeps its run open.
	write, end := startStdio(t, dir, "--config", cfg)
	write("live1.txt")
	var liveRun string
	for _, r := range listRuns(flows) {
		if !slices.Contains([]string{serve100, legacy95, serve90, cli60}, r) {
			liveRun = r
		}
	}
	var newer []string
	for i := range 2 {
		if _, errOut, code := runHub(t, dir, "", "exec", "--config", cfg, fmt.Sprintf(`{"verb":"fs.writeFile","arguments":{"path":"n%d.txt","content":"x"}}`, i)); code != 0 {
			t.Fatal(errOut)
		}
		for _, r := range listRuns(flows) {
			if !slices.Contains([]string{serve100, legacy95, serve90, cli60, liveRun}, r) && !slices.Contains(newer, r) {
				newer = append(newer, r)
			}
		}
	}
	if liveRun == "" || len(newer) != 2 {
		t.Fatalf("runs %v", listRuns(flows))
	}

	prune := func(args ...string) admin.PruneView {
		t.Helper()
		out, errOut, code := runHub(t, dir, "", append([]string{"mirror", "prune", "--config", cfg, "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("mirror prune %v: exit %d %s %s", args, code, out, errOut)
		}
		var v admin.PruneView
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return v
	}
	type gone struct{ id, kind, reason string }
	removals := func(v admin.PruneView) []gone {
		var out []gone
		for _, it := range v.Remove {
			out = append(out, gone{it.ID, string(it.Kind), it.Reason})
		}
		return out
	}
	before := tree(t, flows)
	plan := prune("--dry-run")
	if after := tree(t, flows); !slices.Equal(before, after) {
		t.Fatalf("--dry-run changed the flows:\n%v\n%v", before, after)
	}
	// The old CLI run goes by age (cli.keep_age is 720h by default); of
	// the three recent ones, the two closed go by count, whatever their
	// order, the open one stays.
	want := []gone{{serve100, "serve", store.PruneAge}, {legacy95, "serve", store.PruneAge}, {cli60, "cli", store.PruneAge}, {newer[0], "cli", store.PruneCount}, {newer[1], "cli", store.PruneCount}}
	slices.SortFunc(want, func(a, b gone) int { return strings.Compare(a.id, b.id) })
	if got := removals(plan); !plan.DryRun || !slices.Equal(got, want) {
		t.Fatalf("dry run would remove %v, want %v", got, want)
	}
	text, _, _ := runHub(t, dir, "", "mirror", "prune", "--config", cfg, "--dry-run")
	if !strings.Contains(text, "Would remove 5 runs") || !strings.Contains(text, "keep_age of serve runs is 720h") || !strings.Contains(text, "keep_runs is 1") || !strings.Contains(text, "cli runs: 4 (1 open)") {
		t.Fatalf("dry run text:\n%s", text)
	}
	done := prune()
	if got := removals(done); done.DryRun || !slices.Equal(got, want) {
		t.Fatalf("removed %v, the dry run listed %v", got, want)
	}
	left := listRuns(flows)
	if want := []string{serve90, liveRun}; !slices.Equal(left, want) {
		t.Fatalf("left %v, want %v", left, want)
	}
	// The live process still writes its run.
	write("live2.txt")
	end()
	b, _ := os.ReadFile(filepath.Join(flows, liveRun, "chat", "inbound.jsonl"))
	if !strings.Contains(string(b), "live1.txt") || !strings.Contains(string(b), "live2.txt") {
		t.Fatalf("the live run: %s", b)
	}
	// Through a running hub: its own run is open and stays. The hub
	// pruned when it started: the 90-day-old serve run went by age, as
	// min_runs 1 keeps only the newest serve run, the hub's own.
	cmd, _, logs := startServe(t, dir, "--config", cfg)
	defer stopServe(t, cmd, logs)
	v := prune()
	var own string
	for _, ri := range v.Runs {
		if ri.Kind == store.RunServe && ri.Live {
			own = ri.ID
		}
	}
	if own == "" || !slices.Contains(listRuns(flows), own) {
		t.Fatalf("the running hub's run: %+v", v.Runs)
	}
	if wantLeft := slices.Sorted(slices.Values([]string{liveRun, own})); len(v.Remove) != 0 || !slices.Equal(listRuns(flows), wantLeft) {
		t.Fatalf("through the hub: removed %v, left %v", v.Remove, listRuns(flows))
	}
}

// tree lists every entry under dir with its size and mtime.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %d %s", p, fi.Size(), fi.ModTime()))
		return nil
	})
	return out
}
