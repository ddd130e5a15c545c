package lab

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/a6afc2ce/hermes-hub/admin"
	"github.com/a6afc2ce/hermes-hub/outbox"
	"github.com/a6afc2ce/hermes-hub/store"
)

// statusView is the part of GET /api/status the lab reads.
type statusView struct {
	Outbox outbox.Stats `json:"outbox"`
}

// outboxState is the hub's outbox, read over the admin socket.
type outboxState struct {
	pending, delivered, dead []outbox.Entry
}

func (w *world) readOutbox(ctx context.Context) (outboxState, error) {
	var s outboxState
	for _, st := range []struct {
		state string
		into  *[]outbox.Entry
	}{{"pending", &s.pending}, {"delivered", &s.delivered}, {"dead", &s.dead}} {
		q := url.Values{"state": {st.state}, "limit": {strconv.Itoa(admin.MaxList)}}
		status, raw, err := w.admin.do(ctx, "GET", "/api/outbox?"+q.Encode(), nil, st.into)
		if err != nil {
			return s, fmt.Errorf("list %s outbox entries: %w", st.state, err)
		}
		if status != 200 {
			return s, fmt.Errorf("list %s outbox entries: %d %s", st.state, status, raw)
		}
		if len(*st.into) >= admin.MaxList {
			// The checks need every entry: a truncated list would pass them wrongly.
			return s, fmt.Errorf("list %s outbox entries: %d or more, the most one request returns", st.state, admin.MaxList)
		}
	}
	return s, nil
}

// markDelivered sets Delivered on the Telegram turns whose updates the fake
// handed out.
func (w *world) markDelivered() {
	ids := w.tg.Delivered()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		if t := w.byUpdate[id]; t != nil {
			t.Delivered = true
		}
	}
}

