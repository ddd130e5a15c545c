package nodes

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// publishWait bounds one attempt to publish a call, an answer or a
// heartbeat: the wait for the stream's acknowledgement. A test makes it
// longer than a call's wait, to show that an attempt lost with its
// connection does not wait for it.
var publishWait = 5 * time.Second

// newJetStream is the jetstream context of the hub's or a node's
// connection: a publish it makes waits at most publishWait for its
// acknowledgement.
func newJetStream(nc *nats.Conn) (jetstream.JetStream, error) {
	return jetstream.New(nc, jetstream.WithPublishAsyncTimeout(publishWait))
}

// publishAcked publishes data to subject and waits for the stream to
// acknowledge it (or refuse it: a full stream's *jetstream.APIError), at
// most publishWait, or until ctx ends.
//
// A synchronous publish sent on a connection that breaks before its
// acknowledgement arrives (the server it was connected to killed) waits
// out its whole timeout, though the client is connected elsewhere a
// quarter of a second later: every call to or from that client stalled
// for it (docs/nodes.md, "Running on a NATS cluster"). The client fails
// every publish still waiting for its acknowledgement as soon as its
// connection breaks, so the caller's retry, with the same message id,
// goes out once the connection is back; if the first copy did reach the
// stream, the stream drops the second as a duplicate.
func publishAcked(ctx context.Context, js jetstream.JetStream, subject string, data []byte, opts ...jetstream.PublishOpt) error {
	paf, err := js.PublishAsync(subject, data, opts...)
	if err != nil {
		return err
	}
	select {
	case <-paf.Ok():
		return nil
	case err := <-paf.Err():
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
