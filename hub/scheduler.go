package hub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/executor"
	"github.com/a6afc2ce/hermes-hub/outbox"
	"github.com/a6afc2ce/hermes-hub/store"
)

// maxTimerWait bounds how long the scheduler sleeps at once: it looks at
// the clock again at least this often, so a clock set forward or a machine
// that slept does not keep a schedule waiting.
const maxTimerWait = time.Hour

// missedLimit bounds how many missed times a start counts one by one.
const missedLimit = 1000

// Errors of RunNow: the runtime does not serve (the CLI's own, while no
// hub runs), no schedule has the name, the schedule is running.
var (
	ErrNotServing      = errors.New("no hub serves: a schedule runs in the running hub (start `hub serve`)")
	ErrNoSchedule      = errors.New("no schedule")
	ErrScheduleRunning = errors.New("is running")
)

// Scheduler runs the configured schedules (docs/chatops.md). It keeps a
// timer to each schedule's next time and runs it then as the schedule's
// turn (RunScheduled); each schedule's state in hub.db records the times
// accounted for before a run starts, so that no time runs twice, across
// restarts too, and a start applies the schedule's missed policy to the
// times that passed while the hub was down.
type Scheduler struct {
	h      *Hub
	states *store.Schedules
	clock  clock.Clock
	log    *slog.Logger

	mu      sync.Mutex
	entries map[string]*schedEntry
	started bool
	closed  bool
	ctx     context.Context // the runs' lifetime, from Start to Close
	cancel  context.CancelFunc
	runs    sync.WaitGroup
	gen     int // counts timers armed: a timer that is not its entry's latest does nothing
}

// schedEntry is one configured schedule.
type schedEntry struct {
	name    string
	cfg     config.Schedule
	timing  timing
	deliver []chat.Key
	next    time.Time
	timer   clock.Timer
	gen     int    // the scheduler's count when its timer was armed
	running string // the turn id of its run in progress, "" when none
}

// NewScheduler returns the scheduler of cfg's schedules over the hub h,
// with their states in states. It runs nothing until Start.
func NewScheduler(h *Hub, states *store.Schedules, cfg *config.Config, clk clock.Clock, log *slog.Logger) (*Scheduler, error) {
	if log == nil {
		log = slog.Default()
	}
	s := &Scheduler{h: h, states: states, clock: clk, log: log, entries: map[string]*schedEntry{}}
	for name, sc := range cfg.Schedules {
		e, err := newSchedEntry(name, sc)
		if err != nil {
			return nil, err
		}
		s.entries[name] = e
	}
	return s, nil
}

// newSchedEntry reads one schedule of a checked configuration.
func newSchedEntry(name string, sc config.Schedule) (*schedEntry, error) {
	tm, err := newTiming(sc)
	if err != nil {
		return nil, fmt.Errorf("schedules.%s: %w", name, err)
	}
	e := &schedEntry{name: name, cfg: sc, timing: tm}
	for _, t := range sc.Deliver {
		k, err := chat.ParseTarget(t)
		if err != nil {
			return nil, fmt.Errorf("schedules.%s.deliver: %w", name, err)
		}
		e.deliver = append(e.deliver, k.Normalized(""))
	}
	return e, nil
}

// Check refuses schedules a configuration accepts but this hub cannot
// run (CheckSchedules with the hub's verbs).
func (s *Scheduler) Check(cfg *config.Config) error { return CheckSchedules(cfg, s.h.x.Registry()) }

