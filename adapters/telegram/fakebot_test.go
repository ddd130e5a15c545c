package telegram

import (
	"context"
	"testing"
	"time"

	"github.com/a6afc2ce/hermes-hub/adapters/telegram/telegramtest"
)

// newFakeBot starts a fake Bot API (telegramtest) that closes when the test
// ends.
func newFakeBot(t testing.TB) *telegramtest.Server {
	f := telegramtest.NewServer()
	t.Cleanup(f.Close)
	return f
}

// withTimeout is a context for one direct call in a test.
func withTimeout(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
