package outbox

import (
	"context"
	"slices"
	"testing"

	"github.com/a6afc2ce/hermes-hub/chat"
)

// TestHeads: heads reads a target's first pending entries in queue order,
// no other target's, at most n of them and at most maxBytes of stored
// records, but always the first; the first equals Head's.
func TestHeads(t *testing.T) {
	s := newBolt(t)
	ctx := context.Background()
	web := entries(KindReply, "t", chat.WebKey, 10)
	other := entries(KindReply, "t", tg("1"), 3)
	if _, err := s.Enqueue(ctx, append(slices.Clone(other), web...)); err != nil {
		t.Fatal(err)
	}
	if err := s.Delivered(ctx, web[0].ID, Receipt{}, t0); err != nil {
		t.Fatal(err)
	}
	one, err := s.heads(ctx, "web", 1, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		target   string
		n, bytes int
		want     []Entry
	}{
		{"n bounds", "web", 4, 1 << 20, web[1:5]},
		{"the queue bounds", "web", 100, 1 << 20, web[1:]},
		{"another target", "chat:telegram:1", 100, 1 << 20, other},
		{"no queue", "chat:telegram:2", 100, 1 << 20, nil},
		{"bytes bound, the first always", "web", 100, 1, web[1:2]},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.heads(ctx, tc.target, tc.n, tc.bytes)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(idsOf(got), idsOf(tc.want)) {
				t.Fatalf("heads %q, want %q", idsOf(got), idsOf(tc.want))
			}
			for i, e := range got {
				if e.Text != tc.want[i].Text || e.State != StatePending {
					t.Fatalf("entry %d: %+v", i, e)
				}
			}
		})
	}
	h, ok, err := s.Head(ctx, "web")
	if err != nil || !ok || len(one) != 1 || h.ID != one[0].ID || h.Text != one[0].Text {
		t.Fatalf("Head %+v %v %v, heads %+v", h, ok, err, one)
	}
}
