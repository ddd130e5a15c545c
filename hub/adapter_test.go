package hub_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/clock"
	"github.com/a6afc2ce/hermes-hub/hub"
)

// TestStateBoardStates: adapter states are typed, and the status shows
// them as the same words as ever.
func TestStateBoardStates(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	b := &hub.StateBoard{Clock: clk}
	b.Reporter("telegram").Report(hub.StateDegraded, "getUpdates failed")
	clk.Advance(time.Minute)
	b.Reporter("telegram").Report(hub.StateDegraded, "getUpdates failed again")
	data, err := json.Marshal(b.All())
	if err != nil {
		t.Fatal(err)
	}
	if want := `[{"name":"telegram","state":"degraded","detail":"getUpdates failed again","since":"2026-01-02T03:04:05Z"}]`; string(data) != want {
		t.Errorf("status %s, want %s", data, want)
	}
	for s, want := range map[hub.State]string{hub.StateStarting: "starting", hub.StateRunning: "running", hub.StateDegraded: "degraded", hub.StateStopped: "stopped"} {
		if string(s) != want {
			t.Errorf("state %q, want %q", s, want)
		}
		if s.Ready() != (want == "running" || want == "degraded") {
			t.Errorf("%s.Ready() = %v", s, s.Ready())
		}
	}
}
