package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/internal/serial"
)

// Polling constants.
const (
	// maxConcurrentTurns bounds the turns running at once over all chats.
	maxConcurrentTurns = 8
	// idlePause spaces getUpdates calls that returned nothing new at once: a
	// server that does not long-poll, or a backlog whose oldest update is
	// still being handled (Telegram keeps returning it until the offset
	// passes it).
	idlePause = 500 * time.Millisecond
	// staleOffset is how old a stored offset may be before it is dropped:
	// after a week without updates Telegram may number the next update
	// below it. Without an offset Telegram returns every unconfirmed update.
	staleOffset = 6 * 24 * time.Hour
)

// offsetCursor is the cursor of a bot's getUpdates offset.
func offsetCursor(botID int64) string { return strconv.FormatInt(botID, 10) + ".offset" }

// savedOffset is the value of the offset cursor.
type savedOffset struct {
	Offset int64     `json:"offset"`
	At     time.Time `json:"at"` // when an update was last received
}

// poller is the long-polling loop. Updates are handed to the hub per chat in
// order, different chats concurrently; the offset sent to getUpdates (and
// stored in the ledger) is the watermark below which every update has been
// recorded by the hub or dropped, so a stop at any moment loses nothing and
// the hub's turn ledger makes sure nothing runs twice.
type poller struct {
	a      *Adapter
	cursor string

	mu       sync.Mutex
	offset   int64          // watermark: every update below it is done
	window   map[int64]bool // fetched updates at or above offset: done?
	maxSeen  int64
	lastAt   time.Time // when the last update arrived
	saved    savedOffset
	progress chan struct{} // a turn finished

	chats serial.Lanes // per chat: its messages' turns, in arrival order
	// presses are the button presses, per button (a held call's Run and
	// Cancel are one button): in update order, so that a Cancel pressed
	// before a Run is decided first; different buttons at once.
	presses serial.Lanes
	sem     chan struct{}
	wg      sync.WaitGroup // /cancel, besides the chats and the presses
}

type job struct {
	id int64
	in *chat.Inbound
}

func newPoller(a *Adapter, botID int64) *poller {
	return &poller{
		a: a, cursor: offsetCursor(botID),
		window:   map[int64]bool{},
		progress: make(chan struct{}, 1), sem: make(chan struct{}, maxConcurrentTurns),
	}
}

// load reads the stored offset; a stale or unreadable one is dropped.
func (p *poller) load() {
	v, err := p.a.cursors.Cursor(p.cursor)
	if err != nil {
		p.a.log.Error("telegram: read the stored getUpdates offset; starting from Telegram's unconfirmed updates", "err", err)
		return
	}
	if v == "" {
		return
	}
	var s savedOffset
	if err := json.Unmarshal([]byte(v), &s); err != nil || s.Offset < 0 {
		p.a.log.Warn("telegram: stored getUpdates offset is unreadable; starting from Telegram's unconfirmed updates", "cursor", p.cursor)
		return
	}
	p.saved = s
	if p.a.clk.Now().Sub(s.At) > staleOffset {
		p.a.log.Info("telegram: stored getUpdates offset is more than six days old; starting from Telegram's unconfirmed updates")
		return
	}
	p.offset, p.lastAt = s.Offset, s.At
	p.maxSeen = s.Offset - 1
}

// persist stores the watermark if it moved.
func (p *poller) persist() {
	p.mu.Lock()
	s := savedOffset{Offset: p.offset, At: p.lastAt.UTC()}
	same := s.Offset == p.saved.Offset && s.At.Equal(p.saved.At)
	p.mu.Unlock()
	if same {
		return
	}
	data, _ := json.Marshal(s)
	if err := p.a.cursors.SetCursor(p.cursor, string(data)); err != nil {
		// Not fatal: Telegram keeps what it has not been told to forget,
		// and the turn ledger answers repeats without running them.
		p.a.log.Error("telegram: store the getUpdates offset", "err", err)
		return
	}
	p.mu.Lock()
	p.saved = s
	p.mu.Unlock()
}

// requestOffset is the offset for the next getUpdates.
func (p *poller) requestOffset() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.offset != 0 && !p.lastAt.IsZero() && p.a.clk.Now().Sub(p.lastAt) > staleOffset {
		// A week without updates: the next update id may be anything.
		p.offset, p.maxSeen = 0, 0
		clear(p.window)
	}
	return p.offset
}

func (p *poller) run(ctx, turnCtx context.Context, cancelTurns context.CancelFunc) error {
	p.load()
	a := p.a
	timeout := a.cfg.PollTimeout.D()
	a.board(hub.StateRunning, "polling")
	failures := 0
	for ctx.Err() == nil {
		p.persist()
		off := p.requestOffset()
		started := a.clk.Now()
		updates, err := a.api.getUpdates(ctx, off, timeout)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			failures++
			d := retryBackoff.Delay(failures)
			a.board(hub.StateDegraded, "getUpdates failed: "+err.Error())
			a.log.Warn("telegram: getUpdates failed; retrying", "err", err, "retry_in", d, "failures", failures)
			var ae *APIError
			if errors.As(err, &ae) && ae.Code == http.StatusConflict && strings.Contains(strings.ToLower(ae.Description), "webhook") {
				a.deleteWebhook(ctx)
			}
			if !clock.Sleep(ctx, a.clk, d) {
				break
			}
			continue
		}
		if failures > 0 {
			failures = 0
			a.board(hub.StateRunning, "polling")
		}
		fresh := p.accept(ctx, turnCtx, updates)
		if fresh == 0 && (len(updates) > 0 || a.clk.Now().Sub(started) < timeout/2 || timeout == 0) {
			p.waitProgress(ctx)
		}
	}
	p.shutdown(cancelTurns)
	p.persist()
	return nil
}

