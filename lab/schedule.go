package lab

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/a6afc2ce/hermes-hub/outbox"
	"github.com/a6afc2ce/hermes-hub/store"
)

// The schedule of a scenario with hub.schedule: tick, every minute.
const (
	scheduleName     = "tick"
	scheduleIdentity = "schedule:" + scheduleName
	// scheduleChat is the Telegram chat its results go to; scheduleLocal
	// the local target, a file under the state directory's pma/.
	scheduleChat  = -2990
	scheduleLocal = "pma/tick.jsonl"
	// tickFile is the workspace file each run appends tickLine to.
	tickFile = "tick.log"
	tickLine = "tick"
)

// scheduleGrant is the line of access.grants that lets the schedule run.
func (w *world) scheduleGrant() string {
	if !w.sc.Hub.Schedule {
		return ""
	}
	return fmt.Sprintf("    %q: [admin]\n", scheduleIdentity)
}

// schedulesConfig is the schedules section (none once schedulesOff).
func (w *world) schedulesConfig() string {
	if !w.sc.Hub.Schedule || w.schedulesOff {
		return ""
	}
	return fmt.Sprintf(`schedules:
  %s:
    cron: "* * * * *"
    run:
      verb: proc.run
      arguments: {executable: sh, arguments: ["-c", "sleep 1; echo %s >> %s; echo ticked"]}
    deliver: ["chat:telegram:%d", "local:%s"]
    missed: run_once
`, scheduleName, tickLine, tickFile, scheduleChat, scheduleLocal)
}

// untilNearMinute waits until off from the next whole minute of the clock
// (off may be negative: before it), at least a second from now.
func untilNearMinute(ctx context.Context, off time.Duration) error {
	now := time.Now()
	at := now.Truncate(time.Minute).Add(time.Minute + off)
	for at.Sub(now) < time.Second {
		at = at.Add(time.Minute)
	}
	if !sleepCtx(ctx, time.Until(at)) {
		return ctx.Err()
	}
	return nil
}

// stopSchedules removes the schedule from the running hub (the
// configuration written again without it, and reloaded), so that no run
// starts while the lab reads the outbox at the end. A run in progress
// finishes and delivers.
func (w *world) stopSchedules(ctx context.Context) error {
	if !w.sc.Hub.Schedule {
		return nil
	}
	w.schedulesOff = true
	if err := os.WriteFile(w.hub.config, []byte(w.config(w.port)), 0o600); err != nil {
		return err
	}
	var rep struct {
		Applied []string `json:"applied"`
	}
	status, raw, err := w.admin.do(ctx, "POST", "/api/reload", struct{}{}, &rep)
	if err != nil || status != 200 || !strings.Contains(strings.Join(rep.Applied, ","), "schedules") {
		return fmt.Errorf("remove the schedule by a reload: %v %d %s", err, status, raw)
	}
	return nil
}

// localDelivery is one line the local sender wrote to scheduleLocal.
type localDelivery struct {
	TurnID   string `json:"turn_id"`
	OutboxID string `json:"outbox_id"`
	Text     string `json:"text"`
}

// readLocal reads the lines of scheduleLocal.
func (w *world) readLocal() ([]localDelivery, error) {
	f, err := os.Open(filepath.Join(w.state, filepath.FromSlash(scheduleLocal)))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []localDelivery
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var d localDelivery
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			return nil, fmt.Errorf("%s: %q is not a delivery line: %w", scheduleLocal, sc.Text(), err)
		}
		out = append(out, d)
	}
	return out, sc.Err()
}

// checkSchedule: a schedule's run happens at most once per scheduled time
// (its turn is mirrored once; its program's lines are no more than the
// runs mirrored, and no fewer than the runs that reported a result), is
// answered once to every target (its result, or the notice that a
// restart cut it short, never both), and its local delivery is written
// once per chunk.
func (c *checker) checkSchedule() {
	if !c.o.Schedule {
		return
	}
	runs := map[string]int{}
	for _, r := range c.o.Inbound {
		if r.Kind == store.KindSchedule && r.Actor == scheduleIdentity {
			runs[r.Meta["turn_id"]]++
		}
	}
	ran := 0
	for _, r := range c.o.Outbound {
		if r.Kind == "result" && r.Platform == "schedule" && r.Meta[store.MetaErrorCode] == "" {
			ran++
		}
	}
	for turn, n := range runs {
		if n > 1 {
			c.fail("at most once", "schedule run %s was mirrored as starting %d times", turn, n)
		}
		c.checkScheduleAnswer(turn)
	}
	lines := strings.Count(c.o.Files[tickFile], tickLine+"\n")
	c.fig.ScheduleRuns, c.fig.ScheduleResults, c.fig.ScheduleTicks = len(runs), ran, lines
	if lines > len(runs) || lines < ran {
		c.fail("at most once", "%s holds %d lines for %d runs mirrored, %d of them with a result (want between the two)", tickFile, lines, len(runs), ran)
	}
	c.checkLocal()
}

// checkScheduleAnswer: a run was answered to each of its targets, by its
// result or by a notice, not both.
func (c *checker) checkScheduleAnswer(turn string) {
	kinds := map[outbox.Kind]map[string]bool{}
	for _, id := range c.byTurn[turn] {
		e := c.entries[id]
		if e.State == outbox.StatePending {
			continue
		}
		if kinds[e.Kind] == nil {
			kinds[e.Kind] = map[string]bool{}
		}
		kinds[e.Kind][e.Target.String()] = true
	}
	pma, notice := len(kinds[outbox.KindPMA]), len(kinds[outbox.KindNotice])
	switch {
	case pma > 0 && notice > 0:
		c.fail("answered", "schedule run %s was delivered both as a result and as a restart notice", turn)
	case pma+notice == 0:
		c.fail("answered", "schedule run %s was delivered to no target", turn)
	case pma+notice < 2:
		c.fail("answered", "schedule run %s reached one of its two targets only", turn)
	}
	if notice > 0 {
		c.fig.ScheduleNotices++
	}
}

// checkLocal: each chunk the outbox delivered to the local target is in
// its file, once (the local sender does not write a line again).
func (c *checker) checkLocal() {
	seen := map[string]int{}
	for _, d := range c.o.Local {
		seen[d.OutboxID]++
	}
	for _, e := range c.o.Delivered {
		if e := c.entries[e.ID]; e.Target.String() == "local:"+scheduleLocal && seen[e.ID] == 0 {
			c.fail("delivered", "%s is delivered according to the outbox but not in %s", e.ID, scheduleLocal)
		}
	}
	for id, n := range seen {
		if n > 1 {
			c.fail("no duplicates", "%s was written %d times to %s", id, n, scheduleLocal)
		}
	}
}
