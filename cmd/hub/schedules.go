package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/a6afc2ce/hermes-hub/admin"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/store"
)

const schedulesUsage = `hub schedules list [--json]
       hub schedules run NAME [--no-wait]

list shows every schedule (schedules: in the configuration): when it runs
next, its last run and how it ended, and the identity it runs as with that
identity's roles. run runs a schedule now, outside its times, in the
running hub, as its identity, and waits for its outcome (exit 1 unless it
succeeded); its result goes to the schedule's targets as at its times.
See docs/chatops.md.`

// schedulePoll is how often `hub schedules run` asks whether its run ended.
const schedulePoll = 200 * time.Millisecond

func runSchedules(env *cliEnv, args []string) error {
	var asJSON, noWait *bool
	f := newFlags(env, "schedules", schedulesUsage)
	var cf commonFlags
	cf.register(f, false)
	asJSON = f.Bool("json", false, "print the schedules as JSON")
	noWait = f.Bool("no-wait", false, "run: return once the run has started")
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 1 && pos[0] == "list":
	case len(pos) == 2 && pos[0] == "run":
	default:
		return usagef("usage: hub schedules list [--json], or hub schedules run NAME")
	}
	cfg, err := loadConfig(cf)
	if err != nil {
		return err
	}
	c, err := openAdminVerbs(cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	if pos[0] == "list" {
		vs, err := listSchedules(c)
		if err != nil {
			return err
		}
		if *asJSON {
			printJSON(env.stdout, vs)
			return nil
		}
		printSchedules(env.stdout, vs)
		return nil
	}
	if !c.running {
		return fmt.Errorf("%w; its admin socket does not answer", hub.ErrNotServing)
	}
	return runScheduleNow(env, c, pos[1], !*noWait, cfg.Verbs.Timeout.D())
}

func listSchedules(c *adminClient) ([]hub.ScheduleView, error) {
	var vs []hub.ScheduleView
	err := c.do("GET", "/api/schedules", nil, nil, &vs)
	return vs, err
}

// printSchedules prints the table of `hub schedules list`.
func printSchedules(w io.Writer, vs []hub.ScheduleView) {
	if len(vs) == 0 {
		fmt.Fprintln(w, "No schedules: add them under schedules: in the configuration (docs/chatops.md).")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tWHEN\tNEXT\tLAST RUN\tRUNS\tAS")
	for _, v := range vs {
		fmt.Fprintf(tw, "%s\t%s (%s)\t%s\t%s\t%s\t%s\n", v.Name, v.Cron, v.TimeZone, scheduleTime(v.Next, v.TimeZone), lastRun(v), v.Verb, identityRoles(v))
	}
	tw.Flush()
	for _, v := range vs {
		for _, n := range scheduleNotes(v) {
			fmt.Fprintf(w, "%s: %s\n", v.Name, n)
		}
	}
}

// scheduleTime is t in the schedule's zone, "-" for none.
func scheduleTime(t time.Time, zone string) string {
	if t.IsZero() {
		return "-"
	}
	if loc, err := time.LoadLocation(zone); err == nil {
		t = t.In(loc)
	}
	return t.Format("2006-01-02 15:04 MST")
}

// lastRun says how a schedule's last run ended, and when.
func lastRun(v hub.ScheduleView) string {
	l := v.Last
	if l == nil {
		return "never"
	}
	s := l.Outcome
	if l.Code != "" && l.Code != l.Outcome {
		s += " (" + l.Code + ")"
	}
	s += " " + scheduleTime(l.Scheduled, v.TimeZone)
	if l.Manual {
		s += " by hand"
	}
	return s
}

// identityRoles is a schedule's identity with its roles.
func identityRoles(v hub.ScheduleView) string {
	if len(v.Roles) == 0 {
		return v.Identity + " (no role)"
	}
	return v.Identity + " (" + strings.Join(v.Roles, ", ") + ")"
}

// scheduleNotes are what an operator should know of a schedule beyond its
// line: a verb its identity may not run, times missed, a run in progress,
// why the last run did not succeed.
func scheduleNotes(v hub.ScheduleView) []string {
	var out []string
	if !v.Allowed {
		out = append(out, fmt.Sprintf("%s may not run %s: its runs are refused (grant it a role that names %s under access.grants)", v.Identity, v.Verb, v.Verb))
	}
	if m := v.MissedRuns; m != nil {
		how := "skipped (missed: skip)"
		if m.Policy == "run_once" {
			how = "the latest ran (missed: run_once)"
		}
		out = append(out, fmt.Sprintf("%d %s missed while the hub was down, %s to %s: %s", m.Count, plural(m.Count, "time", "times"),
			scheduleTime(m.First, v.TimeZone), scheduleTime(m.Last, v.TimeZone), how))
	}
	if v.Running != "" {
		out = append(out, "running now (turn "+v.Running+")")
	}
	if l := v.Last; l != nil && l.Detail != "" && l.Outcome != store.ScheduleSucceeded {
		out = append(out, "last run: "+oneLine(l.Detail, 200))
	}
	return out
}

// runScheduleNow starts a run of name and, with wait, waits for its
// outcome (at most the verb timeout and a minute).
func runScheduleNow(env *cliEnv, c *adminClient, name string, wait bool, timeout time.Duration) error {
	var res admin.RunScheduleResult
	if err := c.do("POST", "/api/schedules/run", nil, admin.RunScheduleRequest{Name: name}, &res); err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "Schedule %s: started turn %s\n", name, res.TurnID)
	if !wait {
		return nil
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout+time.Minute)
		defer cancel()
	}
	for {
		v, err := scheduleView(c, name)
		if err != nil {
			return err
		}
		if l := v.Last; l != nil && l.TurnID == res.TurnID && l.Outcome != store.ScheduleRunning {
			fmt.Fprintf(env.stdout, "%s\n", lastRun(v))
			if l.Detail != "" {
				fmt.Fprintln(env.stdout, oneLine(l.Detail, 400))
			}
			if l.Outcome != store.ScheduleSucceeded {
				return &exitError{code: exitFailed}
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped waiting for turn %s (it goes on in the hub; `hub schedules list` shows its outcome): %w", res.TurnID, ctx.Err())
		case <-time.After(schedulePoll):
		}
	}
}

// scheduleView is the schedule name as the hub lists it.
func scheduleView(c *adminClient, name string) (hub.ScheduleView, error) {
	vs, err := listSchedules(c)
	if err != nil {
		return hub.ScheduleView{}, err
	}
	for _, v := range vs {
		if v.Name == name {
			return v, nil
		}
	}
	return hub.ScheduleView{}, fmt.Errorf("schedule %s is no longer configured", name)
}
