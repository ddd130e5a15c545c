//go:build !linux

package dockertest

import (
	"testing"

	"github.com/moby/moby/client"
)

// Daemon is a private Docker daemon; it runs on Linux only.
type Daemon struct{}

// StartDaemon skips t (or fails it under CI=true): a private daemon runs on
// Linux only.
func StartDaemon(t testing.TB) *Daemon {
	t.Helper()
	Unavailable(t, "a private Docker daemon runs on Linux only")
	return nil
}

// Host is the daemon's address.
func (d *Daemon) Host() string { return "" }

// Client is a client of the daemon.
func (d *Daemon) Client() *client.Client { return nil }

// Running reports whether the daemon runs.
func (d *Daemon) Running() bool { return false }

// Start starts the daemon again.
func (d *Daemon) Start() {}

// Stop stops the daemon.
func (d *Daemon) Stop() {}
