package nodes

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestPlacedWaitsForPeers: a stream or bucket a starting cluster cannot
// place yet ("no suitable peers for placement"), or a request it does not
// answer yet (timed out, no responders), is asked for again until it is
// placed; any other error, or the caller's context ending, ends the wait
// at once.
func TestPlacedWaitsForPeers(t *testing.T) {
	noPeers := &jetstream.APIError{Code: 400, ErrorCode: jsNoSuitablePeers, Description: "no suitable peers for placement, peer offline"}
	calls := 0
	v, err := whenReady(context.Background(), placementWait, func() (int, error) {
		if calls++; calls < 3 {
			return 0, noPeers
		}
		return 7, nil
	})
	if err != nil || v != 7 || calls != 3 {
		t.Fatalf("after two refusals: %d %v (%d calls)", v, err, calls)
	}
	// A cluster still electing its JetStream leader answers nothing: the
	// request times out, or finds no responder.
	for _, notYet := range []error{context.DeadlineExceeded, fmt.Errorf("create stream: %w", nats.ErrTimeout), nats.ErrNoResponders} {
		calls = 0
		v, err := whenReady(context.Background(), placementWait, func() (int, error) {
			if calls++; calls < 2 {
				return 0, notYet
			}
			return 8, nil
		})
		if err != nil || v != 8 || calls != 2 {
			t.Fatalf("after %v: %d %v (%d calls)", notYet, v, err, calls)
		}
	}
	refused := &jetstream.APIError{Code: 400, ErrorCode: 10058, Description: "stream name already in use with a different configuration"}
	calls = 0
	if _, err := whenReady(context.Background(), placementWait, func() (int, error) { calls++; return 0, refused }); !errors.Is(err, refused) || calls != 1 {
		t.Fatalf("a refusal: %v (%d calls)", err, calls)
	}
	other := errors.New("insufficient resources")
	calls = 0
	if _, err := whenReady(context.Background(), placementWait, func() (int, error) { calls++; return 0, other }); !errors.Is(err, other) || calls != 1 {
		t.Fatalf("another error: %v (%d calls)", err, calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls = 0
	if _, err := whenReady(ctx, placementWait, func() (int, error) { calls++; return 0, noPeers }); !errors.Is(err, noPeers) || calls != 1 {
		t.Fatalf("a context ended: %v (%d calls)", err, calls)
	}
	// A timeout of the caller's own context is not the cluster's.
	calls = 0
	if _, err := whenReady(ctx, placementWait, func() (int, error) { calls++; return 0, context.DeadlineExceeded }); !errors.Is(err, context.DeadlineExceeded) || calls != 1 {
		t.Fatalf("the caller's context ended: %v (%d calls)", err, calls)
	}
}
