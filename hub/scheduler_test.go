package hub_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/hub/hubtest"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/store"
)

// schedEnv is a started runtime with schedules, on a fake clock, over
// the workspace ws and the state state (reopened by a later schedEnv on
// the same directories, as a restarted hub).
type schedEnv struct {
	he    *hubtest.Env
	rt    *hub.Runtime
	clk   *clock.Fake
	state string
}

// daily is a schedule reading README.md every day at hour:minute in zone,
// delivering to the local target pma/<name>.jsonl.
func daily(name, cron, zone, missed string) config.Schedule {
	return config.Schedule{
		Cron: cron, TimeZone: zone, Missed: missed, Identity: hub.ScheduleIdentityOf(name),
		Run:     config.ScheduleRun{Verb: "fs.readFile", Arguments: config.Arguments{"path": "README.md"}},
		Deliver: []string{"local:pma/" + name + ".jsonl"},
	}
}

// openSched opens and starts a runtime whose configuration (testConfig)
// has the schedules, each identity granted role, at the fake time at.
func openSched(t *testing.T, ws, state string, at time.Time, role string, schedules map[string]config.Schedule, ro hub.RuntimeOptions) *schedEnv {
	t.Helper()
	cfg := schedConfig(t, ws, state, role, schedules)
	clk := clock.NewFake(at)
	ro.Clock = clk
	he := hubtest.Open(t, cfg, hubtest.Options{Runtime: ro})
	if err := he.Runtime.Schedules.Check(cfg); err != nil {
		t.Fatal(err)
	}
	he.Start(t)
	return &schedEnv{he: he, rt: he.Runtime, clk: clk, state: state}
}

// schedConfig is testConfig with the schedules, their identities granted
// role, checked as a loaded configuration is.
func schedConfig(t *testing.T, ws, state, role string, schedules map[string]config.Schedule) *config.Config {
	t.Helper()
	cfg := testConfig(t, ws, state)
	cfg.Schedules = config.Schedules{}
	for name, s := range schedules {
		cfg.Schedules[name] = s
		cfg.Access.Grants[s.Identity] = []string{role}
	}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func newSchedDirs(t *testing.T) (ws, state string) {
	t.Helper()
	ws = t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "README.md"), []byte("# hello\nsecond\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return ws, filepath.Join(ws, ".hub")
}

// view returns the schedule name as List shows it.
func (e *schedEnv) view(t *testing.T, name string) hub.ScheduleView {
	t.Helper()
	vs, err := e.rt.Schedules.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if v.Name == name {
			return v
		}
	}
	t.Fatalf("no schedule %s in %+v", name, vs)
	return hub.ScheduleView{}
}

// waitRun waits until the last run of name is turnID and has finished,
// and returns it.
func (e *schedEnv) waitRun(t *testing.T, name, turnID string) *store.ScheduleRun {
	t.Helper()
	var last *store.ScheduleRun
	testkit.WaitFor(t, "run "+turnID+" of "+name+" finished", func() bool {
		last = e.view(t, name).Last
		return last != nil && last.TurnID == turnID && last.Outcome != store.ScheduleRunning
	})
	return last
}

// turnOf is the turn id of the run of name at at.
func turnOf(name string, at time.Time) string { return fmt.Sprintf("schedule.%s.%d", name, at.Unix()) }

