package nodes

import (
	"context"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/a6afc2ce/hermes-hub/clock"
)

// A message the server hands to a client as the client's connection breaks
// (its server killed, the network cut) never reaches the client, and the
// server hands it out again only when its ack wait has passed: 30 s for a
// call (nats.ack_wait) and for a result. So after each reconnection the
// node resets the consumer of its queue, and the hub those of the nodes'
// results, to their acknowledgement floor: the server hands out again
// every message not acknowledged yet, the lost ones among them, at once.
// The other copies are ones the client holds or has handled; each side
// already takes a copy safely (a call is never run twice, a result is
// taken once), so a reset is safe at any time.
//
// The reset waits until the pulls sent before the break have expired
// (pullExpiry after the reconnection at the latest): the server keeps such
// a pull until it expires and still counts it as wanted (a node's pulls
// reach the hub's account through an import, whose route back closed with
// the connection), so a message it handed to one would be lost again
// (without the wait, TestCallLostWithItsConnection failed in about half
// its runs). A reset that fails (in a cluster's failover a consumer may
// have no leader for a few seconds) is tried again until it is done or the
// ack wait has passed, by when the server hands the lost messages out
// anyway.

// resetRetry is the wait between two attempts of a reset, and the margin
// handOutAgain adds to pullExpiry.
const resetRetry = 250 * time.Millisecond

// handOutAgain waits for the pulls sent before a reconnection to expire,
// then resets consumer of stream to its acknowledgement floor, trying
// again until it is done, ackWait has passed or ctx ends.
func handOutAgain(ctx context.Context, js jetstream.JetStream, clk clock.Clock, log *slog.Logger, stream, consumer string, ackWait time.Duration) {
	select {
	case <-ctx.Done():
		return
	case <-after(clk, pullExpiry+resetRetry):
	}
	giveUp := clk.Now().Add(ackWait)
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		r, err := js.ResetConsumer(cctx, stream, consumer)
		cancel()
		switch {
		case err == nil:
			var from uint64
			if r != nil {
				from = r.ResetSeq
			}
			log.Info("reconnected: what was handed out and not acknowledged is handed out again", "stream", stream, "from_sequence", from)
			return
		case ctx.Err() != nil:
			return
		case !clk.Now().Before(giveUp):
			log.Warn("reconnected: a consumer could not be reset; a message lost with the connection comes again after its ack wait", "stream", stream, "err", err.Error())
			return
		}
		log.Debug("reset a consumer after reconnecting", "stream", stream, "err", err.Error())
		select {
		case <-ctx.Done():
			return
		case <-after(clk, resetRetry):
		}
	}
}

// onEachReconnect runs reset each time reconnected is signalled (by the
// connection's reconnect handler), until ctx ends.
func onEachReconnect(ctx context.Context, reconnected <-chan struct{}, reset func()) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-reconnected:
		}
		reset()
	}
}

// signal wakes the one waiting on c, or leaves the signal for it.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
