package telegram

import (
	"github.com/a6afc2ce/hermes-hub/config"
	"github.com/a6afc2ce/hermes-hub/hub"
)

// Reloadable is the part of the configuration the adapter applies while it
// runs: the rates of telegram.rate, from the next message sent.
func (a *Adapter) Reloadable() hub.Reloadable {
	return hub.Reloadable{Name: "telegram rates", Keys: []string{"telegram.rate"}, Apply: func(cfg *config.Config) {
		r := cfg.Telegram.Rate
		a.lim.setLimits(Limits{PerChat: r.PerChat, PerChatBurst: r.PerChatBurst, PerGroupPerMinute: r.PerGroupPerMinute, GlobalPerSecond: r.GlobalPerSecond})
	}}
}

// setLimits replaces the limits; the pacing of each chat starts afresh
// under them, and slots already promised to a target are kept.
func (l *limiter) setLimits(lim Limits) {
	if l == nil {
		return
	}
	fresh := newLimiter(l.clk, lim)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.limits, l.global = fresh.limits, fresh.global
	l.chats, l.groups = fresh.chats, fresh.groups
}
