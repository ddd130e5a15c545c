package nodes

import (
	"context"
	"errors"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// TestPlacedWaitsForPeers: a stream or bucket a starting cluster cannot
// place yet ("no suitable peers for placement") is asked for again until
// it is placed; any other error ends the wait at once.
func TestPlacedWaitsForPeers(t *testing.T) {
	noPeers := &jetstream.APIError{Code: 400, ErrorCode: jsNoSuitablePeers, Description: "no suitable peers for placement, peer offline"}
	calls := 0
	v, err := placed(context.Background(), func() (int, error) {
		if calls++; calls < 3 {
			return 0, noPeers
		}
		return 7, nil
	})
	if err != nil || v != 7 || calls != 3 {
		t.Fatalf("after two refusals: %d %v (%d calls)", v, err, calls)
	}
	other := errors.New("insufficient resources")
	calls = 0
	if _, err := placed(context.Background(), func() (int, error) { calls++; return 0, other }); !errors.Is(err, other) || calls != 1 {
		t.Fatalf("another error: %v (%d calls)", err, calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls = 0
	if _, err := placed(ctx, func() (int, error) { calls++; return 0, noPeers }); !errors.Is(err, noPeers) || calls != 1 {
		t.Fatalf("a context ended: %v (%d calls)", err, calls)
	}
}
