package hub_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/hub"
	"github.com/a6afc2ce/hermes-hub/internal/testkit"
	"github.com/a6afc2ce/hermes-hub/outbox"
	"github.com/a6afc2ce/hermes-hub/store"
)

// TestRuntimePrunesTheLedger: a running hub forgets a finished turn once it
// is older than the outbox retention, on its hourly prune.
func TestRuntimePrunesTheLedger(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	e := newEnv(t, clk)
	msg := tgMsg(1, 41, "/fs.exists README.md")
	if _, err := e.rt.Hub.Handle(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	if r, _ := e.rt.Ledger.Get(msg.TurnID); r == nil || r.State != store.TurnDone {
		t.Fatalf("turn not recorded as done: %+v", r)
	}
	retention := e.rt.Config.Outbox.Retention.D()
	clk.Advance(retention - time.Hour)
	if r, _ := e.rt.Ledger.Get(msg.TurnID); r == nil {
		t.Fatal("forgotten before the retention")
	}
	clk.Advance(2 * time.Hour)
	if r, _ := e.rt.Ledger.Get(msg.TurnID); r != nil {
		t.Fatalf("still in the ledger %v after it finished: %+v", retention+time.Hour, r)
	}
}

// TestRuntimeCloseStopsAPrune: the ledger's prunes run with a context
// the runtime's Close ends, so a prune under way at Close (a large ledger)
// stops between two of its commits instead of holding the stop.
func TestRuntimeCloseStopsAPrune(t *testing.T) {
	e := newEnv(t, clock.NewFake(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)))
	ctx := hub.PruneContext(e.rt)
	if ctx.Err() != nil {
		t.Fatal("the prunes' context ended before Close")
	}
	if err := e.rt.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() == nil || hub.PruneContext(e.rt).Err() == nil {
		t.Fatal("Close left the prunes' context running")
	}
}

// TestTurnWritesShareHubDB: a turn's writes to hub.db all go through the
// state root's one group commit, and the turn is finished in the same
// write as its reply's enqueue: three writes per turn (begin; reply and
// finish; the delivered mark), not four.
func TestTurnWritesShareHubDB(t *testing.T) {
	e := newEnv(t, clock.NewFake(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)))
	ctx := context.Background()
	_, ops0 := e.he.State.Database().Commits()
	msg := tgMsg(1, 42, "/fs.exists README.md")
	res, err := e.rt.Hub.Handle(ctx, msg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Outbox) != 1 {
		t.Fatalf("reply ids %v, want one", res.Outbox)
	}
	r, _ := e.rt.Ledger.Get(msg.TurnID)
	if r == nil || r.State != store.TurnDone || !slices.Equal(r.Outbox, res.Outbox) {
		t.Fatalf("turn not recorded as done with its reply: %+v", r)
	}
	testkit.WaitFor(t, "the reply marked delivered", func() bool {
		en, err := e.rt.Outbox.Store().Get(ctx, res.Outbox[0])
		return err == nil && en.State == outbox.StateDelivered
	})
	// The committer counts a batch once its transaction has committed, a
	// moment after the mark is visible to readers.
	testkit.WaitFor(t, "the delivered mark counted", func() bool {
		_, ops1 := e.he.State.Database().Commits()
		return ops1-ops0 >= 3
	})
	if _, ops1 := e.he.State.Database().Commits(); ops1-ops0 != 3 {
		t.Errorf("%d writes through hub.db's group commit for one turn, want 3 (begin, reply with finish, delivered mark)", ops1-ops0)
	}
}