// CheckSchedules refuses the schedules of cfg that a hub with the verbs of
// reg cannot run: a verb it does not know, a local: target outside the
// state directory and outbox.local_roots.
func CheckSchedules(cfg *config.Config, reg *executor.Registry) error {
	var errs []error
	for _, name := range sortedNames(cfg.Schedules) {
		sc := cfg.Schedules[name]
		if _, ok := reg.Lookup(sc.Run.Verb); sc.Run.Verb != "" && !ok {
			errs = append(errs, fmt.Errorf("schedules.%s.run.verb: %s is not a verb of this hub (see hub verbs)", name, sc.Run.Verb))
		}
		for i, t := range sc.Deliver {
			k, err := chat.ParseTarget(t)
			if err == nil {
				err = outbox.CheckLocalTarget(cfg.StateDir, cfg.Outbox.LocalRoots, k)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("schedules.%s.deliver[%d]: %w", name, i, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Start applies each schedule's missed policy and arms its timer. A run
// its state left running is recorded interrupted (the turn ledger has
// told its targets). Call it once the outbox dispatches.
func (s *Scheduler) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.closed {
		return
	}
	s.started = true
	s.ctx, s.cancel = context.WithCancel(context.Background())
	now := s.clock.Now()
	for _, name := range sortedNames(s.entries) {
		s.startEntry(s.entries[name], now, true)
	}
}

// startEntry brings one schedule up at now: its state read (a new one
// accounts for nothing before now), the missed times found and, with
// applyMissed, treated by its policy; then its timer armed.
func (s *Scheduler) startEntry(e *schedEntry, now time.Time, applyMissed bool) {
	st, ok, err := s.states.Get(e.name)
	if err != nil {
		s.log.Error("schedule state unreadable: missed times are not looked for", "schedule", e.name, "err", err)
	}
	if !ok || err != nil {
		st = store.ScheduleState{Through: now}
	}
	if st.Last != nil && st.Last.Outcome == store.ScheduleRunning && e.running == "" {
		st.Last.Outcome, st.Last.Detail = store.ScheduleInterrupted, "the hub stopped during the run; it is not run again"
	}
	var latest time.Time
	if applyMissed {
		latest = s.missed(e, &st, now)
	}
	if now.After(st.Through) {
		st.Through = now
	}
	if err := s.states.Put(e.name, st); err != nil {
		s.log.Error("schedule state", "schedule", e.name, "err", err)
	}
	if !latest.IsZero() {
		s.fire(e, latest, false)
	}
	s.arm(e, e.timing.next(now))
}

// missed records in st the times of e in (st.Through, now], when there
// are any, and returns the one to run by e's policy (zero: none).
func (s *Scheduler) missed(e *schedEntry, st *store.ScheduleState, now time.Time) time.Time {
	n, first, last := e.timing.missed(st.Through, now, missedLimit)
	if n == 0 {
		return time.Time{}
	}
	st.Missed = &store.ScheduleMissed{Count: n, First: first, Last: last, Policy: e.cfg.Missed, Found: now}
	s.log.Warn("schedule: times missed while the hub was down", "schedule", e.name, "count", n, "first", first, "last", last, "missed", e.cfg.Missed)
	if e.cfg.Missed != config.MissedRunOnce {
		return time.Time{}
	}
	return last
}

// arm sets e's timer for its next time at.
func (s *Scheduler) arm(e *schedEntry, at time.Time) {
	if e.timer != nil {
		e.timer.Stop()
	}
	s.gen++
	e.gen = s.gen
	e.next, e.timer = at, nil
	if at.IsZero() {
		s.log.Warn("schedule: no time comes within five years", "schedule", e.name, "cron", e.cfg.Cron)
		return
	}
	wait := min(at.Sub(s.clock.Now()), maxTimerWait)
	gen := e.gen
	e.timer = s.clock.AfterFunc(wait, func() { s.wake(e.name, gen) })
}

// wake runs e's time when it has come, else sleeps again.
func (s *Scheduler) wake(name string, gen int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[name]
	if s.closed || e == nil || e.gen != gen {
		return
	}
	now := s.clock.Now()
	if now.Before(e.next) {
		s.arm(e, e.next)
		return
	}
	s.fire(e, e.next, false)
	s.arm(e, e.timing.next(now))
}

// fire starts the run of e for the time at (manual: asked for, at is
// now) and returns its turn id. Its state records the time, and the run
// as running, before anything runs: a run that cannot be recorded does
// not run. A run due while the previous one runs is skipped.
func (s *Scheduler) fire(e *schedEntry, at time.Time, manual bool) (string, error) {
	turnID := fmt.Sprintf("schedule.%s.%d", e.name, at.Unix())
	if manual {
		turnID = NewTurnID("schedule."+e.name+".manual", at)
	}
	st, _, err := s.states.Get(e.name)
	if err != nil {
		s.log.Error("schedule not run: its state is unreadable", "schedule", e.name, "turn", turnID, "err", err)
		return "", err
	}
	run := &store.ScheduleRun{TurnID: turnID, Scheduled: at, Manual: manual, Started: s.clock.Now(), Outcome: store.ScheduleRunning}
	if !manual && at.After(st.Through) {
		st.Through = at
	}
	if e.running != "" {
		run.Outcome, run.Finished = store.ScheduleSkipped, run.Started
		run.Detail = "the previous run (turn " + e.running + ") was still running"
	}
	st.Last = run
	if err := s.states.Put(e.name, st); err != nil {
		s.log.Error("schedule not run: its state cannot be recorded", "schedule", e.name, "turn", turnID, "err", err)
		return "", err
	}
	if run.Outcome == store.ScheduleSkipped {
		s.log.Warn("schedule: time skipped, the previous run is still running", "schedule", e.name, "turn", turnID, "running", e.running)
		return turnID, fmt.Errorf("schedule %s is running (turn %s)", e.name, e.running)
	}
	e.running = turnID
	call := s.call(e, turnID, at, manual)
	s.runs.Add(1)
	go func() {
		defer s.runs.Done()
		res, err := s.h.RunScheduled(s.ctx, call)
		s.finish(e.name, turnID, res, err)
	}()
	return turnID, nil
}

// call is the run of e for the time at.
func (s *Scheduler) call(e *schedEntry, turnID string, at time.Time, manual bool) ScheduledCall {
	r := e.cfg.Run
	args, _ := r.Arguments.JSON() // the configuration checked them
	return ScheduledCall{
		Schedule: e.name, TurnID: turnID, Identity: e.cfg.Identity,
		Verb: r.Verb, Arguments: args, Command: r.Command, Params: r.Params, Workspace: r.Workspace,
		Deliver: e.deliver, At: at.In(e.timing.loc), Manual: manual,
	}
}

// finish records the outcome of a run.
func (s *Scheduler) finish(name, turnID string, res *ScheduleResult, runErr error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.entries[name]; e != nil && e.running == turnID {
		e.running = ""
	}
	st, _, err := s.states.Get(name)
	if err != nil || st.Last == nil || st.Last.TurnID != turnID {
		st.Last = &store.ScheduleRun{TurnID: turnID}
	}
	st.Last.Finished = s.clock.Now()
	st.Last.Outcome, st.Last.Code, st.Last.Detail = runOutcome(res, runErr)
	if err := s.states.Put(name, st); err != nil {
		s.log.Error("schedule state", "schedule", name, "turn", turnID, "err", err)
	}
	if runErr != nil {
		s.log.Error("schedule run", "schedule", name, "turn", turnID, "err", runErr)
	}
}

// runOutcome is the outcome a run's state records.
func runOutcome(res *ScheduleResult, err error) (outcome, code, detail string) {
	switch {
	case err != nil:
		return store.ScheduleNotRun, "", err.Error()
	case res.Status == StatusDuplicate:
		return store.ScheduleNotRun, "", "this time has run before (turn " + res.TurnID + ")"
	case res.Status == StatusNotice:
		return store.ScheduleInterrupted, "", "a previous run of the hub died in this run; its targets were told"
	case res.Outcome == nil:
		return store.ScheduleFailed, "", ""
	case res.Outcome.Succeeded():
		return store.ScheduleSucceeded, "", ""
	case res.Status == StatusForbidden:
		return store.ScheduleForbidden, string(res.Outcome.Err.Code), res.Outcome.Err.Message
	}
	return store.ScheduleFailed, string(res.Outcome.Err.Code), res.Outcome.Err.Message
}

// RunNow runs the schedule name now, outside its times (hub schedules
// run), and returns the run's turn id. The run's outcome goes to the
// schedule's state (List) and its targets.
func (s *Scheduler) RunNow(name string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[name]
	switch {
	case e == nil:
		return "", fmt.Errorf("%w %q (configured: %s)", ErrNoSchedule, name, s.names())
	case !s.started || s.closed:
		return "", ErrNotServing
	case e.running != "":
		return "", fmt.Errorf("schedule %s %w (turn %s): wait for it to finish", name, ErrScheduleRunning, e.running)
	}
	return s.fire(e, s.clock.Now(), true)
}

// names lists the configured schedules for an error.
func (s *Scheduler) names() string {
	if len(s.entries) == 0 {
		return "none"
	}
	return strings.Join(sortedNames(s.entries), ", ")
}

// Replace installs the schedules of a reloaded configuration: a schedule
// removed stops (a run in progress finishes), one added starts from now
// (times before now are not missed), one changed takes its new settings
// and times from now. Runs in progress keep what they started with.
func (s *Scheduler) Replace(cfg *config.Config) error {
	fresh := map[string]*schedEntry{}
	for name, sc := range cfg.Schedules {
		e, err := newSchedEntry(name, sc)
		if err != nil {
			return err
		}
		fresh[name] = e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	for name, old := range s.entries {
		if _, keep := fresh[name]; !keep && old.timer != nil {
			old.timer.Stop()
		}
	}
	for name, e := range fresh {
		old := s.entries[name]
		if old != nil {
			if old.timer != nil {
				old.timer.Stop()
			}
			e.running = old.running
		}
		if s.started && !s.closed {
			s.startEntry(e, now, false)
		}
	}
	s.entries = fresh
	return nil
}

// Close stops the timers, cancels the runs in progress and waits for
// them (their outcomes are delivered) until ctx ends.
func (s *Scheduler) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	for _, e := range s.entries {
		if e.timer != nil {
			e.timer.Stop()
		}
	}
	if s.cancel != nil {
		s.cancel()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.runs.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("schedule runs did not finish: %w", ctx.Err())
	}
}

// ScheduleView is a schedule as `hub schedules list`, GET /api/schedules,
// the panel and `hub doctor` show it.
type ScheduleView struct {
	Name      string   `json:"name"`
	Cron      string   `json:"cron"`
	TimeZone  string   `json:"time_zone"`
	Verb      string   `json:"verb"`
	Workspace string   `json:"workspace,omitempty"`
	Identity  string   `json:"identity"`
	Roles     []string `json:"roles"`
	// Allowed says whether the identity's roles grant the verb now.
	Allowed bool     `json:"allowed"`
	Deliver []string `json:"deliver"`
	Missed  string   `json:"missed"`
	// Next is the next time it runs (zero: none within five years).
	Next time.Time `json:"next,omitzero"`
	// Last is the latest run, MissedRuns what the last start found
	// missed; Running the turn id of a run in progress.
	Last       *store.ScheduleRun    `json:"last,omitempty"`
	MissedRuns *store.ScheduleMissed `json:"missed_runs,omitempty"`
	Running    string                `json:"running,omitempty"`
}

// List shows every schedule, by name, with its next time (from now when
// the scheduler does not run) and its state.
func (s *Scheduler) List() ([]ScheduleView, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	acc := s.h.Access().Current()
	now := s.clock.Now()
	out := make([]ScheduleView, 0, len(s.entries))
	for _, name := range sortedNames(s.entries) {
		e := s.entries[name]
		v := e.view(acc, s.h.x.Registry())
		v.Next, v.Running = e.next, e.running
		if !s.started {
			v.Next = e.timing.next(now)
		}
		st, _, err := s.states.Get(name)
		if err != nil {
			return nil, err
		}
		v.Last, v.MissedRuns = st.Last, st.Missed
		out = append(out, v)
	}
	return out, nil
}

// view is e as its configuration and the access policy acc describe it,
// without its times and its state.
func (e *schedEntry) view(acc *Access, reg *executor.Registry) ScheduleView {
	v := ScheduleView{
		Name: e.name, Cron: e.cfg.Cron, TimeZone: e.cfg.TimeZone, Verb: e.cfg.Run.Verb, Workspace: e.cfg.Run.Workspace,
		Identity: e.cfg.Identity, Roles: acc.RolesOf([]string{e.cfg.Identity}), Deliver: []string{}, Missed: e.cfg.Missed,
	}
	info, known := reg.Lookup(e.cfg.Run.Verb)
	if !known {
		info = executor.Info{Name: e.cfg.Run.Verb}
	}
	v.Allowed = acc.grants(v.Roles, info)
	for _, k := range e.deliver {
		v.Deliver = append(v.Deliver, k.String())
	}
	return v
}

// ConfiguredSchedules shows the schedules of cfg as a hub with the verbs of
// reg would run them from now, before any state exists (hub doctor before
// the first start): with their next times, no last run.
func ConfiguredSchedules(cfg *config.Config, reg *executor.Registry, now time.Time) ([]ScheduleView, error) {
	acc := NewAccess(cfg.Access, reg)
	out := make([]ScheduleView, 0, len(cfg.Schedules))
	for _, name := range sortedNames(cfg.Schedules) {
		e, err := newSchedEntry(name, cfg.Schedules[name])
		if err != nil {
			return nil, err
		}
		v := e.view(acc, reg)
		v.Next = e.timing.next(now)
		out = append(out, v)
	}
	return out, nil
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
