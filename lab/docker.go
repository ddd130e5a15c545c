package lab

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// boxCut is a box turn whose daemon was stopped under it, and what its
// answer must say.
type boxCut struct {
	turn   *Turn
	answer []string
}

// docker runs a docker step: the private daemon stopped (during a box
// turn) or started again.
func (w *world) docker(d DockerStep) error {
	if d.Start {
		w.opt.Docker.Start()
		w.mu.Lock()
		w.boxStarted = time.Now()
		w.mu.Unlock()
		w.logf("docker daemon started")
		return nil
	}
	var cut *Turn
	if d.During == "box" {
		if err := w.until(w.ctx, "a box turn running in its container", func() bool {
			cut = w.running("box-long", "box.log")
			return cut != nil
		}); err != nil {
			return err
		}
	}
	w.opt.Docker.Stop()
	w.logf("docker daemon stopped")
	if cut == nil || len(d.Answer) == 0 {
		return nil
	}
	w.mu.Lock()
	w.boxCut = append(w.boxCut, boxCut{turn: cut, answer: d.Answer})
	w.mu.Unlock()
	ctx, cancel := context.WithTimeout(w.ctx, 2*time.Minute)
	defer cancel()
	if err := w.until(ctx, fmt.Sprintf("the answer of %s carrying %q", cut.TurnID, d.Answer), func() bool { return len(w.boxAnswers(cut, d.Answer)) > 0 }); err != nil {
		return fmt.Errorf("%w (the chat received %q)", err, w.chatTexts(cut))
	}
	w.logf("%s answered: %q", cut.TurnID, w.boxAnswers(cut, d.Answer))
	return nil
}

// chatTexts are the texts of every message t's chat received.
func (w *world) chatTexts(t *Turn) []string {
	chat := strings.TrimPrefix(t.Target, "chat:telegram:")
	var out []string
	for _, m := range w.tg.Messages() {
		if m.ChatID == chat {
			out = append(out, m.Text)
		}
	}
	return out
}

// boxAnswers are the messages of t's chat that carry every string of
// answer.
func (w *world) boxAnswers(t *Turn, answer []string) []string {
	chat := strings.TrimPrefix(t.Target, "chat:telegram:")
	var out []string
	for _, m := range w.tg.Messages() {
		if m.ChatID != chat {
			continue
		}
		all := true
		for _, a := range answer {
			all = all && strings.Contains(m.Text, a)
		}
		if all {
			out = append(out, m.Text)
		}
	}
	return out
}

// checkDocker: a box turn cut by a daemon stop is answered with its clear
// error exactly once and did not finish; every box turn sent after the
// daemon started again ran and was answered with its marker.
func (w *world) checkDocker() []Violation {
	w.mu.Lock()
	cuts := append([]boxCut(nil), w.boxCut...)
	started := w.boxStarted
	var after []*Turn
	for _, t := range w.turns {
		if (t.Action == "box" || t.Action == "box-long") && !started.IsZero() && t.Sent.After(started) {
			after = append(after, t)
		}
	}
	w.mu.Unlock()
	var v []Violation
	for _, c := range cuts {
		if got := w.boxAnswers(c.turn, c.answer); len(got) != 1 {
			v = append(v, Violation{Invariant: "docker", Detail: fmt.Sprintf("%s: %d answers carry %q, want exactly 1: %q", c.turn.TurnID, len(got), c.answer, got)})
		}
		if w.answeredByFake(c.turn) {
			v = append(v, Violation{Invariant: "docker", Detail: fmt.Sprintf("%s finished although its daemon stopped under it", c.turn.TurnID)})
		}
	}
	for _, t := range after {
		if !w.answeredByFake(t) {
			v = append(v, Violation{Invariant: "docker", Detail: fmt.Sprintf("%s, sent after the daemon started again, was not answered with its marker %s", t.TurnID, t.Marker)})
		}
	}
	return v
}
