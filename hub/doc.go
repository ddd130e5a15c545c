// Package hub is the router: it takes a normalised inbound message from an
// adapter through one turn (mirror, channel directory, turn ledger, access
// control, parse, execute, render, enqueue) and fans hub-level output out to
// the delivery targets. It knows the executor, the outbox and the store, and
// no platform's API.
package hub
