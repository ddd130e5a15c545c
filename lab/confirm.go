package lab

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/a6afc2ce/hermes-hub/adapters/telegram/telegramtest"
)

// The held calls of a scenario with hub.confirm: the named command mark
// appends its parameter to confirm.log (proc.run, the parameter in one
// fixed place), and the admin role holds cmd.mark for confirmation.
const (
	confirmChat = -2980
	confirmFile = "confirm.log"
)

// ConfirmStep sends calls held for confirmation on Telegram and presses
// their buttons: calls pressed Run (twice, and once by someone else
// first), cancel pressed Cancel; with kill, the hub is killed with
// SIGKILL and started again between each prompt and its press.
type ConfirmStep struct {
	Calls  int  `yaml:"calls"`
	Cancel int  `yaml:"cancel"`
	Kill   bool `yaml:"kill"`
}

// ConfirmCall is one held call of a confirm step: its marker, the held
// call's id (from its buttons) and the button its asker pressed (run or
// cancel).
type ConfirmCall struct {
	Marker, ID, Pressed string
}

// confirmRole is the admin role's confirm line (hub.confirm).
func (w *world) confirmRole() string {
	if !w.sc.Hub.Confirm {
		return ""
	}
	return "      confirm: [\"cmd.mark\"]\n"
}

// commandsConfig is the commands section (hub.confirm).
func (w *world) commandsConfig() string {
	if !w.sc.Hub.Confirm {
		return ""
	}
	return fmt.Sprintf(`commands:
  mark:
    description: Append a marker to %[1]s
    params: {marker: {type: string, pattern: '[a-z0-9]{1,16}'}}
    run:
      verb: proc.run
      arguments: {executable: sh, arguments: ["-c", "echo \"$0\" >> %[1]s; echo marked", "{marker}"]}
`, confirmFile)
}

// confirm plays a confirm step.
func (w *world) confirm(st ConfirmStep) error {
	if !w.sc.Hub.Confirm {
		return fmt.Errorf("confirm: the scenario's hub has no confirm: true")
	}
	for i := 0; i < st.Calls+st.Cancel; i++ {
		pressed := "run"
		if i >= st.Calls {
			pressed = "cancel"
		}
		if err := w.confirmOne(pressed, st.Kill); err != nil {
			return fmt.Errorf("confirm %d: %w", i+1, err)
		}
	}
	return nil
}

// confirmOne sends one held call, waits for its prompt, optionally kills
// and restarts the hub, and presses its buttons.
func (w *world) confirmOne(pressed string, kill bool) error {
	w.mu.Lock()
	w.msgIDs[confirmChat]++
	msgID := w.msgIDs[confirmChat]
	w.mu.Unlock()
	chat := strconv.Itoa(confirmChat)
	t := w.newTurn(&Turn{Platform: "telegram", Source: "telegram:" + chat, Ordered: true, Target: "chat:telegram:" + chat,
		TurnID: "telegram." + chat + "." + strconv.Itoa(msgID), Action: "confirm-" + pressed, Identity: "telegram:" + strconv.Itoa(telegramUser), Sent: time.Now()})
	marker := strings.ReplaceAll(t.Marker, "mk", "cf")
	t.Marker, t.Text = marker, "/mark "+marker
	w.tgPush.Lock()
	id := telegramtest.NextUpdateID()
	w.mu.Lock()
	t.UpdateID = int64(id)
	w.byUpdate[int64(id)] = t
	w.byTurnID[t.TurnID] = t
	w.mu.Unlock()
	w.tg.Push(telegramtest.TextUpdate(id, confirmChat, telegramUser, msgID, t.Text))
	w.tgPush.Unlock()

	ctx, cancel := context.WithTimeout(w.ctx, 2*time.Minute)
	defer cancel()
	var prompt telegramtest.Message
	if err := w.until(ctx, "the prompt of "+t.TurnID, func() bool {
		for _, m := range w.tg.MessagesTo(chat) {
			if strings.Contains(m.Text, marker) && strings.Contains(m.ReplyMarkup, "cf:run:") {
				prompt = m
				return true
			}
		}
		return false
	}); err != nil {
		return err
	}
	_, held, _ := strings.Cut(prompt.ReplyMarkup, "cf:run:")
	held, _, _ = strings.Cut(held, `"`)
	w.mu.Lock()
	w.confirms = append(w.confirms, ConfirmCall{Marker: marker, ID: held, Pressed: pressed})
	w.mu.Unlock()
	if kill {
		if err := w.kill(KillStep{}); err != nil {
			return err
		}
		if err := w.start(StartStep{}); err != nil {
			return err
		}
	}
	// Someone else's press first, then the asker's (Run twice: one runs).
	w.press(prompt, "Cancel", telegramStranger)
	if pressed == "cancel" {
		w.press(prompt, "Cancel", telegramUser)
		w.press(prompt, "Run", telegramUser)
		return nil
	}
	w.press(prompt, "Run", telegramUser)
	w.press(prompt, "Run", telegramUser)
	return nil
}

// press queues a press of a button of m by user, in update order.
func (w *world) press(m telegramtest.Message, button string, user int64) {
	w.tgPush.Lock()
	defer w.tgPush.Unlock()
	w.tg.Press(m, button, user)
}

// checkConfirms: a held call whose asker pressed Run ran at most once
// (its marker at most once in confirm.log, however many presses and
// restarts), and exactly once when its run (the turn confirm.<id>) was
// answered with its result rather than the restart notice; one cancelled
// never ran.
func (c *checker) checkConfirms() {
	for _, cc := range c.o.Confirms {
		n := 0
		for _, line := range strings.Split(c.o.Files[confirmFile], "\n") {
			if strings.TrimSpace(line) == cc.Marker {
				n++
			}
		}
		switch {
		case cc.Pressed == "run" && n > 1:
			c.fail("confirmed once", "held call %s was confirmed but ran %d times", cc.Marker, n)
		case cc.Pressed == "run" && n == 0 && c.reportsResult(&Turn{TurnID: "confirm." + cc.ID}):
			c.fail("confirmed once", "held call %s was answered with its result but its marker is not in %s", cc.Marker, confirmFile)
		case cc.Pressed == "run" && n == 0:
			c.fig.ConfirmInterrupted++
		case cc.Pressed == "cancel" && n != 0:
			c.fail("confirmed once", "held call %s was cancelled but ran %d times", cc.Marker, n)
		case cc.Pressed == "run":
			c.fig.ConfirmRuns++
		default:
			c.fig.ConfirmCancels++
		}
	}
}
