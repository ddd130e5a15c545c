//go:build unix

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/store"
)

// scheduleConfig has two schedules, read in Europe/Berlin: report, which
// its identity may run, and intruder, whose proc.run it may not.
const scheduleConfig = `access:
  roles:
    ops: {verbs: ["fs.*", "admin.*"]}
  grants:
    web: [ops]
    "schedule:report": [reader]
    "schedule:intruder": [reader]
schedules:
  report:
    cron: "0 6 * * *"
    time_zone: Europe/Berlin
    run: {verb: fs.readFile, arguments: {path: README.md}}
    deliver: ["local:pma/report.jsonl"]
  intruder:
    cron: "0 6 * * *"
    run: {verb: proc.run, arguments: {executable: "true"}}
`

func writeScheduleConfig(t *testing.T, dir, yml string) string {
	t.Helper()
	p := filepath.Join(dir, "hub.yml")
	if err := os.WriteFile(p, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSchedulesCommand: hub schedules list shows each schedule's next time
// in its zone, its identity's roles and that intruder's verb is refused,
// with no hub running; hub schedules run needs the running hub, where it
// runs a schedule now and exits with its outcome; hub doctor shows the
// schedules.
func TestSchedulesCommand(t *testing.T) {
	dir := workspace(t)
	cfg := writeScheduleConfig(t, dir, scheduleConfig)
	out, errOut, code := runHub(t, dir, "", "schedules", "list", "--config", cfg)
	if code != 0 || !strings.Contains(out, "report    0 6 * * * (Europe/Berlin)") || !strings.Contains(out, "06:00 CE") ||
		!strings.Contains(out, "schedule:report (reader)") || !strings.Contains(out, "never") ||
		!strings.Contains(out, "intruder: schedule:intruder may not run proc.run: its runs are refused") {
		t.Fatalf("list without a hub: %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, ".hub")); err != nil {
		t.Fatalf("the list needs the state: %v", err)
	}
	if _, errOut, code := runHub(t, dir, "", "schedules", "run", "report", "--config", cfg); code != 1 || !strings.Contains(errOut, "no hub serves") {
		t.Fatalf("run without a hub: %d %s", code, errOut)
	}
	out, _, code = runHub(t, dir, "", "doctor", "--config", cfg)
	if code != 0 || !strings.Contains(out, "warn  schedules      intruder: next") || !strings.Contains(out, "schedule:intruder may not run proc.run, so its runs are refused") ||
		!strings.Contains(out, "ok    schedules      report: next") || !strings.Contains(out, "as schedule:report (reader); last: never") {
		t.Fatalf("doctor: %d\n%s", code, out)
	}

	cmd, _, logs := startServe(t, dir, "--config", cfg)
	out, errOut, code = runHub(t, dir, "", "schedules", "run", "report", "--config", cfg)
	if code != 0 || !strings.Contains(out, "Schedule report: started turn schedule.report.manual.") || !strings.Contains(out, "succeeded ") || !strings.Contains(out, " by hand") {
		t.Fatalf("run report: %d\n%s%s\n%s", code, out, errOut, logs.String())
	}
	out, _, code = runHub(t, dir, "", "schedules", "run", "intruder", "--config", cfg)
	if code != 1 || !strings.Contains(out, "forbidden ") || !strings.Contains(out, "schedule:intruder may not run proc.run") {
		t.Fatalf("run intruder: %d\n%s", code, out)
	}
	out, _, code = runHub(t, dir, "", "schedules", "list", "--json", "--config", cfg)
	var vs []hub.ScheduleView
	if code != 0 || json.Unmarshal([]byte(out), &vs) != nil || len(vs) != 2 || vs[1].Name != "report" || vs[1].Last == nil || vs[1].Last.Outcome != store.ScheduleSucceeded {
		t.Fatalf("list --json with the hub: %d\n%s", code, out)
	}
	b, _ := os.ReadFile(filepath.Join(dir, ".hub", "pma", "report.jsonl"))
	if !strings.Contains(string(b), "⏰ Schedule report (run by hand at") || !strings.Contains(string(b), "# Title") {
		t.Fatalf("the report's target holds %q", b)
	}
	stopServe(t, cmd, logs)
}

// TestServeRefusesSchedulesItCannotRun: a schedule naming a verb the hub
// does not have, or a local: target outside the state directory, is
// refused when hub serve starts, and shown as a problem by hub doctor.
func TestServeRefusesSchedulesItCannotRun(t *testing.T) {
	dir := workspace(t)
	cfg := writeScheduleConfig(t, dir, `access:
  grants:
    "schedule:report": [reader]
schedules:
  report:
    cron: "@daily"
    run: {verb: fs.readEverything}
    deliver: ["local:/etc/report.jsonl"]
`)
	_, errOut, code := runHub(t, dir, "", "serve", "--config", cfg)
	if code != 1 || !strings.Contains(errOut, "schedules.report.run.verb: fs.readEverything is not a verb of this hub") ||
		!strings.Contains(errOut, `schedules.report.deliver[0]: local target "/etc/report.jsonl" is outside the state directory`) {
		t.Fatalf("serve: %d %s", code, errOut)
	}
	out, _, code := runHub(t, dir, "", "doctor", "--config", cfg)
	if code != 1 || !strings.Contains(out, "FAIL  schedules      schedules.report.run.verb: fs.readEverything is not a verb of this hub") {
		t.Fatalf("doctor: %d\n%s", code, out)
	}
}

// TestScheduleZonesWithoutZoneDatabase: the hub carries the time zone
// database, so a schedule's zone loads on a machine without one: the
// system's zone files and the Go installation's are hidden from the hub
// (a mount namespace, root only), and Europe/Berlin still reads.
func TestScheduleZonesWithoutZoneDatabase(t *testing.T) {
	unshare, err := exec.LookPath("unshare")
	if err != nil || os.Geteuid() != 0 || runtime.GOOS != "linux" {
		testkit.Unavailable(t, "hiding the zone database needs root, Linux and unshare")
	}
	dir := workspace(t)
	cfg := writeScheduleConfig(t, dir, scheduleConfig)
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatal(err)
	}
	script := `set -e
for d in /usr/share/zoneinfo /usr/share/lib/zoneinfo /usr/lib/locale/TZ /etc/zoneinfo "$GOROOT_TIME"; do
  if [ -d "$d" ]; then mount -t tmpfs tmpfs "$d"; fi
done
if [ -e /usr/share/zoneinfo/Europe/Berlin ]; then echo "zone files still visible" >&2; exit 9; fi
exec "$HUB" schedules list --config "$CFG"`
	cmd := exec.Command(unshare, "--mount", "--propagation", "private", "sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HUB_CONFIG=", "HUB="+hubBin, "CFG="+cfg, "GOROOT_TIME="+filepath.Join(strings.TrimSpace(string(goroot)), "lib", "time"))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "report    0 6 * * * (Europe/Berlin)") || !strings.Contains(string(out), "06:00 CE") {
		t.Fatalf("schedules list without the zone database: %v\n%s", err, out)
	}
}
