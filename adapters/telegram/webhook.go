package telegram

import (
	"context"
	"crypto/subtle"
	"io"
	"net/http"
	"sync"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/hub"
)

// SecretHeader carries the webhook's secret_token on every update Telegram
// posts.
const SecretHeader = "X-Telegram-Bot-Api-Secret-Token"

// maxUpdateBytes bounds one webhook body; a text message is far smaller.
const maxUpdateBytes = 1 << 20

// runWebhook registers the webhook (retrying while the API is down), then
// serves updates until ctx ends, and lets the turns in flight finish.
func (a *Adapter) runWebhook(ctx, turnCtx context.Context, cancelTurns context.CancelFunc) error {
	p := tgbotapi.Params{
		"url":             a.hookURL,
		"secret_token":    a.secret,
		"allowed_updates": allowedUpdates,
	}
	for attempt := 1; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		_, err := a.api.call(cctx, "setWebhook", p)
		cancel()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		d := retryBackoff.Delay(attempt)
		a.board(hub.StateDegraded, "setWebhook failed: "+err.Error())
		a.log.Warn("telegram: setWebhook failed; retrying", "err", err, "retry_in", d)
		if !clock.Sleep(ctx, a.clk, d) {
			return nil
		}
	}
	a.log.Info("telegram: webhook set", "url", a.hookURL)
	a.mu.Lock()
	a.turnCtx = turnCtx
	a.mu.Unlock()
	a.board(hub.StateRunning, "webhook")

	<-ctx.Done()
	a.mu.Lock()
	a.turnCtx = nil
	a.mu.Unlock()
	finished := make(chan struct{})
	go func() {
		a.inflight.Wait()
		close(finished)
	}()
	t := a.clk.AfterFunc(shutdownGrace, cancelTurns)
	<-finished
	t.Stop()
	return nil
}

// serveWebhook receives one update. The secret header is checked in
// constant time before anything else (wrong or missing: 401 and nothing is
// read). The answer is 200 once the hub has recorded the turn, 500 when it
// could not (Telegram posts the update again later), 503 while the adapter
// is not running.
func (a *Adapter) serveWebhook(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	got := r.Header.Get(SecretHeader)
	if subtle.ConstantTimeCompare([]byte(got), []byte(a.secret)) != 1 || a.secret == "" {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	a.mu.Lock()
	ctx := a.turnCtx
	if ctx != nil {
		a.inflight.Add(1)
	}
	a.mu.Unlock()
	if ctx == nil {
		w.Header().Set("Retry-After", "5")
		http.Error(w, "not running", http.StatusServiceUnavailable)
		return
	}
	defer a.inflight.Done()

	body, err := io.ReadAll(io.LimitReader(r.Body, maxUpdateBytes+1))
	if err != nil {
		http.Error(w, "could not read the update", http.StatusBadRequest)
		return
	}
	if len(body) > maxUpdateBytes {
		http.Error(w, "update too large", http.StatusRequestEntityTooLarge)
		return
	}
	u, err := decodeUpdate(body)
	if err != nil && u.ID == 0 {
		http.Error(w, "not a Telegram update", http.StatusBadRequest)
		return
	}
	if a.recent.has(u.ID) {
		a.log.Debug("telegram: repeated update ignored", "update_id", u.ID)
		w.WriteHeader(http.StatusOK)
		return
	}
	if u.CallbackQuery != nil {
		a.onCallback(ctx, u.CallbackQuery, func() {})
		a.recent.add(u.ID)
		w.WriteHeader(http.StatusOK)
		return
	}
	ev := a.norm.Load().normalize(u)
	if ev.migrate != nil {
		a.applyMigration(*ev.migrate)
	}
	if ev.in != nil {
		if _, err := a.turn(ctx, ev.in); err != nil {
			a.log.Error("telegram: the hub could not record a turn; Telegram will post the update again", "turn", ev.in.TurnID, "update_id", u.ID, "err", err)
			http.Error(w, "try again later", http.StatusInternalServerError)
			return
		}
	} else {
		a.log.Debug("telegram: update dropped", "update_id", u.ID, "why", ev.drop)
	}
	a.recent.add(u.ID)
	w.WriteHeader(http.StatusOK)
}

// recentIDs remembers the last n update ids handled, to answer Telegram's
// repeats of an update at once. The hub's turn ledger is what guarantees a
// turn never runs twice; this only saves the work.
type recentIDs struct {
	mu   sync.Mutex
	n    int
	ring []int64
	next int
	set  map[int64]bool
}

func newRecentIDs(n int) *recentIDs {
	return &recentIDs{n: n, ring: make([]int64, 0, n), set: map[int64]bool{}}
}

func (r *recentIDs) has(id int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.set[id]
}

func (r *recentIDs) add(id int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.set[id] {
		return
	}
	if len(r.ring) < r.n {
		r.ring = append(r.ring, id)
	} else {
		delete(r.set, r.ring[r.next])
		r.ring[r.next] = id
		r.next = (r.next + 1) % r.n
	}
	r.set[id] = true
}
