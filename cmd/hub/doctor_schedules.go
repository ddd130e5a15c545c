package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/store"
)

// doctorSchedules shows each schedule: when it runs next, as whom with
// which roles, and how its last run ended. A verb this hub does not know
// or a local: target it may not write is a problem; an identity whose
// roles do not grant the schedule's verb, or a last run that did not
// succeed, a warning.
func doctorSchedules(r *doctorReport, cfg *config.Config) {
	const what = "schedules"
	if len(cfg.Schedules) == 0 {
		return
	}
	tc, err := registryOnly()
	if err != nil {
		r.fail(what, err.Error(), "")
		return
	}
	defer tc.Close()
	if err := hub.CheckSchedules(cfg, tc.exec.Registry()); err != nil {
		for _, l := range strings.Split(err.Error(), "\n") {
			r.fail(what, l, "name a verb `hub verbs` lists, and local: targets under the state directory's pma/ or outbox.local_roots")
		}
	}
	vs, err := doctorScheduleViews(cfg, tc.exec.Registry())
	if err != nil {
		r.warn(what, "their state cannot be read: "+err.Error(), "")
		return
	}
	for _, v := range vs {
		doctorSchedule(r, v)
	}
}

// doctorSchedule reports one schedule.
func doctorSchedule(r *doctorReport, v hub.ScheduleView) {
	line := fmt.Sprintf("%s: next %s (%s, %s) as %s; last: %s", v.Name, scheduleTime(v.Next, v.TimeZone), v.Cron, v.TimeZone, identityRoles(v), lastRun(v))
	switch l := v.Last; {
	case !v.Allowed:
		r.warn("schedules", line+"; "+v.Identity+" may not run "+v.Verb+", so its runs are refused",
			fmt.Sprintf("grant %s a role that names %s under access.grants", v.Identity, v.Verb))
	case l != nil && l.Outcome != store.ScheduleSucceeded && l.Outcome != store.ScheduleRunning:
		r.warn("schedules", line+": "+oneLine(l.Detail, 200), "see its last run with hub mirror search --identity "+v.Identity)
	default:
		r.ok("schedules", line)
	}
}

// doctorScheduleViews lists the schedules as the running hub shows them,
// else with the state they left, else (no state yet, which the doctor
// does not create) from the configuration alone.
func doctorScheduleViews(cfg *config.Config, reg *executor.Registry) ([]hub.ScheduleView, error) {
	c, running := dialAdmin(cfg)
	if !running {
		if _, err := os.Stat(cfg.StateDir); errors.Is(err, os.ErrNotExist) {
			return hub.ConfiguredSchedules(cfg, reg, clock.Real{}.Now())
		}
		var err error
		if c, err = openOffline(cfg, executor.New(reg, executor.Options{})); err != nil {
			return nil, err
		}
	}
	defer c.Close()
	return listSchedules(c)
}