// waitProgress waits for a turn to finish or idlePause, whichever is first.
func (p *poller) waitProgress(ctx context.Context) {
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-p.progress:
			cancel()
		case <-pctx.Done():
		}
	}()
	clock.Sleep(pctx, p.a.clk, idlePause)
}

// accept takes one getUpdates answer: repeats are skipped, the rest is
// normalised in order and queued per chat (or marked done when dropped).
// It returns how many updates were new.
func (p *poller) accept(ctx, turnCtx context.Context, updates []rawUpdate) int {
	norm := p.a.norm.Load()
	fresh := 0
	for _, u := range updates {
		p.mu.Lock()
		_, inWindow := p.window[u.ID]
		dup := u.ID < p.offset || inWindow
		if !dup {
			p.window[u.ID] = false
			p.maxSeen = max(p.maxSeen, u.ID)
			p.lastAt = p.a.clk.Now()
		}
		p.mu.Unlock()
		if dup {
			p.a.log.Debug("telegram: repeated update ignored", "update_id", u.ID)
			continue
		}
		fresh++
		if u.CallbackQuery != nil {
			id, cq := u.ID, u.CallbackQuery
			p.presses.Add(pressLane(cq.Data), func() bool {
				decided := make(chan struct{})
				p.wg.Add(1)
				go func() {
					defer p.wg.Done()
					p.a.onCallback(turnCtx, cq, func() { close(decided) })
					p.done(id)
				}()
				<-decided
				return true
			})
			continue
		}
		ev := norm.normalize(u)
		if ev.migrate != nil {
			p.a.applyMigration(*ev.migrate)
		}
		if ev.in == nil {
			p.a.log.Debug("telegram: update dropped", "update_id", u.ID, "why", ev.drop)
			p.done(u.ID)
			continue
		}
		if isCancel(ev.in) {
			// /cancel must not wait behind the turn it stops.
			p.wg.Add(1)
			go func(j job) {
				defer p.wg.Done()
				if p.handle(ctx, turnCtx, j) {
					p.done(j.id)
				}
			}(job{id: u.ID, in: ev.in})
			continue
		}
		p.enqueue(ctx, turnCtx, job{id: u.ID, in: ev.in})
	}
	return fresh
}

// enqueue queues a job behind the earlier ones of its chat. A job the hub
// fails to record is retried with backoff and holds back the chat (and the
// offset) until it succeeds or the adapter stops; jobs not started when the
// adapter stops stay below the watermark's reach: the next start fetches
// them again.
func (p *poller) enqueue(ctx, turnCtx context.Context, j job) {
	p.chats.Add(j.in.ChatID, func() bool {
		if ctx.Err() != nil || !p.handle(ctx, turnCtx, j) {
			return false
		}
		p.done(j.id)
		return true
	})
}

// handle runs one job until the hub has recorded it; false means the
// adapter stopped first.
func (p *poller) handle(ctx, turnCtx context.Context, j job) bool {
	for attempt := 1; ; attempt++ {
		select {
		case p.sem <- struct{}{}:
		case <-ctx.Done():
			return false
		}
		res, err := p.a.turn(turnCtx, j.in)
		<-p.sem
		if err == nil {
			p.a.log.Debug("telegram: turn handled", "turn", j.in.TurnID, "status", res.Status)
			return true
		}
		d := retryBackoff.Delay(attempt)
		p.a.board(hub.StateDegraded, fmt.Sprintf("the hub could not record turn %s", j.in.TurnID))
		p.a.log.Error("telegram: the hub could not record a turn; the update is kept and retried", "turn", j.in.TurnID, "update_id", j.id, "err", err, "retry_in", d)
		if !clock.Sleep(ctx, p.a.clk, d) {
			return false
		}
		p.a.board(hub.StateRunning, "polling")
	}
}

// done marks an update handled and moves the watermark: to the oldest
// update not yet done, or past the newest one seen.
func (p *poller) done(id int64) {
	p.mu.Lock()
	p.window[id] = true
	next := p.maxSeen + 1
	for uid, ok := range p.window {
		if !ok && uid < next {
			next = uid
		}
	}
	if next > p.offset {
		p.offset = next
		for uid := range p.window {
			if uid < next {
				delete(p.window, uid)
			}
		}
	}
	p.mu.Unlock()
	select {
	case p.progress <- struct{}{}:
	default:
	}
}

// shutdown waits for the chat workers: turns already running get
// shutdownGrace to finish before their context is cancelled.
func (p *poller) shutdown(cancelTurns context.CancelFunc) {
	finished := make(chan struct{})
	go func() {
		p.wg.Wait()
		p.presses.Wait()
		p.chats.Wait()
		close(finished)
	}()
	t := p.a.clk.AfterFunc(shutdownGrace, cancelTurns)
	<-finished
	t.Stop()
}
