package telegram

import (
	"context"
	"sync"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/a6afc2ce/hermes-hub/clock"
)

// typing shows "typing…" in a chat while a turn runs: first after
// typingAfter, then every typingEvery, until stop. sendChatAction is not a
// message, so it is not paced, and a failure (an emulator without the
// method, a blocked chat) is ignored.
type typing struct {
	a        *Adapter
	chatID   string
	threadID string

	mu      sync.Mutex
	stopped bool
	timer   clock.Timer
	wg      sync.WaitGroup
	ctx     context.Context
	cancel  context.CancelFunc
}

// startTyping arms the indicator for a chat and returns its stop function,
// which returns once no chat action is being sent any more.
func (a *Adapter) startTyping(chatID, threadID string) (stop func()) {
	a.typers.Add(1)
	t := &typing{a: a, chatID: a.mig.resolve(chatID), threadID: threadID}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.mu.Lock()
	t.timer = a.clk.AfterFunc(typingAfter, t.fire)
	t.mu.Unlock()
	return t.stop
}

func (t *typing) fire() {
	t.mu.Lock()
	if t.stopped {
		t.mu.Unlock()
		return
	}
	t.wg.Add(1)
	t.mu.Unlock()
	defer t.wg.Done()

	p := tgbotapi.Params{"chat_id": t.chatID, "action": "typing"}
	if t.threadID != "" {
		p["message_thread_id"] = t.threadID
	}
	ctx, cancel := context.WithTimeout(t.ctx, callTimeout)
	_, err := t.a.api.call(ctx, "sendChatAction", p)
	cancel()
	if err != nil && t.ctx.Err() == nil {
		t.a.log.Debug("telegram: sendChatAction failed", "chat", t.chatID, "err", err)
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.stopped {
		t.timer = t.a.clk.AfterFunc(typingEvery, t.fire)
	}
}

func (t *typing) stop() {
	t.mu.Lock()
	t.stopped = true
	if t.timer != nil {
		t.timer.Stop()
	}
	t.mu.Unlock()
	t.cancel()
	t.wg.Wait()
	t.a.typers.Add(-1)
}
