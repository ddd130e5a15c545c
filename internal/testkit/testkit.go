// Package testkit holds the small pieces every package's tests share: a
// logger that writes nothing (unless asked to) and a bounded wait.
package testkit

import (
	"io"
	"log/slog"
	"os"
	"testing"
	"time"
)

// Wait bounds every wait in the tests. It guards against a hang; it is
// never a pass/fail threshold on speed.
const Wait = 30 * time.Second

// Discard is a logger for tests: it discards everything unless HUB_TEST_LOG
// is set, when it writes debug logs to stderr.
func Discard() *slog.Logger {
	if os.Getenv("HUB_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// WaitFor polls cond until it holds and fails the test after Wait.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Unavailable skips t because something the test needs is missing (a
// program, an npm package, a daemon), saying what; under CI=true, where the
// continuous integration installs every such part, it fails t instead.
func Unavailable(t testing.TB, reason string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("cannot run (CI=true provides every prerequisite): %s", reason)
	}
	t.Skip(reason)
}
