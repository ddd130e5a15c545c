package config

import (
	"testing"
	"time"
)

// scheduleAccess grants schedule:nightly the role ops.
const scheduleAccess = "access:\n  roles:\n    ops: {verbs: ['*']}\n  grants:\n    schedule:nightly: [ops]\n"

// TestSchedulesDefaultsAndArguments: a schedule left at its defaults runs
// in UTC as schedule:<name>, skips missed times, and its arguments, nested
// lists and mappings included, are the JSON object the verb receives.
func TestSchedulesDefaultsAndArguments(t *testing.T) {
	yml := scheduleAccess + `schedules:
  nightly:
    cron: "0 6 * * *"
    run:
      verb: proc.run
      arguments:
        executable: ./report.sh
        arguments: [--since, 24h]
        env: {MODE: quick}
        timeoutSeconds: 30
    deliver: [chat:telegram:-1001234567890, "local:reports/nightly.log"]
`
	cfg := &Config{}
	if err := Parse([]byte(yml), env(nil), cfg); err != nil {
		t.Fatal(err)
	}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s := cfg.Schedules["nightly"]
	if s.Identity != "schedule:nightly" || s.TimeZone != "UTC" || s.Missed != MissedSkip {
		t.Fatalf("defaults: %+v", s)
	}
	args, err := s.Run.Arguments.JSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"arguments":["--since","24h"],"env":{"MODE":"quick"},"executable":"./report.sh","timeoutSeconds":30}`
	if string(args) != want {
		t.Fatalf("arguments: %s, want %s", args, want)
	}
	if loc, err := s.Location(); err != nil || loc != time.UTC {
		t.Fatalf("location: %v %v", loc, err)
	}
	if none, err := (Arguments(nil)).JSON(); err != nil || string(none) != "{}" {
		t.Fatalf("no arguments: %s %v", none, err)
	}
}

// TestSchedulesErrors pins what each wrong schedule is told: the line, the
// key path and what is accepted.
func TestSchedulesErrors(t *testing.T) {
	const head = scheduleAccess + "schedules:\n  nightly:\n"
	for _, tc := range []struct {
		name, yml, want string
	}{
		{"cron with four fields", head + "    cron: \"0 6 * *\"\n    run: {verb: sys.machineInfo}\n",
			`line 8: schedules.nightly.cron: "0 6 * *" is not a cron expression: expected exactly 5 fields, found 4: [0 6 * *] (accepted: five fields, minute hour day-of-month month day-of-week, such as "0 6 * * *" or "*/15 8-18 * * 1-5", or @yearly, @monthly, @weekly, @daily, @hourly)`},
		{"cron out of range", head + "    cron: \"61 6 * * *\"\n    run: {verb: sys.machineInfo}\n",
			`line 8: schedules.nightly.cron: "61 6 * * *" is not a cron expression: end of range (61) above maximum (59): 61 (accepted: five fields`},
		{"cron without a value", head + "    run: {verb: sys.machineInfo}\n",
			`line 7: schedules.nightly.cron: is empty (accepted: five fields`},
		{"zone in the expression", head + "    cron: \"TZ=Europe/Berlin 0 6 * * *\"\n    run: {verb: sys.machineInfo}\n",
			`line 8: schedules.nightly.cron: "TZ=Europe/Berlin 0 6 * * *" names a zone: name it in time_zone instead`},
		{"every", head + "    cron: \"@every 1h\"\n    run: {verb: sys.machineInfo}\n",
			`line 8: schedules.nightly.cron: "@every 1h" is not accepted: @every counts from when the hub started`},
		{"zone", head + "    cron: \"@daily\"\n    time_zone: Mars/Olympus\n    run: {verb: sys.machineInfo}\n",
			`line 9: schedules.nightly.time_zone: "Mars/Olympus" is not a time zone (accepted: an IANA zone name such as UTC, Europe/Berlin or America/New_York)`},
		{"no verb", head + "    cron: \"@daily\"\n    run: {arguments: {path: .}}\n",
			`line 9: schedules.nightly.run.verb is empty (accepted: the verb the schedule runs, such as sys.machineInfo, with its arguments: below, or command: NAME with its params)`},
		{"named command not defined", head + "    cron: \"@daily\"\n    run: {command: deploy, params: {env: staging}}\n",
			`line 9: schedules.nightly.run.command: "deploy" is not a command of the commands section (accepted: )`},
		{"named command and a verb", head + "    cron: \"@daily\"\n    run: {command: deploy, verb: fs.listDir}\n",
			`line 9: schedules.nightly.run.command: name a verb with its arguments, or a command with its params, not both`},
		{"arguments not a mapping", head + "    cron: \"@daily\"\n    run: {verb: fs.listDir, arguments: [a]}\n",
			`line 9: schedules.nightly.run.arguments must be a mapping, not a list (accepted: the verb's arguments as keys indented below this one, or {name: value, …})`},
		{"key that is not text", head + "    cron: \"@daily\"\n    run:\n      verb: fs.listDir\n      arguments:\n        nested: {1: a}\n",
			`line 11: schedules.nightly.run.arguments: a mapping has a key that is not text (1) (accepted: a mapping of the verb's arguments)`},
		{"workspace", head + "    cron: \"@daily\"\n    run: {verb: fs.listDir, workspace: nowhere}\n",
			`line 9: schedules.nightly.run.workspace: workspace "nowhere" is not configured (accepted: default)`},
		{"unknown key", head + "    cron: \"@daily\"\n    run: {verb: fs.listDir, argumnets: {}}\n",
			`line 9: unknown key "argumnets" in schedules.nightly.run: did you mean arguments? (accepted: verb, arguments, workspace, command, params)`},
		{"identity of another kind", head + "    cron: \"@daily\"\n    run: {verb: fs.listDir}\n    identity: telegram:1\n",
			`line 10: schedules.nightly.identity: "telegram:1" is not a schedule identity (accepted: schedule:<name>, lower-case letters, digits, '-' and '_')`},
		{"identity without a role", scheduleAccess + "schedules:\n  weekly:\n    cron: \"@weekly\"\n    run: {verb: fs.listDir}\n",
			`line 7: schedules.weekly.identity: schedule:weekly holds no role, so it may run nothing: grant it one under access.grants, such as "schedule:weekly": [ops]`},
		{"target", head + "    cron: \"@daily\"\n    run: {verb: fs.listDir}\n    deliver: [telegram]\n",
			`line 10: schedules.nightly.deliver[0]: invalid target "telegram"`},
		{"missed", head + "    cron: \"@daily\"\n    run: {verb: fs.listDir}\n    missed: all\n",
			`line 10: schedules.nightly.missed: "all" is not accepted (accepted: skip, run_once)`},
		{"name", scheduleAccess + "schedules:\n  Nightly.Report:\n    cron: \"@daily\"\n    run: {verb: fs.listDir}\n    identity: schedule:nightly\n",
			`line 7: schedules: "Nightly.Report" is not a schedule name (accepted: 1 to 64 lower-case letters, digits, '-' and '_', starting with a letter or digit)`},
		{"not a mapping", "schedules: [nightly]\n",
			`line 1: schedules must be a mapping, not a list (accepted: name: value entries)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refusedWith(t, tc.yml, tc.want)
		})
	}
}

// TestScheduleIdentity: schedule:<name> is an identity access.grants
// accepts.
func TestScheduleIdentity(t *testing.T) {
	for _, id := range []string{"schedule:nightly", "schedule:db-backup_2"} {
		if err := ValidIdentity(id); err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
	for _, id := range []string{"schedule:", "schedule:Nightly", "schedule:a.b", "schedule:-x"} {
		if err := ValidIdentity(id); err == nil {
			t.Errorf("%s accepted", id)
		}
	}
}

// TestParseCron: the five standard fields, names of days and months, and
// the descriptors.
func TestParseCron(t *testing.T) {
	from := time.Date(2026, 11, 24, 5, 30, 0, 0, time.UTC) // a Tuesday
	for _, tc := range []struct {
		expr string
		next time.Time
	}{
		{"0 6 * * *", time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)},
		{"*/15 * * * *", time.Date(2026, 11, 24, 5, 45, 0, 0, time.UTC)},
		{"0 9 * * mon-fri", time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)},
		{"0 0 1 jan *", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"@daily", time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)},
		{"@hourly", time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)},
		{"@weekly", time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)},
	} {
		s, err := ParseCron(tc.expr)
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		if got := s.Next(from); !got.Equal(tc.next) {
			t.Errorf("%s: next %v, want %v", tc.expr, got, tc.next)
		}
	}
}
