package hub_test

import (
	"context"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/clock"
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
