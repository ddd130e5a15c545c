package web

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/a6afc2ce/hermes-hub/chat"
	"github.com/a6afc2ce/hermes-hub/outbox"
)

// TestWebSenderIsRecorded: the web target's delivery is the outbox's own
// record, so the outbox may take several of its chunks at once.
func TestWebSenderIsRecorded(t *testing.T) {
	e := newEnv(t, envConfig{noServer: true})
	if _, ok := e.srv.Sender().(outbox.RecordedSender); !ok {
		t.Fatal("the web sender is not an outbox.RecordedSender")
	}
}

// TestPanelShowsBatchedRepliesOnce: replies enqueued faster than they are
// marked (taken by the outbox in batches) show on the panel in queue order,
// each once, live and in the history, and again after a restart (rebuilt
// from the outbound mirror).
func TestPanelShowsBatchedRepliesOnce(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	e := newEnv(t, envConfig{workspace: ws, state: state})
	sse := e.openSSE("")
	var want []string
	ctx := context.Background()
	for turn := range 6 {
		turnID := fmt.Sprintf("web.b%d", turn)
		n := 100
		if turn%2 == 1 {
			n = 1
		}
		es := make([]outbox.Entry, n)
		for i := range es {
			es[i] = outbox.Entry{
				ID: outbox.ID(outbox.KindReply, turnID, chat.WebKey, i), Kind: outbox.KindReply, TurnID: turnID,
				Target: chat.WebKey, Index: i, Total: n, Text: fmt.Sprintf("%s chunk %d", turnID, i),
			}
			want = append(want, es[i].ID)
		}
		if _, err := e.rt.Outbox.Enqueue(ctx, es); err != nil {
			t.Fatal(err)
		}
	}
	replies := func(evs []Event) []string {
		var ids []string
		for _, ev := range evs {
			if ev.Type == EventReply {
				ids = append(ids, ev.OutboxID)
			}
		}
		return ids
	}
	var live []Event
	got := 0
	live = sse.until(func(ev Event) bool {
		if ev.Type == EventReply {
			got++
		}
		return got == len(want)
	})
	if ids := replies(live); !slices.Equal(ids, want) {
		t.Fatalf("live replies: %d, not the %d chunks in queue order once each:\n%q", len(ids), len(want), ids)
	}
	e.waitMirrored(want[len(want)-1])
	if ids := replies(e.historyEvents()); !slices.Equal(ids, want) {
		t.Fatalf("history: %d replies, not the %d chunks in queue order once each", len(ids), len(want))
	}
	for _, id := range want {
		got, err := e.rt.Outbox.Store().Get(ctx, id)
		if err != nil || got.State != outbox.StateDelivered {
			t.Fatalf("%s: %s, %v; want delivered", id, got.State, err)
		}
	}
	e.close()

	e2 := newEnv(t, envConfig{workspace: ws, state: state, noServer: false})
	if ids := replies(e2.historyEvents()); !slices.Equal(ids, want) {
		t.Fatalf("history after a restart: %d replies, not the %d chunks in queue order once each", len(ids), len(want))
	}
}