// localLines reads the lines a local target pma/<name>.jsonl received.
func localLines(t *testing.T, state, name string) []map[string]any {
	t.Helper()
	f, err := os.Open(filepath.Join(state, "pma", name+".jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// waitLocal waits until pma/<name>.jsonl has n lines and returns them.
func waitLocal(t *testing.T, state, name string, n int) []map[string]any {
	t.Helper()
	var lines []map[string]any
	testkit.WaitFor(t, fmt.Sprintf("%d deliveries to pma/%s.jsonl", n, name), func() bool {
		lines = localLines(t, state, name)
		return len(lines) >= n
	})
	if len(lines) != n {
		t.Fatalf("pma/%s.jsonl has %d lines, want %d: %v", name, len(lines), n, lines)
	}
	return lines
}

// scheduleRecords are the mirror records of name's runs.
func scheduleRecords(t *testing.T, state, name string) []store.MirrorRecord {
	t.Helper()
	var out []store.MirrorRecord
	err := store.ReadMirror(flowsRoot(t, filepath.Join(state, "flows")), store.MirrorFilter{}, func(r store.MirrorRecord) error {
		if r.Platform == hub.SchedulePlatform && r.ChatID == name {
			out = append(out, r)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestScheduleAcrossRestart: a schedule runs at its time and delivers to
// its local target; a hub restarted the same minute does not run that
// time again; a hub down for two days finds two times missed, which skip
// leaves alone and run_once runs once, for the latest.
func TestScheduleAcrossRestart(t *testing.T) {
	ws, state := newSchedDirs(t)
	six := time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)
	schedules := map[string]config.Schedule{
		"skipper": daily("skipper", "0 6 * * *", "UTC", config.MissedSkip),
		"catcher": daily("catcher", "0 6 * * *", "UTC", config.MissedRunOnce),
	}
	e := openSched(t, ws, state, six.Add(-time.Minute), "reader", schedules, hub.RuntimeOptions{})
	if v := e.view(t, "catcher"); !v.Next.Equal(six) || !v.Allowed || strings.Join(v.Roles, ",") != "reader" {
		t.Fatalf("before its time: %+v", v)
	}
	e.clk.Advance(time.Minute)
	for _, name := range []string{"skipper", "catcher"} {
		if r := e.waitRun(t, name, turnOf(name, six)); r.Outcome != store.ScheduleSucceeded || !r.Scheduled.Equal(six) {
			t.Fatalf("%s at six: %+v", name, r)
		}
		lines := waitLocal(t, state, name, 1)
		text, _ := lines[0]["text"].(string)
		if lines[0]["turn_id"] != turnOf(name, six) || !strings.Contains(text, "⏰ Schedule "+name) || !strings.Contains(text, "# hello") {
			t.Fatalf("%s delivered %v", name, lines[0])
		}
	}
	e.he.Close()

	// Restarted the same minute: six o'clock is accounted for.
	e = openSched(t, ws, state, six.Add(30*time.Second), "reader", schedules, hub.RuntimeOptions{})
	for _, name := range []string{"skipper", "catcher"} {
		v := e.view(t, name)
		if v.MissedRuns != nil || v.Last.TurnID != turnOf(name, six) || !v.Next.Equal(six.Add(24*time.Hour)) {
			t.Fatalf("%s after a restart in the same minute: %+v", name, v)
		}
	}
	e.he.Close()

	// Down for two days: the 25th and the 26th were missed.
	e = openSched(t, ws, state, six.Add(49*time.Hour), "reader", schedules, hub.RuntimeOptions{})
	latest := six.Add(48 * time.Hour)
	if r := e.waitRun(t, "catcher", turnOf("catcher", latest)); r.Outcome != store.ScheduleSucceeded {
		t.Fatalf("catcher's missed run: %+v", r)
	}
	waitLocal(t, state, "catcher", 2)
	for _, name := range []string{"skipper", "catcher"} {
		v := e.view(t, name)
		m := v.MissedRuns
		if m == nil || m.Count != 2 || !m.First.Equal(six.Add(24*time.Hour)) || !m.Last.Equal(latest) || m.Policy != schedules[name].Missed {
			t.Fatalf("%s missed: %+v", name, m)
		}
		if !v.Next.Equal(six.Add(72 * time.Hour)) {
			t.Fatalf("%s next: %v", name, v.Next)
		}
	}
	if v := e.view(t, "skipper"); v.Last.TurnID != turnOf("skipper", six) {
		t.Fatalf("skipper ran a missed time: %+v", v.Last)
	}
	if lines := localLines(t, state, "skipper"); len(lines) != 1 {
		t.Fatalf("skipper delivered %d times, want 1", len(lines))
	}
	// Every run is mirrored: the call before it ran, its outcome after.
	for name, runs := range map[string]int{"skipper": 1, "catcher": 2} {
		recs := scheduleRecords(t, state, name)
		if len(recs) != 2*runs {
			t.Fatalf("%s: %d mirror records, want %d: %+v", name, len(recs), 2*runs, recs)
		}
		// Runs opened in the same second do not sort by time (their ids'
		// suffix is random): find the record of six o'clock.
		var in store.MirrorRecord
		for _, r := range recs {
			if r.Direction == store.DirectionInbound && r.Meta["turn_id"] == turnOf(name, six) {
				in = r
			}
		}
		if in.Kind != store.KindSchedule || in.Actor != "schedule:"+name || in.Meta["verb"] != "fs.readFile" || in.Meta[hub.MetaWorkspace] != "default" || in.Meta[hub.MetaScheduled] != six.Format(time.RFC3339) {
			t.Fatalf("%s: inbound record %+v", name, in)
		}
	}
}

// TestScheduleDaylightSaving: in Europe/Berlin, a schedule at a wall-clock
// hour runs at the change when the clocks skip its time, and once when
// they pass it twice; one whose hour is '*' follows real time.
func TestScheduleDaylightSaving(t *testing.T) {
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		name, cron string
		from       string
		runs       []string // UTC
	}{
		// 29 March 2026: 02:00 CET becomes 03:00 CEST.
		{"spring-fixed", "30 2 * * *", "2026-03-28T12:00:00Z", []string{
			"2026-03-29T01:00:00Z", // 02:30 does not exist: at the change, 03:00 CEST
			"2026-03-30T00:30:00Z", // 02:30 CEST
		}},
		{"spring-every-hour", "0 * 29 3 *", "2026-03-28T23:30:00Z", []string{
			"2026-03-29T00:00:00Z", // 01:00 CET
			"2026-03-29T01:00:00Z", // 03:00 CEST; 02:00 does not exist
			"2026-03-29T02:00:00Z", // 04:00 CEST
		}},
		// 25 October 2026: 03:00 CEST becomes 02:00 CET.
		{"autumn-fixed", "30 2 * * *", "2026-10-24T12:00:00Z", []string{
			"2026-10-25T00:30:00Z", // 02:30 CEST; not again at 02:30 CET
			"2026-10-26T01:30:00Z", // 02:30 CET the next day
		}},
		{"autumn-every-hour", "0 * 25 10 *", "2026-10-24T23:30:00Z", []string{
			"2026-10-25T00:00:00Z", // 02:00 CEST
			"2026-10-25T01:00:00Z", // 02:00 CET, an hour later
			"2026-10-25T02:00:00Z", // 03:00 CET
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws, state := newSchedDirs(t)
			s := daily("dst", tc.cron, "Europe/Berlin", config.MissedSkip)
			s.Run = config.ScheduleRun{Verb: "fs.lineCount", Arguments: config.Arguments{"path": "README.md"}}
			e := openSched(t, ws, state, utc(tc.from), "reader", map[string]config.Schedule{"dst": s}, hub.RuntimeOptions{})
			for i, r := range tc.runs {
				at := utc(r)
				if next := e.view(t, "dst").Next; !next.Equal(at) {
					t.Fatalf("run %d: next %v, want %v", i, next.UTC(), at)
				}
				e.clk.Set(at)
				if got := e.waitRun(t, "dst", turnOf("dst", at)); got.Outcome != store.ScheduleSucceeded {
					t.Fatalf("run %d: %+v", i, got)
				}
			}
			if n := len(localLines(t, state, "dst")); n > len(tc.runs) {
				t.Fatalf("%d deliveries for %d runs", n, len(tc.runs))
			}
		})
	}
}

// TestScheduleForbiddenVerb: a schedule whose identity's roles do not
// grant its verb is refused at its time: nothing runs, the refusal is
// mirrored (its call and its forbidden outcome) and delivered, and its
// state says forbidden.
func TestScheduleForbiddenVerb(t *testing.T) {
	ws, state := newSchedDirs(t)
	at := time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)
	s := daily("intruder", "0 6 * * *", "UTC", config.MissedSkip)
	s.Run = config.ScheduleRun{Verb: "proc.run", Arguments: config.Arguments{"executable": "sh", "arguments": []any{"-c", "echo ran > ran.txt"}}}
	e := openSched(t, ws, state, at.Add(-time.Second), "reader", map[string]config.Schedule{"intruder": s}, hub.RuntimeOptions{})
	if v := e.view(t, "intruder"); v.Allowed {
		t.Fatalf("the view says reader may run proc.run: %+v", v)
	}
	e.clk.Set(at)
	r := e.waitRun(t, "intruder", turnOf("intruder", at))
	if r.Outcome != store.ScheduleForbidden || r.Code != "forbidden" || !strings.Contains(r.Detail, "schedule:intruder may not run proc.run") {
		t.Fatalf("outcome %+v", r)
	}
	lines := waitLocal(t, state, "intruder", 1)
	if text, _ := lines[0]["text"].(string); !strings.Contains(text, "may not run proc.run") {
		t.Fatalf("delivered %q", text)
	}
	recs := scheduleRecords(t, state, "intruder")
	if len(recs) != 2 || recs[0].Direction != store.DirectionInbound || recs[0].Meta["verb"] != "proc.run" ||
		recs[1].Direction != store.DirectionOutbound || recs[1].Meta["error_code"] != "forbidden" {
		t.Fatalf("mirror records %+v", recs)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the forbidden program ran: %v", err)
	}
}

// TestScheduleRunCutByCrash: a run the hub died in (the ledger has it
// started, the state running) is not run again at the next start: its
// targets are told it may or may not have completed, and its state says
// interrupted.
func TestScheduleRunCutByCrash(t *testing.T) {
	ws, state := newSchedDirs(t)
	at := time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)
	turn := turnOf("report", at)
	// What a hub killed during the run leaves behind.
	st, err := store.Open(state, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	led, err := store.OpenSharedLedger(st.Database())
	if err != nil {
		t.Fatal(err)
	}
	if _, began, _, err := led.Begin(store.TurnRecord{TurnID: turn, Identity: "schedule:report", Platform: hub.SchedulePlatform, Verb: "fs.readFile",
		Started: at, Targets: []string{"local:pma/report.jsonl"}}); err != nil || !began {
		t.Fatalf("begin: %v %v", began, err)
	}
	states, err := store.OpenSchedules(st.Database())
	if err != nil {
		t.Fatal(err)
	}
	running := &store.ScheduleRun{TurnID: turn, Scheduled: at, Started: at, Outcome: store.ScheduleRunning}
	if err := states.Put("report", store.ScheduleState{Through: at, Last: running}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	e := openSched(t, ws, state, at.Add(time.Minute), "reader", map[string]config.Schedule{
		"report": daily("report", "0 6 * * *", "UTC", config.MissedRunOnce),
	}, hub.RuntimeOptions{})
	lines := waitLocal(t, state, "report", 1)
	if text, _ := lines[0]["text"].(string); lines[0]["turn_id"] != turn || !strings.Contains(text, "may or may not have completed") || !strings.Contains(text, "fs.readFile") {
		t.Fatalf("notice %v", lines[0])
	}
	v := e.view(t, "report")
	if v.Last.TurnID != turn || v.Last.Outcome != store.ScheduleInterrupted || v.MissedRuns != nil {
		t.Fatalf("state after the crash: %+v %+v", v.Last, v.MissedRuns)
	}
	if recs := scheduleRecords(t, state, "report"); len(recs) != 0 {
		t.Fatalf("the interrupted run ran again: %+v", recs)
	}
	rec, err := e.rt.Ledger.Get(turn)
	if err != nil || rec.State != store.TurnInterrupted {
		t.Fatalf("ledger: %+v %v", rec, err)
	}
}

// TestScheduleReload: a reload removes, changes and adds schedules; only
// the schedules in force run, at their new times.
func TestScheduleReload(t *testing.T) {
	ws, state := newSchedDirs(t)
	six := time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)
	before := map[string]config.Schedule{
		"gone":    daily("gone", "0 6 * * *", "UTC", config.MissedSkip),
		"changed": daily("changed", "0 6 * * *", "UTC", config.MissedSkip),
	}
	e := openSched(t, ws, state, six.Add(-time.Hour), "reader", before, hub.RuntimeOptions{})
	after := schedConfig(t, ws, state, "reader", map[string]config.Schedule{
		"changed": daily("changed", "30 6 * * *", "UTC", config.MissedSkip),
		"added":   daily("added", "0 6 * * *", "UTC", config.MissedSkip),
	})
	e.rt.EnableReload(func() (*config.Config, error) { return after, nil })
	rep, err := e.rt.Reload()
	if err != nil || !strings.Contains(strings.Join(rep.Applied, ","), "schedules") {
		t.Fatalf("reload: %+v %v", rep, err)
	}
	vs, err := e.rt.Schedules.List()
	if err != nil || len(vs) != 2 || vs[0].Name != "added" || vs[1].Name != "changed" || !vs[1].Next.Equal(six.Add(30*time.Minute)) {
		t.Fatalf("after the reload: %+v %v", vs, err)
	}
	e.clk.Set(six)
	e.waitRun(t, "added", turnOf("added", six))
	e.clk.Set(six.Add(30 * time.Minute))
	e.waitRun(t, "changed", turnOf("changed", six.Add(30*time.Minute)))
	if recs := scheduleRecords(t, state, "gone"); len(recs) != 0 {
		t.Fatalf("a removed schedule ran: %+v", recs)
	}
	if n := len(scheduleRecords(t, state, "changed")); n != 2 {
		t.Fatalf("the changed schedule left %d records, want 2 (one run, at its new time)", n)
	}
}

// TestScheduleRunNow: hub schedules run starts a run at once, outside the
// schedule's times, which is delivered as run by hand; a second one while
// it runs is refused, and a runtime that does not serve runs none.
func TestScheduleRunNow(t *testing.T) {
	ws, state := newSchedDirs(t)
	at := time.Date(2026, 11, 24, 9, 15, 0, 0, time.UTC)
	e := openSched(t, ws, state, at, "reader", map[string]config.Schedule{"report": daily("report", "0 6 * * *", "UTC", config.MissedSkip)}, hub.RuntimeOptions{})
	turn, err := e.rt.Schedules.RunNow("report")
	if err != nil || !strings.HasPrefix(turn, "schedule.report.manual.") {
		t.Fatalf("run now: %q %v", turn, err)
	}
	if r := e.waitRun(t, "report", turn); r.Outcome != store.ScheduleSucceeded || !r.Manual {
		t.Fatalf("manual run %+v", r)
	}
	lines := waitLocal(t, state, "report", 1)
	if text, _ := lines[0]["text"].(string); !strings.Contains(text, "run by hand at 2026-11-24 09:15 UTC") {
		t.Fatalf("delivered %q", text)
	}
	if _, err := e.rt.Schedules.RunNow("nightly"); err == nil || !strings.Contains(err.Error(), `no schedule "nightly" (configured: report)`) {
		t.Fatalf("an unknown schedule: %v", err)
	}
	if v := e.view(t, "report"); !v.Next.Equal(time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC)) {
		t.Fatalf("a manual run moved the next time: %v", v.Next)
	}
	e.he.Close()

	cfg := schedConfig(t, ws, state, "reader", map[string]config.Schedule{"report": daily("report", "0 6 * * *", "UTC", config.MissedSkip)})
	off := hubtest.Open(t, cfg, hubtest.Options{Runtime: hub.RuntimeOptions{Offline: true}})
	if _, err := off.Runtime.Schedules.RunNow("report"); !errors.Is(err, hub.ErrNotServing) {
		t.Fatalf("run now without a serving hub: %v", err)
	}
	// Listing works offline, with the state the serving hub left.
	vs, err := off.Runtime.Schedules.List()
	if err != nil || len(vs) != 1 || vs[0].Last == nil || vs[0].Last.TurnID != turn || vs[0].Next.IsZero() {
		t.Fatalf("offline list: %+v %v", vs, err)
	}
}

// lineCountCommand is the named command count: fs.lineCount of its path
// parameter file.
func lineCountCommand() config.Command {
	return config.Command{
		Description: "Count a file's lines",
		Params:      config.CommandParams{Names: []string{"file"}, ByName: map[string]config.CommandParam{"file": {Type: config.ParamPath}}},
		Run:         config.CommandRun{Verb: "fs.lineCount", Arguments: config.Arguments{"path": "{file}"}},
	}
}

// TestScheduledNamedCommand: a schedule's run may name a command instead
// of a verb (run: {command: count, params: …}); it runs as the verb
// cmd.count, so its identity needs the permission cmd.count (not the
// fs.lineCount it stands for), and a parameter its type refuses is a
// rejected run, mirrored like any refusal.
func TestScheduledNamedCommand(t *testing.T) {
	for _, tc := range []struct {
		name   string
		role   string
		file   string
		status hub.Status
		want   string
	}{
		{"granted", "counter", "README.md", hub.StatusExecuted, `"lineCount":2`},
		{"not granted", "reader", "README.md", hub.StatusForbidden, "cmd.count"},
		{"refused parameter", "counter", "../README.md", hub.StatusRejected, "leaves the workspace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws, state := newSchedDirs(t)
			cfg := testConfig(t, ws, state)
			cfg.Commands = config.Commands{"count": lineCountCommand()}
			cfg.Access.Roles["counter"] = config.Role{Verbs: []string{"cmd.count"}}
			cfg.Access.Grants["schedule:deployer"] = []string{tc.role}
			cfg.Schedules = config.Schedules{"deployer": daily("deployer", "0 6 1 1 *", "UTC", config.MissedSkip)}
			cfg.ApplyDefaults()
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			clk := clock.NewFake(time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC))
			he := hubtest.Open(t, cfg, hubtest.Options{Runtime: hub.RuntimeOptions{Clock: clk}})
			he.Start(t)
			at := clk.Now()
			res, err := he.Runtime.Hub.RunScheduled(context.Background(), hub.ScheduledCall{
				Schedule: "deployer", TurnID: turnOf("deployer", at), Identity: "schedule:deployer", Command: "count",
				Params: map[string]any{"file": tc.file}, Deliver: []chat.Key{{Kind: chat.KindLocal, Path: "pma/deployer.jsonl"}}, At: at,
			})
			if err != nil || res.Status != tc.status {
				t.Fatalf("run: %+v %v", res, err)
			}
			if got := string(res.Outcome.JSON()); !strings.Contains(got, tc.want) {
				t.Fatalf("outcome %s, want %s", got, tc.want)
			}
			recs := scheduleRecords(t, state, "deployer")
			if len(recs) != 2 || !strings.Contains(recs[0].Text, "cmd.count") {
				t.Fatalf("mirror records %+v", recs)
			}
			waitLocal(t, state, "deployer", 1)
		})
	}
}