// expectedAnswers lists the delivered turns that must get an answer and
// have none in the outbox yet (Discord turns a kill may have swallowed, or
// that fell into a mirror fault, are not waited for).
func (w *world) unanswered(st outboxState) []string {
	answered := map[string]bool{}
	for _, list := range [][]outbox.Entry{st.delivered, st.dead} {
		for _, e := range list {
			if _, turn, _, _, err := outbox.ParseID(e.ID); err == nil {
				answered[turn] = true
			}
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, t := range w.turns {
		if !t.Delivered || t.Stranger || answered[t.TurnID] {
			continue
		}
		if t.Platform == "discord" && w.mayBeLost(t) {
			continue
		}
		out = append(out, t.TurnID)
	}
	return out
}

// mayBeLost: a Discord turn sent before a kill or during a mirror fault
// may never be answered; w.mu is held.
func (w *world) mayBeLost(t *Turn) bool {
	for _, k := range slices.Concat(w.kills, w.stops) {
		if !k.Before(t.Sent) {
			return true
		}
	}
	if w.filler != "" && !t.Sent.Before(w.fillFrom) {
		return true
	}
	for _, f := range w.mirrorFaults {
		if f.holds(t.Sent) {
			return true
		}
	}
	return false
}

// settle waits until the hub is quiet: nothing pending, every Telegram
// update confirmed, nothing new for quiet, and (when answers is set) every
// turn that must be answered answered. It gives up after limit.
func (w *world) settle(quiet, limit time.Duration, answers bool) error {
	if quiet <= 0 {
		quiet = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(w.ctx, limit)
	defer cancel()
	last, since := "", time.Now()
	why := ""
	lastLog := time.Now()
	for {
		var st statusView
		status, raw, err := w.admin.do(ctx, "GET", "/api/status", nil, &st)
		pending := int64(-1)
		sig := ""
		if err == nil && status == 200 {
			pending = 0
			for _, p := range slices.Sorted(maps.Keys(st.Outbox.Platforms)) {
				ps := st.Outbox.Platforms[p]
				pending += ps.Pending
				sig += fmt.Sprintf("%s:%d/%d/%d ", p, ps.Pending, ps.Delivered, ps.Dead)
			}
		} else {
			why = fmt.Sprintf("admin status: %v %d %s", err, status, raw)
		}
		sig += fmt.Sprintf("tg:%d/%d dc:%d web:%d", len(w.tg.Messages()), w.tg.Queued(), len(w.dc.Receipts()), w.web.count())
		if sig != last {
			last, since = sig, time.Now()
		}
		switch {
		case pending != 0:
			if pending > 0 {
				why = fmt.Sprintf("%d chunks pending (%s)", pending, sig)
			}
		case w.tg.Queued() > 0:
			why = fmt.Sprintf("%d Telegram updates not confirmed", w.tg.Queued())
		case time.Since(since) < quiet:
			why = "recent activity"
		case answers:
			w.markDelivered()
			ost, err := w.readOutbox(ctx)
			if err != nil {
				why = err.Error()
				break
			}
			if missing := w.unanswered(ost); len(missing) > 0 {
				why = fmt.Sprintf("%d turns unanswered, such as %s", len(missing), missing[0])
				break
			}
			return nil
		default:
			return nil
		}
		if time.Since(lastLog) > 5*time.Second {
			lastLog = time.Now()
			w.logf("settling: %s [%s]", why, sig)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the hub did not settle within %s: %s", limit, why)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// finish heals everything, sends the final turns, waits for the hub to
// settle, stops it and gathers the observation.
func (w *world) finish() (Observation, error) {
	var obs Observation
	if err := w.heal("all"); err != nil {
		return obs, err
	}
	if err := w.freeMirror(); err != nil {
		return obs, err
	}
	if err := w.healCluster(); err != nil {
		return obs, err
	}
	if err := w.healNodes(); err != nil {
		return obs, err
	}
	if err := w.waitTraffic(15 * time.Minute); err != nil {
		return obs, err
	}
	r := w.hub.current()
	if r == nil || r.exited() {
		if r != nil && !r.killed && r.err != nil {
			obs.Alive = fmt.Sprintf("hub run %d exited by itself (%v):\n%s", r.n, r.err, tail(r.log, 30))
		}
		return obs, errors.New("the scenario must end with the hub running (add a restart step)")
	}
	// The hub still answers: a final turn on every platform.
	for _, p := range []TrafficStep{{Platform: "telegram"}, {Platform: "discord"}, {Platform: "web"}} {
		s := &source{w: w, t: p, chat: 0, tgChat: probeChat, channel: w.dc.ChannelID}
		if err := s.send("whoami", true); err != nil {
			return obs, fmt.Errorf("final turn on %s: %w", p.Platform, err)
		}
	}
	if w.sentUploads() {
		// The next upload into up/ removes what saves cut short by a kill
		// left there (docs/uploads.md): checkUploads finds none.
		s := &source{w: w, t: TrafficStep{Platform: "web"}}
		if err := s.send("upload", true); err != nil {
			return obs, fmt.Errorf("final upload: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(w.ctx, time.Minute)
	defer cancel()
	if err := w.stopSchedules(ctx); err != nil {
		return obs, err
	}
	if err := w.settle(3*time.Second, w.opt.SettleTimeout, true); err != nil {
		w.logf("%v", err) // the checks say what is missing
	}
	st, err := w.readOutbox(ctx)
	if err != nil {
		return obs, err
	}
	if status, raw, err := w.admin.do(ctx, "GET", "/api/status", nil, nil); err != nil || status != 200 {
		obs.Alive = fmt.Sprintf("the admin API did not answer at the end: %v %d %s", err, status, raw)
	}
	if err := r.stop(20 * time.Second); err != nil {
		obs.Alive = fmt.Sprintf("the hub did not stop cleanly: %v\n%s", err, tail(r.log, 30))
	}
	w.stopNodes()
	w.markDelivered()

	obs.Pending, obs.Delivered, obs.Dead = st.pending, st.delivered, st.dead
	w.mu.Lock()
	for _, t := range w.turns {
		obs.Turns = append(obs.Turns, *t)
	}
	obs.Kills = append(obs.Kills, w.kills...)
	obs.Stops = append(obs.Stops, w.stops...)
	obs.Cuts = maps.Clone(w.cuts)
	obs.MirrorFaults = append(obs.MirrorFaults, w.mirrorFaults...)
	w.mu.Unlock()
	obs.Expect = w.sc.Expect
	flows, err := os.OpenRoot(w.flows)
	if err != nil {
		return obs, fmt.Errorf("read the mirrors: %w", err)
	}
	defer flows.Close()
	err = store.ReadMirror(flows, store.MirrorFilter{OnBadLine: func(path string, line int, err error) {
		w.logf("mirror %s:%d is not a record: %v", path, line, err)
	}}, func(rec store.MirrorRecord) error {
		if rec.Direction == store.DirectionInbound {
			obs.Inbound = append(obs.Inbound, rec)
		} else {
			obs.Outbound = append(obs.Outbound, rec)
		}
		return nil
	})
	if err != nil {
		return obs, fmt.Errorf("read the mirrors: %w", err)
	}
	obs.Schedule = w.sc.Hub.Schedule
	obs.Confirms = append([]ConfirmCall(nil), w.confirms...)
	if obs.Local, err = w.readLocal(); err != nil {
		return obs, err
	}
	obs.Telegram = w.tg.Messages()
	obs.Discord = w.dc.Receipts()
	obs.Web = w.web.snapshot()
	obs.Files = map[string]string{}
	ents, _ := os.ReadDir(w.ws)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".log") || strings.HasPrefix(e.Name(), "log-") {
			data, _ := os.ReadFile(filepath.Join(w.ws, e.Name()))
			obs.Files[e.Name()] = string(data)
		}
	}
	obs.Uploads = readUploads(w.ws)
	for _, run := range w.hub.allRuns() {
		data, _ := os.ReadFile(run.log)
		obs.HubLogs = append(obs.HubLogs, string(data))
	}
	w.logf("observed %d turns, %d delivered / %d dead / %d pending chunks, %d inbound and %d outbound mirror records, %s",
		len(obs.Turns), len(obs.Delivered), len(obs.Dead), len(obs.Pending), len(obs.Inbound), len(obs.Outbound),
		"hub runs "+strconv.Itoa(len(obs.HubLogs)))
	return obs, nil
}
